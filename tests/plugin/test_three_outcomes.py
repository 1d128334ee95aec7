"""Three outcomes (docs/verdicts.md): a regression fails; a pass is non-inferior, inconclusive or unchanged;
`inconclusive = "fail"` fails the inconclusive one; an inconclusive item keeps the bar."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from projects import RUN, TABLE_ONLY, baseline, set_rankings, synthetic, write_project


def project(pytester: pytest.Pytester, count: int, settings: str, swapped: tuple[str, ...] = ()) -> None:
    """`count` synthetic questions, recorded with the given questions' two chunks swapped."""
    chunks, questions, gold = synthetic(count)
    write_project(pytester.path, retrievers=TABLE_ONLY, settings='metrics = ["ndcg"]\n' + settings,
                  chunks=chunks, questions=questions)
    set_rankings(pytester.path, swap(gold, swapped), questions)
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0


def swap(gold: dict[str, list[str]], ids: tuple[str, ...]) -> dict[str, list[str]]:
    """The grade-1 chunk above the grade-2 one for the given questions (ndcg@3 -0.140281 each)."""
    return {q: list(reversed(r)) if q in ids else r for q, r in gold.items()}


def ids(*numbers: int) -> tuple[str, ...]:
    return tuple(f"q{i:02d}" for i in numbers)


def judged(pytester: pytest.Pytester, count: int, swapped: tuple[str, ...], *args: str) -> tuple[
        pytest.RunResult, dict[str, Any], dict[str, str]]:
    """The gate run on today's rankings: its result, its `--rag-json` item outcome and its junit properties."""
    set_rankings(pytester.path, swap(synthetic(count)[2], swapped), synthetic(count)[1])
    result = pytester.runpytest("--rag-eval", "--rag-json", "results.json", "--junitxml", "junit.xml", *args, *RUN)
    results = json.loads((pytester.path / "results.json").read_text(encoding="utf-8"))
    [outcome] = results.get("outcomes", [{}])  # an update records, it judges no outcome
    case = ET.parse(pytester.path / "junit.xml").getroot().find(".//testcase")
    assert case is not None
    properties = {p.get("name", ""): p.get("value", "") for p in case.iter("property")}
    return result, outcome, properties


def test_a_drop_the_rule_fails_is_a_regression(pytester: pytest.Pytester) -> None:
    project(pytester, 20, 'tolerance = 0.05\nsignificance = "randomization"')
    result, outcome, properties = judged(pytester, 20, ids(*range(1, 11)))
    assert result.ret == 1
    result.assert_outcomes(failed=1)
    assert outcome["outcome"] == "regression" and outcome["passed"] is False and outcome["exam"] == "today"
    assert outcome["delta"] == pytest.approx(-0.07014, abs=1e-6) and outcome["p_value"] < 0.05
    assert properties["rag_outcome"] == "regression" and properties["rag_exam"] == "today"
    assert float(properties["rag_delta"]) == outcome["delta"] and float(properties["rag_p"]) == outcome["p_value"]
    result.stdout.fnmatch_lines(["outcomes: 1 failed"])


def test_a_small_drop_well_bounded_is_non_inferior(pytester: pytest.Pytester) -> None:
    project(pytester, 40, "tolerance = 0.05")
    result, outcome, properties = judged(pytester, 40, ids(7), "-rA")
    assert result.ret == 0
    result.assert_outcomes(passed=1)
    assert outcome["outcome"] == "non-inferior" and outcome["passed"] is True
    assert properties["rag_outcome"] == "non-inferior" and "rag_p" not in properties  # no test without significance
    result.stdout.fnmatch_lines(["outcomes: 0 failed; 1 non-inferior", "*= 1 passed in *"])


def test_a_drop_within_the_tolerance_but_not_ruled_out_is_inconclusive_and_passes(pytester: pytest.Pytester) -> None:
    project(pytester, 20, "tolerance = 0.05")
    result, outcome, properties = judged(pytester, 20, ids(2, 5, 9, 11, 14))
    assert result.ret == 0
    result.assert_outcomes(passed=1)
    assert outcome["outcome"] == "inconclusive" and outcome["passed"] is True and outcome["needed"] > 0
    assert properties["rag_outcome"] == "inconclusive"
    result.stdout.fnmatch_lines(["outcomes: 0 failed; 1 inconclusive",
                                 "inconclusive: ndcg@3 of table passes: a drop of its margin is not ruled out; about 108 questions *",
                                 "*= 1 passed, 1 inconclusive in *"])
    junit = ET.parse(pytester.path / "junit.xml").getroot()
    assert junit.find(".//skipped") is None and junit.find(".//failure") is None


def test_rankings_as_approved_are_unchanged(pytester: pytest.Pytester) -> None:
    project(pytester, 20, "tolerance = 0.05", ids(3))
    result, outcome, properties = judged(pytester, 20, ids(3))
    assert result.ret == 0
    assert outcome["outcome"] == "unchanged" and outcome["delta"] == 0.0
    assert properties["rag_outcome"] == "unchanged"


def test_inconclusive_fail_changes_the_exit_code(pytester: pytest.Pytester) -> None:
    project(pytester, 20, 'tolerance = 0.05\ninconclusive = "fail"')
    result, outcome, properties = judged(pytester, 20, ids(2, 5, 9, 11, 14))
    assert result.ret == 1
    result.assert_outcomes(failed=1)
    assert outcome["outcome"] == "inconclusive" and outcome["passed"] is False
    assert properties["rag_outcome"] == "inconclusive"
    result.stdout.fnmatch_lines(['*; inconclusive: the one-sided 95% lower bound *; inconclusive = "fail" fails it*'])


def test_a_margin_below_the_minimum_detectable_effect_is_refused_in_one_line(pytester: pytest.Pytester) -> None:
    project(pytester, 20, "tolerance = 0.05\nmargin = 0.01", ids(1, 2, 3, 4, 5))
    set_rankings(pytester.path, swap(synthetic(20)[2], ids(1, 2, 3, 4, 5, 6)), synthetic(20)[1])
    result = pytester.runpytest("--rag-eval", *RUN)
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*pyproject.toml* key 'margin': 0.01 for ndcg@3 of 'table' is below its minimum "
                                 "detectable effect * over 20 questions, so no run of them can show a drop that small "
                                 "ruled out; set margin to at least *"])


def test_an_inconclusive_rise_keeps_the_approved_rankings(pytester: pytest.Pytester) -> None:
    """Four questions fixed and three broken: the mean rose, but a drop is not ruled out, so the update keeps
    the approved rankings; the rankings recorded first are then unchanged against the bar (on 577255f the
    rise became the bar, and the first rankings failed against it)."""
    first = ids(1, 2, 3, 4)
    project(pytester, 20, "", first)
    result, outcome, _ = judged(pytester, 20, ids(5, 6, 7))
    assert result.ret == 0 and outcome["outcome"] == "inconclusive" and outcome["delta"] > 0
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    approved = baseline(pytester.path)["retrievers"]["table"]["approved"]
    assert sorted(approved) == list(ids(1, 2, 3, 4, 5, 6, 7))
    again, outcome, _ = judged(pytester, 20, first)
    assert again.ret == 0 and outcome["outcome"] == "unchanged"


def test_inconclusive_drops_accumulate_against_the_same_bar(pytester: pytest.Pytester) -> None:
    """Two successive drops within the tolerance, each inconclusive: the second is judged against the bar the
    first left, and fails."""
    project(pytester, 20, "tolerance = 0.05")
    result, outcome, _ = judged(pytester, 20, ids(1, 2, 3, 4, 5))
    assert result.ret == 0 and outcome["outcome"] == "inconclusive"
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    second, outcome, _ = judged(pytester, 20, ids(*range(1, 11)))
    assert second.ret == 1 and outcome["outcome"] == "regression"
    assert outcome["delta"] == pytest.approx(-10 * 0.140281 / 20, abs=1e-5)
