"""Other distributions extend the four plug-in points through entry points: a toy distribution, installed
as pip would lay it out (a dist-info with entry_points.txt on the path of a run in a subprocess), adds
a retriever type, an embedder, a metric and a report format, and the gate runs them like its own."""
from __future__ import annotations

import json
from fnmatch import fnmatchcase

import pytest
from projects import GOLD, QUERIES, RUN, baseline, one_line_error, retriever, write_distribution, write_project

TOY_TYPE = '''
"""A retriever type: the gold ranking read from a file, reversed when `reverse = true`."""
import json


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

TOY_METRIC = '''
"""A metric: 1 when the top result is relevant."""
from pytest_ragretrieval.scoring.metrics import Metric


def first_hit(ranking, relevance, k):
    return 1.0 if ranking[:1] and relevance.get(ranking[0], 0) >= 1 else 0.0


FIRST_HIT = Metric("first_hit", first_hit, "1 if the first result is relevant")
'''

TOY_FORMAT = '''
"""A report format: one CSV row per retriever and metric."""
from pytest_ragretrieval.report.formats import FileFormat

CSV = FileFormat("csv", "--rag-csv", "rag_csv", "write the metrics as CSV to PATH", __name__)


def render(data):
    rows = ["retriever,metric,value"]
    for view in data.retrievers:
        rows += [f"{view.name},{label},{value:.6f}" for label, value in sorted(view.metrics.items())]
    return "\\n".join(rows) + "\\n"
'''

TOY_EMBEDDER = '''
"""An embedder: `counts:CHARS` counts each of CHARS in a text (plus one, so no vector is zero)."""
import numpy as np

from pytest_ragretrieval.embedding import EmbedderKind
from pytest_ragretrieval.embedding.prompts import Prompts

COUNTS = EmbedderKind(__name__, prompts=False)


class Counts:
    def __init__(self, chars):
        self.chars = chars
        self.id = f"counts:{chars}"
        self.prompts = Prompts()

    def embed(self, texts, side="passage"):
        return np.array([[text.count(ch) + 1.0 for ch in self.chars] for text in texts], dtype=np.float32)


def make(model, settings):
    return Counts(model)
'''

NEAREST = '''
"""A factory ranking chunks by the dot product of the configured embedder's vectors, ties by id."""


def make(ctx):
    ids = [chunk.id for chunk in ctx.chunks]
    vectors = ctx.embed([chunk.text for chunk in ctx.chunks], side="passage")

    def retrieve(query, k):
        scores = vectors @ ctx.embed([query])[0]
        return [ids[i] for i in sorted(range(len(ids)), key=lambda i: (-scores[i], ids[i]))][:k]

    return retrieve
'''

ENTRY_POINTS = {
    "pytest_ragretrieval.retrievers": {"toy": "toy_rag.retriever"},
    "pytest_ragretrieval.embedders": {"counts": "toy_rag.embedder:COUNTS"},
    "pytest_ragretrieval.metrics": {"first_hit": "toy_rag.metric:FIRST_HIT"},
    "pytest_ragretrieval.formats": {"csv": "toy_rag.csv:CSV"},
}
MODULES = {
    "toy_rag/__init__.py": "", "toy_rag/retriever.py": TOY_TYPE, "toy_rag/metric.py": TOY_METRIC,
    "toy_rag/csv.py": TOY_FORMAT, "toy_rag/embedder.py": TOY_EMBEDDER,
}


def install(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, entry_points: dict[str, dict[str, str]]) -> None:
    """The toy distribution, installed for the runs in a subprocess (they read entry points afresh)."""
    site = write_distribution(pytester.path / "site", "toy-rag", entry_points, MODULES)
    monkeypatch.setenv("PYTHONPATH", str(site))


@pytest.fixture
def toys(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    install(pytester, monkeypatch, ENTRY_POINTS)
    pytester.makepyfile(nearest=NEAREST)
    (pytester.path / "gold.json").write_text(json.dumps({QUERIES[q]: r for q, r in GOLD.items()}), encoding="utf-8")
    retrievers = retriever("mine", "toy", path="gold.json") + retriever("near", "python", factory="nearest:make")
    write_project(pytester.path, retrievers=retrievers, settings='metrics = ["first_hit", "ndcg"]\nembedding = "counts:住退"')
    return pytester


def test_a_toy_type_embedder_metric_and_format_run_through_the_gate(toys: pytest.Pytester) -> None:
    assert toys.runpytest_subprocess("--rag-update-baseline", *RUN).ret == 0
    result = toys.runpytest_subprocess("--rag-eval", "--rag-csv", "metrics.csv", *RUN)
    result.assert_outcomes(passed=4)
    rows = (toys.path / "metrics.csv").read_text(encoding="utf-8").splitlines()
    assert rows[:4] == ["retriever,metric,value", "mine,first_hit@3,1.000000", "mine,judged@3,1.000000",
                        "mine,ndcg@3,1.000000"]  # judged@k is shown beside the listed metrics (gold rankings: all judged)
    recorded = baseline(toys.path)
    assert recorded["fingerprint"]["retrievers"]["mine"] == {"type": "toy", "path": "gold.json", "reverse": False}
    assert recorded["fingerprint"]["retrievers"]["near"]["embedding"] == "counts:住退"
    # 退款多久到账 counts (住 0, 退 1) + 1 = (1, 2); refund-002 holds 退 twice: (1, 3) scores 7, the most.
    assert recorded["retrievers"]["near"]["questions"]["q05"]["ranking"][0] == "refund-002"


def test_the_toy_type_is_judged_like_any_other(toys: pytest.Pytester) -> None:
    assert toys.runpytest_subprocess("--rag-update-baseline", *RUN).ret == 0
    pyproject = toys.path / "pyproject.toml"
    pyproject.write_text(pyproject.read_text(encoding="utf-8").replace('path = "gold.json"', 'path = "gold.json"\nreverse = true'))
    result = toys.runpytest_subprocess("--rag-eval", *RUN)
    result.assert_outcomes(passed=3, failed=1)  # mine's first_hit holds (q03's two gold chunks swap), ndcg falls
    result.stdout.fnmatch_lines(["*ndcg@3 of 'mine' fell from 1.0000 to * after a change of mine.reverse",
                                 "compared across changes: mine.reverse false -> true"])


@pytest.mark.parametrize(("group", "entry", "value", "problem"), [
    ("metrics", "first_hit", "toy_rag.absent:FIRST_HIT",
     "cannot be loaded (ModuleNotFoundError: No module named 'toy_rag.absent'*); fix it or uninstall toy-rag"),
    ("formats", "csv", "toy_rag.metric:FIRST_HIT",
     "is a Metric, not a FileFormat (pytest_ragretrieval.report.formats); fix it or uninstall toy-rag"),
    ("retrievers", "bm25", "toy_rag.retriever",
     "the name 'bm25' is pytest-ragretrieval's already; rename the entry point or uninstall toy-rag"),
])
def test_a_bad_entry_point_fails_the_gate_in_one_line_naming_it_and_not_other_runs(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, group: str, entry: str, value: str, problem: str
) -> None:
    install(pytester, monkeypatch, {f"pytest_ragretrieval.{group}": {entry: value}})
    write_project(pytester.path)
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    line = one_line_error(pytester.runpytest_subprocess("--rag-eval", *RUN))
    expected = f"ERROR: entry point {entry} = {value} (group pytest_ragretrieval.{group}) of toy-rag 1.0: {problem}"
    assert fnmatchcase(line, expected), line
    pytester.runpytest_subprocess(*RUN).assert_outcomes(passed=1)
