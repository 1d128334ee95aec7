"""Each ranking is computed once per session: hybrids and factories read their sources' stored rankings."""
from __future__ import annotations

import pytest
from projects import QUESTIONS, RUN, read_results, write_project

ROUTER = '''
def make(ctx):
    hybrid = ctx.retriever("hybrid")
    table = ctx.retriever("table")

    def retrieve(query, k):
        table(query, 2)  # a shallower look at a source the hybrid already read: no new call
        return list(hybrid(query, k))

    return retrieve
'''

RETRIEVERS = """
[tool.ragretrieval.retrievers.table]
type = "python"
factory = "table_retriever:make"

[tool.ragretrieval.retrievers.bm25]
type = "bm25"

[tool.ragretrieval.retrievers.hybrid]
type = "hybrid"
sources = ["table", "bm25"]
depth = 6

[tool.ragretrieval.retrievers.router]
type = "python"
factory = "router:make"
sources = ["hybrid", "table"]
"""


@pytest.mark.parametrize("selected", [(), ("-k", "router"), ("-k", "hybrid or router")])
def test_each_source_runs_once_per_question(pytester: pytest.Pytester, selected: tuple[str, ...]) -> None:
    write_project(pytester.path, retrievers=RETRIEVERS)
    (pytester.path / "router.py").write_text(ROUTER, encoding="utf-8")
    result = pytester.runpytest("--rag-eval", "--rag-json", "results.json", *selected, *RUN)
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
    calls = (pytester.path / "calls.txt").read_text(encoding="utf-8").splitlines()
    assert sorted(calls) == sorted(q["query"] for q in QUESTIONS)
    results = read_results(pytester.path / "results.json")
    assert "router" in results["retrievers"]


def test_a_consumer_reports_its_sources_time_in_its_latency(pytester: pytest.Pytester) -> None:
    write_project(pytester.path, retrievers=RETRIEVERS)
    (pytester.path / "router.py").write_text(ROUTER, encoding="utf-8")
    pytester.runpytest("--rag-eval", "--rag-json", "results.json", *RUN)
    latency = {name: entry["latency_ms"]["p95"] for name, entry in read_results(pytester.path / "results.json")["retrievers"].items()}
    assert latency["router"] >= latency["hybrid"] >= max(latency["table"], latency["bm25"]) > 0
