"""A gate-only run (`--rag-eval -m rag_eval`) collects no test file; every other run collects the team's tests."""
from __future__ import annotations

import pytest
from projects import RUN, write_project

from pytest_ragretrieval.plugin import gate_only

TESTS = """
import pytest

def test_mine():
    pass

@pytest.mark.slow
def test_mine_slow():
    pass
"""
BROKEN = "def test_broken(:\n"
"""A file that fails to import: a run that collects it reports an error, so its absence shows it was not collected."""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    write_project(pytester.path)
    pytester.makepyfile(test_mine=TESTS, test_broken=BROKEN)
    pytester.makeini("[pytest]\nmarkers =\n    slow: a slow test of the team's\n")
    return pytester


def test_the_gate_only_run_collects_the_gate_and_no_test_file(project: pytest.Pytester) -> None:
    """577255f collected both files only to deselect them, and reported the broken one as an error."""
    result = project.runpytest("--rag-eval", "-m", "rag_eval", "--collect-only", "-q", *RUN)
    assert result.ret == 0, result.stdout.str()
    output = result.stdout.str()
    assert "test_mine" not in output and "test_broken" not in output and "deselected" not in output, output
    result.stdout.fnmatch_lines(["rag::bm25::precision@3", "8 tests collected in *"])


BOTH = ["test_mine.py::test_mine", "test_mine.py::test_mine_slow"]


@pytest.mark.parametrize(("args", "selected"), [
    ((), BOTH),                                                       # a plain run
    (("--rag-eval",), BOTH),                                          # the gate and the team's tests together
    (("--rag-eval", "-m", "rag_eval or slow"), ["test_mine.py::test_mine_slow"]),
    (("--rag-eval", "-m", "not rag_eval"), BOTH),
])
def test_every_other_run_collects_the_teams_test_files(project: pytest.Pytester, args: tuple[str, ...],
                                                       selected: list[str]) -> None:
    result = project.runpytest(*args, "--collect-only", "-q", *RUN)
    output = result.stdout.str()
    assert "ERROR collecting test_broken.py" in output, output  # its import error: the file was collected
    assert [line for line in result.stdout.lines if line.startswith("test_mine.py::")] == selected, output


def test_the_teams_tests_run_beside_the_gate_without_the_mark(pytester: pytest.Pytester) -> None:
    write_project(pytester.path)
    pytester.makepyfile(test_mine="def test_mine():\n    pass\n")
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    pytester.runpytest("--rag-eval", *RUN).assert_outcomes(passed=9)
    pytester.runpytest("--rag-eval", "-m", "rag_eval", *RUN).assert_outcomes(passed=8)


@pytest.mark.parametrize(("expression", "only"), [
    ("rag_eval", True),
    ("rag_eval and not slow", True),
    ("(rag_eval and e2e) or (rag_eval and not e2e)", True),
    ("(a or b) and (rag_eval or not (a or b))", True),
    ("rag_eval(x=1)", True),         # matches no item at all: nothing to collect
    ("", False),
    ("not rag_eval", False),
    ("rag_eval or slow", False),
    ("not slow", False),
    ("(a or b) and (rag_eval or not a)", False),   # b alone selects an item of the team's
    ("rag_eval or slow(reason=1)", False),
    ("rag_eval and", False),         # pytest's own error, not ours
])
def test_gate_only_reads_the_expression_for_every_item_without_the_mark(expression: str, only: bool) -> None:
    assert gate_only(expression) is only
