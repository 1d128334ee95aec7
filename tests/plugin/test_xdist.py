"""Under pytest-xdist the controller runs and judges the gate while the workers start; they report its verdicts."""
from __future__ import annotations

import json

import pytest
from projects import GOLD, QUESTIONS, RUN, baseline, retriever, set_rankings, write_project

pytest.importorskip("xdist")

HYBRID = (
    retriever("table", "python", factory="table_retriever:make") + retriever("bm25", "bm25")
    + retriever("hybrid", "hybrid", sources=["table", "bm25"])
)


def test_the_workers_report_the_controllers_verdicts(pytester: pytest.Pytester) -> None:
    write_project(pytester.path)
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    set_rankings(pytester.path, dict(GOLD, q01=[]))
    result = pytester.runpytest_subprocess("--rag-eval", "-n", "2", "-rf", *RUN)
    result.assert_outcomes(passed=4, failed=4)
    result.stdout.fnmatch_lines([
        "*= rag retrieval =*",  # the table is printed: the controller holds the runs
        "table*0.8000*",
        "FAILED rag::table::recall@3 - recall@3 of 'table' fell from 1.0000 to 0.8000*",
    ])


@pytest.mark.parametrize("dist", [(), ("--dist", "load"), ("--dist", "loadscope"), ("--dist", "worksteal"),
                                  ("--dist", "each")])
def test_every_retriever_runs_once_whatever_the_distribution(pytester: pytest.Pytester, dist: tuple[str, ...]) -> None:
    """Without the controller judging, table's items and hybrid's would land on both workers, each running table."""
    write_project(pytester.path, retrievers=HYBRID)
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    (pytester.path / "calls.txt").unlink()
    result = pytester.runpytest_subprocess("--rag-eval", "-n", "2", *dist, *RUN)
    result.assert_outcomes(passed=24 if dist == ("--dist", "each") else 12)
    calls = (pytester.path / "calls.txt").read_text(encoding="utf-8").splitlines()
    assert sorted(calls) == sorted(q["query"] for q in QUESTIONS)


def test_k_and_m_select_on_the_controller_too(pytester: pytest.Pytester) -> None:
    """Only what the selected items need runs: bm25's items need no table."""
    write_project(pytester.path, retrievers=HYBRID)
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    (pytester.path / "calls.txt").unlink()
    result = pytester.runpytest_subprocess("--rag-eval", "-n", "2", "-k", "bm25 and ndcg", "-m", "rag_eval", *RUN)
    result.assert_outcomes(passed=1)
    assert not (pytester.path / "calls.txt").exists()
    assert "deselected" in result.stdout.str()


def test_files_are_written_by_the_controller(pytester: pytest.Pytester) -> None:
    """With the runs in the controller, --rag-json, the reports and --rag-update-baseline work under -n."""
    write_project(pytester.path)
    assert pytester.runpytest_subprocess("--rag-update-baseline", "-n", "2", *RUN).ret == 0
    recorded = baseline(pytester.path)
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    assert baseline(pytester.path) == recorded, "the same baseline as without -n"
    result = pytester.runpytest_subprocess("--rag-eval", "-n", "2", "--rag-json", "r.json", "--rag-report", "r.md", *RUN)
    result.assert_outcomes(passed=8)
    document = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))
    shown = dict(document["retrievers"]["table"]["metrics"])
    assert shown.pop("judged@3") == 1.0  # gold rankings of 1 or 2 chunks, each divided by its length
    assert shown == recorded["retrievers"]["table"]["metrics"]
    assert (pytester.path / "r.md").read_text(encoding="utf-8").startswith("# RAG")


def test_collect_only_runs_nothing(pytester: pytest.Pytester) -> None:
    write_project(pytester.path, retrievers=HYBRID)
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    (pytester.path / "calls.txt").unlink()
    result = pytester.runpytest_subprocess("--rag-eval", "-n", "2", "--collect-only", *RUN)
    assert result.ret == 0
    assert not (pytester.path / "calls.txt").exists()
