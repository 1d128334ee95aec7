"""Under pytest-xdist each worker runs the retrievers its items need; files need one process."""
from __future__ import annotations

import pytest
from projects import GOLD, set_rankings, write_project

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
