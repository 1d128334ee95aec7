"""Significance mode: a drop fails only when a seeded paired test says it is not noise."""
from __future__ import annotations

import json

import numpy as np
import pytest
from projects import RUN, TABLE_ONLY, baseline, set_rankings, synthetic, write_project
from scipy import stats as scipy_stats

from pytest_ragretrieval.scoring.stats import RESAMPLES, SEED, paired_test


def project(pytester: pytest.Pytester, count: int, settings: str) -> dict[str, list[str]]:
    chunks, questions, gold = synthetic(count)
    write_project(pytester.path, retrievers=TABLE_ONLY, settings=settings, chunks=chunks, questions=questions)
    set_rankings(pytester.path, gold, questions)
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    return gold


def swapped(gold: dict[str, list[str]], ids: list[str]) -> dict[str, list[str]]:
    """The grade-1 chunk moved above the grade-2 one for the given questions."""
    return {q: list(reversed(r)) if q in ids else r for q, r in gold.items()}


def scipy_p(differences: np.ndarray) -> float:
    result = scipy_stats.permutation_test(
        (differences,), np.mean, permutation_type="samples", alternative="less",
        n_resamples=RESAMPLES, random_state=np.random.default_rng(SEED),
    )
    return float(result.pvalue)


def test_one_rank_swap_on_ten_questions_fails_strict_and_passes_with_significance(pytester: pytest.Pytester) -> None:
    gold = project(pytester, 10, "")
    set_rankings(pytester.path, swapped(gold, ["q03"]), synthetic(10)[1])
    strict = pytester.runpytest("--rag-eval", "-k", "ndcg", *RUN)
    strict.assert_outcomes(failed=1)
    strict.stdout.fnmatch_lines(["ndcg@3 of 'table' fell from 1.0000 to 0.9*"])

    pyproject = pytester.path / "pyproject.toml"
    pyproject.write_text(pyproject.read_text(encoding="utf-8").replace("k = 3", 'k = 3\nsignificance = "randomization"'), encoding="utf-8")
    lenient = pytester.runpytest("--rag-eval", "-k", "ndcg", "-rA", *RUN)
    lenient.assert_outcomes(passed=1)
    lenient.stdout.fnmatch_lines(["rag: warning: the eval set has 10 answerable questions, fewer than min_questions = 20*"])


def test_a_consistent_drop_over_forty_questions_fails_with_scipys_p(pytester: pytest.Pytester) -> None:
    gold = project(pytester, 40, 'significance = "randomization"\nalpha = 0.05')
    worse = swapped(gold, [f"q{i:02d}" for i in range(1, 41) if i % 4])
    set_rankings(pytester.path, worse, synthetic(40)[1])
    result = pytester.runpytest("--rag-eval", "-k", "ndcg", "--rag-json", "results.json", *RUN)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*randomization test p = 0.0001 < alpha 0.05, 95% CI of the mean difference [[]-0.*, -0.*[]]*"])
    results = json.loads((pytester.path / "results.json").read_text(encoding="utf-8"))
    recorded = baseline(pytester.path)["retrievers"]["table"]["questions"]
    now = results["retrievers"]["table"]["questions"]
    ids = sorted(recorded)
    differences = np.array([now[q]["metrics"]["ndcg@3"] - recorded[q]["metrics"]["ndcg@3"] for q in ids])
    comparison = results["retrievers"]["table"]["comparison"]["ndcg@3"]
    assert comparison["p_value"] == round(scipy_p(differences), 6)
    assert comparison["p_value"] < 0.05
    assert comparison["delta"] == pytest.approx(differences.mean(), abs=1e-6)
    low, high = comparison["ci95"]
    assert low <= differences.mean() <= high < 0


def test_strict_mode_reports_the_comparison_without_a_test(pytester: pytest.Pytester) -> None:
    gold = project(pytester, 10, "")
    set_rankings(pytester.path, swapped(gold, ["q01"]), synthetic(10)[1])
    pytester.runpytest("--rag-eval", "--rag-json", "results.json", *RUN)
    comparison = json.loads((pytester.path / "results.json").read_text(encoding="utf-8"))["retrievers"]["table"]["comparison"]
    assert comparison["recall@3"] == {"baseline": 1.0, "value": 1.0, "delta": 0.0, "p_value": None, "ci95": None,
                                      "p_unadjusted": None, "family": 0, "questions": 10, "whole": True,
                                      "value_all": None, "mde": 0.0, "adjustment": None, "last_update": None,
                                      "lower": 0.0, "margin": 0.0, "needed": None}
    assert comparison["ndcg@3"]["delta"] < 0


def test_paired_test_matches_scipy_and_is_seeded() -> None:
    rng = np.random.default_rng(3)
    before = rng.uniform(0.4, 1.0, 40)
    after = before - rng.uniform(0.0, 0.1, 40)
    first = paired_test(list(before), list(after), "randomization")
    assert first is not None and first == paired_test(list(before), list(after), "randomization")
    assert first.p_value == round(scipy_p(after - before), 6)
    assert first.n == 40


def test_bootstrap_mode_gives_a_p_and_an_interval_around_the_mean() -> None:
    before = [1.0] * 10
    after = [0.63] + [1.0] * 9
    test = paired_test(before, after, "bootstrap")
    assert test is not None and 0.05 < test.p_value <= 1.0
    assert test.ci95[0] <= -0.037 <= test.ci95[1]


def test_no_difference_and_too_few_pairs() -> None:
    assert (same := paired_test([0.5, 0.5], [0.5, 0.5], "randomization")) is not None and same.p_value == 1.0
    assert paired_test([0.5], [0.2], "randomization") is None
