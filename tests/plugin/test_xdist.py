"""Under pytest-xdist the items of connected retrievers go to one worker, which runs them; files need one process."""
from __future__ import annotations

import pytest
from projects import GOLD, QUESTIONS, set_rankings, write_project

pytest.importorskip("xdist")
RUN = ("-p", "no:cacheprovider")


def test_the_gate_runs_on_workers(pytester: pytest.Pytester) -> None:
    write_project(pytester.path)
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    set_rankings(pytester.path, dict(GOLD, q01=[]))
    result = pytester.runpytest_subprocess("--rag-eval", "-n", "2", *RUN)
    result.assert_outcomes(passed=4, failed=4)


@pytest.mark.parametrize("flag", [("--rag-update-baseline",), ("--rag-eval", "--rag-json", "r.json")])
def test_files_are_refused_with_workers(pytester: pytest.Pytester, flag: tuple[str, ...]) -> None:
    write_project(pytester.path)
    result = pytester.runpytest(*flag, "-n", "2", *RUN)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --rag-update-baseline, --rag-json, --rag-report and --rag-html need every item in one process*"])


HYBRID = """
[tool.ragretrieval.retrievers.table]
type = "python"
factory = "table_retriever:make"

[tool.ragretrieval.retrievers.bm25]
type = "bm25"

[tool.ragretrieval.retrievers.hybrid]
type = "hybrid"
sources = ["table", "bm25"]
"""


@pytest.mark.parametrize("dist", [(), ("--dist", "load"), ("--dist", "loadgroup")])
def test_connected_retrievers_run_on_one_worker_only(pytester: pytest.Pytester, dist: tuple[str, ...]) -> None:
    """Without grouping, table's items and hybrid's would land on both workers, each running table."""
    write_project(pytester.path, retrievers=HYBRID)
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    (pytester.path / "calls.txt").unlink()
    result = pytester.runpytest_subprocess("--rag-eval", "-n", "2", *dist, *RUN)
    result.assert_outcomes(passed=12)
    calls = (pytester.path / "calls.txt").read_text(encoding="utf-8").splitlines()
    assert sorted(calls) == sorted(q["query"] for q in QUESTIONS)


def test_a_distribution_that_splits_retrievers_is_refused(pytester: pytest.Pytester) -> None:
    write_project(pytester.path)
    result = pytester.runpytest("--rag-eval", "-n", "2", "--dist", "loadscope", *RUN)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --rag-eval under pytest-xdist needs --dist load, loadgroup or loadfile, got --dist loadscope*"])
