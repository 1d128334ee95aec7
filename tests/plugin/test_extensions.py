"""Each plug-in point takes a new member as one module plus one registry line: a toy of each, run through the gate."""
from __future__ import annotations

import importlib
import json

import pytest
from projects import GOLD, QUERIES, write_project

from pytest_ragretrieval.report import formats
from pytest_ragretrieval.report.formats import FileFormat
from pytest_ragretrieval.retrievers import TYPES
from pytest_ragretrieval.scoring.metrics import METRICS, Metric

RUN = ("-p", "no:cacheprovider")

TOY_TYPE = '''
"""A retriever type: the gold ranking read from a file, reversed when `reverse = true`."""
import json
from pathlib import Path


def parse(table):
    return {"path": table.text("path"), "reverse": table.raw("reverse", False)}


def sources(params):
    return []


def build(params, ctx):
    by_query = json.loads((ctx.root / params["path"]).read_text(encoding="utf-8"))
    def retrieve(query, k):
        ranking = by_query.get(query, [])
        return (ranking[::-1] if params["reverse"] else ranking)[:k]
    return retrieve


def fingerprint(params, setup):
    return {}


def details(params):
    return {"source file": params["path"]}
'''

TOY_FORMAT = '''
"""A report format: one CSV row per retriever and metric."""


def render(data):
    rows = ["retriever,metric,value"]
    for view in data.retrievers:
        rows += [f"{view.name},{label},{value:.6f}" for label, value in sorted(view.metrics.items())]
    return "\\n".join(rows) + "\\n"
'''


def first_hit(ranking, relevance, k):  # type: ignore[no-untyped-def]
    """A metric: 1 when the top result is relevant."""
    return 1.0 if ranking[:1] and relevance.get(ranking[0], 0) >= 1 else 0.0


@pytest.fixture
def toys(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makepyfile(toy_type=TOY_TYPE, toy_csv=TOY_FORMAT)
    monkeypatch.syspath_prepend(str(pytester.path))
    monkeypatch.setitem(TYPES, "toy", importlib.import_module("toy_type"))
    monkeypatch.setitem(METRICS, "first_hit", Metric("first_hit", first_hit, "1 if the first result is relevant"))
    toy = FileFormat("csv", "--rag-csv", "rag_csv", "write the metrics as CSV to PATH", "toy_csv")
    monkeypatch.setattr(formats, "FORMATS", (*formats.FORMATS, toy))
    (pytester.path / "gold.json").write_text(json.dumps({QUERIES[q]: r for q, r in GOLD.items()}), encoding="utf-8")
    retrievers = '[tool.ragretrieval.retrievers.mine]\ntype = "toy"\npath = "gold.json"\n'
    write_project(pytester.path, retrievers=retrievers, settings='metrics = ["first_hit", "ndcg"]')
    return pytester


def test_a_toy_type_metric_and_format_run_through_the_gate(toys: pytest.Pytester) -> None:
    assert toys.runpytest("--rag-update-baseline", *RUN).ret == 0
    result = toys.runpytest("--rag-eval", "--rag-csv", "metrics.csv", *RUN)
    result.assert_outcomes(passed=2)
    assert (toys.path / "metrics.csv").read_text(encoding="utf-8") == (
        "retriever,metric,value\nmine,first_hit@3,1.000000\nmine,ndcg@3,1.000000\n"
    )
    recorded = json.loads((toys.path / "baselines" / "retrieval.json").read_text(encoding="utf-8"))
    assert recorded["fingerprint"]["retrievers"]["mine"] == {"type": "toy", "path": "gold.json", "reverse": False}


def test_the_toy_type_is_judged_like_any_other(toys: pytest.Pytester) -> None:
    assert toys.runpytest("--rag-update-baseline", *RUN).ret == 0
    pyproject = toys.path / "pyproject.toml"
    pyproject.write_text(pyproject.read_text(encoding="utf-8").replace('path = "gold.json"', 'path = "gold.json"\nreverse = true'))
    result = toys.runpytest("--rag-eval", *RUN)
    result.assert_outcomes(passed=1, failed=1)  # first_hit holds (q03's two gold chunks swap), ndcg falls
    result.stdout.fnmatch_lines(["*ndcg@3 of 'mine' fell from 1.0000 to * after a change of mine.reverse false -> true*",
                                 "compared across changes: mine.reverse false -> true"])
