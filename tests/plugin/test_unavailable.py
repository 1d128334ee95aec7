"""A retriever that cannot run where the baseline is recorded: skipped, remembered, never a false pass."""
from __future__ import annotations

import json

import pytest
from projects import baseline, write_project

RUN = ("-p", "no:cacheprovider")
FLAKY = '''
from pathlib import Path
from pytest_ragretrieval.errors import RetrieverUnavailable


def make(ctx):
    if (Path(__file__).parent / "offline").exists():
        raise RetrieverUnavailable("model 'acme/reranker' is not available here")
    return lambda query, k: ["travel-001"][:k]
'''
RETRIEVERS = """
[tool.ragretrieval.retrievers.bm25]
type = "bm25"

[tool.ragretrieval.retrievers.remote]
type = "python"
factory = "remote:make"
"""


@pytest.fixture
def recorded_offline(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(remote=FLAKY)
    write_project(pytester.path, retrievers=RETRIEVERS)
    (pytester.path / "offline").touch()
    result = pytester.runpytest("--rag-update-baseline", *RUN)
    result.assert_outcomes(passed=4, skipped=4)
    result.stdout.fnmatch_lines(["rag: remote recorded as unavailable: model 'acme/reranker' is not available here"])
    return pytester


def test_the_baseline_remembers_why_it_could_not_run(recorded_offline: pytest.Pytester) -> None:
    doc = baseline(recorded_offline.path)
    assert doc["unavailable"] == {"remote": "model 'acme/reranker' is not available here"}
    assert list(doc["retrievers"]) == ["bm25"]


def test_where_it_runs_its_items_are_skipped_until_recorded(recorded_offline: pytest.Pytester) -> None:
    (recorded_offline.path / "offline").unlink()
    result = recorded_offline.runpytest("--rag-eval", "-rs", *RUN)
    result.assert_outcomes(passed=4, skipped=4)
    result.stdout.fnmatch_lines(
        ["SKIPPED * remote has no baseline value: it could not run where the baseline was recorded (model*"]
    )
    recorded_offline.runpytest("--rag-update-baseline", "-k", "remote", *RUN).assert_outcomes(passed=4)
    assert "unavailable" not in baseline(recorded_offline.path)
    recorded_offline.runpytest("--rag-eval", *RUN).assert_outcomes(passed=8)


def test_an_update_that_does_not_select_it_keeps_the_record(recorded_offline: pytest.Pytester) -> None:
    recorded_offline.runpytest("--rag-update-baseline", "-k", "bm25", *RUN).assert_outcomes(passed=4)
    assert baseline(recorded_offline.path)["unavailable"] == {"remote": "model 'acme/reranker' is not available here"}


def test_results_name_the_retrievers_that_could_not_run(recorded_offline: pytest.Pytester) -> None:
    recorded_offline.runpytest("--rag-eval", "--rag-json", "results.json", *RUN).assert_outcomes(passed=4, skipped=4)
    results = json.loads((recorded_offline.path / "results.json").read_text(encoding="utf-8"))
    assert results["unavailable"] == {"remote": "model 'acme/reranker' is not available here"}
    assert list(results["retrievers"]) == ["bm25"] and results["failures"] == []
