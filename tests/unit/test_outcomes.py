"""Three outcomes, unit by unit: the lower bound, the questions needed (against a simulated 80% power), the
classification, the settings and the loosened one, the reports' counts."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from msgspec import structs
from test_comment import render_doc, results
from test_compare import SPEC, recorded, result
from test_config import MINIMAL, config_at, error_of

from pytest_ragretrieval.gate.checks import MetricCheck, classify
from pytest_ragretrieval.record.report import ReportInput
from pytest_ragretrieval.record.types import Comparison, Finding, ItemOutcome
from pytest_ragretrieval.report.terminal import summary_lines
from pytest_ragretrieval.report.wording import verdict
from pytest_ragretrieval.review.settings import GateSettings, loosened_settings
from pytest_ragretrieval.scoring.margin import LARGE, lower_bound, questions_needed
from pytest_ragretrieval.scoring.stats import paired_test

OBSERVED = np.array([-1.0] * 3 + [1.0] * 3 + [0.0] * 24)
"""A hit metric's per-question differences: 3 questions lost their hit, 3 gained one, 24 did not move."""


def simulated_power(n: int, margin: float, sims: int = 3000, resamples: int = 2000) -> float:
    """The share of `sims` eval sets of `n` questions drawn from OBSERVED (nothing changed in truth: its mean
    is 0) whose percentile-bootstrap lower bound at alpha 0.05 is at or above -margin, the gate's rule
    for non-inferior. Each resample's mean is a count matrix times the data, so 3000 sets take a second."""
    rng = np.random.default_rng(20261208)
    data = rng.choice(OBSERVED, (sims, n))
    drawn = rng.integers(0, n, (resamples, n))
    counts = np.zeros((resamples, n))
    np.add.at(counts, (np.arange(resamples)[:, None], drawn), 1)
    lows = np.percentile(data @ counts.T / n, 5, axis=1)
    for row in range(3):  # the same bound the gate computes, for a few of the sets
        assert lower_bound(data[row], 0.05) == pytest.approx(lows[row], abs=0.02)
    return float(np.mean(lows >= -margin - 1e-9))


def test_the_questions_needed_are_within_ten_percent_of_a_simulated_80_percent_power() -> None:
    needed = questions_needed(OBSERVED.tolist(), 0.2, 0.05)
    assert needed is not None and needed == 32  # ((1.6449 + 0.8416) * 0.4549 / 0.2)^2 = 31.97
    assert simulated_power(int(0.9 * needed), 0.2) < 0.8 < simulated_power(int(np.ceil(1.1 * needed)), 0.2)


def test_the_lower_bound_is_the_bootstraps_alpha_quantile() -> None:
    differences = [-0.5, 0.0, 0.25, -0.25, 0.0, 0.5, -0.5, 0.0, 0.0, -0.25]
    test = paired_test([0.5] * 10, [0.5 + d for d in differences], "bootstrap")
    assert test is not None and lower_bound(differences, 0.025) == test.ci95[0]
    bound = lower_bound(differences, 0.05)
    assert bound is not None and bound > test.ci95[0]
    assert lower_bound([0.0, 0.0, 0.0], 0.05) == 0.0
    assert lower_bound([-1.0], 0.05) is None


def test_from_800_questions_the_bound_is_the_bootstraps_normal_limit() -> None:
    """The bootstrap's own bound one question below LARGE (799) against the normal one (800, a 0 added),
    within a twentieth of the standard error (the resamples' Monte Carlo error is about that)."""
    rng = np.random.default_rng(3)
    data = rng.choice(OBSERVED, LARGE - 1).tolist()
    bootstrap = lower_bound(data, 0.05)
    normal = lower_bound([*data, 0.0], 0.05)
    assert bootstrap is not None and normal is not None
    assert abs(bootstrap - normal) < 0.05 * float(np.std(data)) / np.sqrt(LARGE - 1)


def test_an_observed_drop_leaves_less_room_below_the_margin() -> None:
    """Five of 20 questions lost 0.140281 (mean -0.0351): 0.0149 of room below the margin 0.05, so about 11
    times the questions a change that hurts nothing needs; a drop of the margin or more has no figure."""
    drop = [-0.140281] * 5 + [0.0] * 15
    spread = [-0.140281] * 5 + [0.140281] * 5 + [0.0] * 10
    assert questions_needed(drop, 0.05, 0.05) == 108
    assert questions_needed(spread, 0.05, 0.05) == 26  # mean 0: the room is the margin
    assert questions_needed([-0.140281] * 8 + [0.0] * 12, 0.05, 0.05) is None  # mean -0.0561


def test_nothing_to_decide_without_spread_or_below_margin_zero() -> None:
    assert questions_needed([0.0] * 10, 0.05, 0.05) is None
    assert questions_needed([-1.0, 0.0, 1.0], 0.0, 0.05) is None
    assert questions_needed([-1.0], 0.05, 0.05) is None


COMPARISON = Comparison(0.8, 0.79, -0.01, questions=40, lower=-0.03)


@pytest.mark.parametrize(("passed", "unchanged", "lower", "margin", "finding"), [
    (False, False, -0.03, 0.05, Finding.REGRESSION),
    (False, True, -0.03, 0.05, Finding.REGRESSION),  # the rule's fail stays a regression
    (True, False, -0.03, 0.05, Finding.NON_INFERIOR),
    (True, False, -0.03, 0.02, Finding.INCONCLUSIVE),
    (True, False, None, 0.05, Finding.INCONCLUSIVE),  # one question bounds nothing
    (True, False, 0.0, 0.0, Finding.NON_INFERIOR),  # margin 0: no question dropped
])
def test_classify(passed: bool, unchanged: bool, lower: float | None, margin: float, finding: Finding) -> None:
    assert classify(structs.replace(COMPARISON, lower=lower), passed, unchanged, margin) == finding


def test_unchanged_needs_the_approved_rankings_and_no_difference() -> None:
    same = Comparison(0.8, 0.8, 0.0, questions=40, lower=0.0)
    assert classify(same, True, True, 0.0) == Finding.UNCHANGED
    assert classify(same, True, False, 0.0) == Finding.NON_INFERIOR


def test_margin_defaults_to_the_tolerance_and_reads_as_it(tmp_path: Path) -> None:
    config = config_at(tmp_path, MINIMAL.replace("[tool.ragretrieval]\n", "[tool.ragretrieval]\ntolerance = 0.02\n", 1))
    assert (config.margin, config.inconclusive, config.margin_for("ndcg@5")) == (None, "pass", 0.02)
    given = MINIMAL.replace("[tool.ragretrieval]\n", '[tool.ragretrieval]\ntolerance = 0.02\ninconclusive = "fail"\n'
                            "margin = { default = 0.05, recall = 0.1 }\n", 1)
    config = config_at(tmp_path, given)
    assert (config.inconclusive, config.margin_for("ndcg@5"), config.margin_for("recall@5")) == ("fail", 0.05, 0.1)


@pytest.mark.parametrize(("line", "message"), [
    ('inconclusive = "skip"', "key 'inconclusive'"), ("margin = -0.1", "key 'margin'"),
    ("margin = { recal = 0.1 }", "key 'margin.recal'"),
])
def test_bad_outcome_settings_are_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str,
                                           message: str) -> None:
    assert message in error_of(tmp_path, MINIMAL.replace("[tool.ragretrieval]\n", f"[tool.ragretrieval]\n{line}\n", 1),
                               monkeypatch)


def test_inconclusive_from_fail_to_pass_is_loosened() -> None:
    strict = GateSettings(metrics=("ndcg@5",), tolerances={"ndcg@5": 0.0}, inconclusive="fail")
    lenient = replace(strict, inconclusive="pass")
    [change] = loosened_settings(strict, lenient)
    assert (change.setting, change.old, change.new) == ("inconclusive", "fail", "pass")
    assert loosened_settings(lenient, strict) == []


def test_a_margin_raised_while_inconclusive_items_fail_is_loosened() -> None:
    strict = GateSettings(metrics=("ndcg@5",), tolerances={"ndcg@5": 0.0}, inconclusive="fail", margins={"ndcg@5": 0.02})
    wider = replace(strict, margins={"ndcg@5": 0.05})
    [change] = loosened_settings(strict, wider)
    assert (change.setting, change.subject, change.old, change.new) == ("margin", "ndcg@5", "0.02", "0.05")
    assert loosened_settings(replace(strict, inconclusive="pass"), replace(wider, inconclusive="pass")) == []


def report(*outcomes: Finding) -> ReportInput:
    return ReportInput(k=5, metrics=("ndcg@5",), definitions={}, questions=(), chunks={}, retrievers=(),
                       embedder="", rerankers=(), database="", baseline_path="b.json", comparable=True,
                       language="en", outcomes=tuple(ItemOutcome(f"rag::r{i}::ndcg@5", f"r{i}", "ndcg@5", finding,
                                                                 "today", -0.01, None, True, 120)
                                                     for i, finding in enumerate(outcomes)))


def test_every_report_counts_the_outcomes() -> None:
    data = report(Finding.INCONCLUSIVE, Finding.NON_INFERIOR, Finding.INCONCLUSIVE, Finding.UNCHANGED)
    assert verdict(data) == "✅ no failures; 1 non-inferior, 2 inconclusive, 1 unchanged"
    lines = summary_lines(data)
    assert "outcomes: 0 failed; 1 non-inferior, 2 inconclusive, 1 unchanged" in lines
    assert ("inconclusive: ndcg@5 of r0 passes: a drop of its margin is not ruled out; about 120 questions would "
            "decide it") in lines
    assert verdict(report()) == "✅ no failures"


def test_the_pull_request_comment_counts_the_outcomes_from_the_results_file() -> None:
    inconclusive = {"item": "rag::hybrid::ndcg@5", "retriever": "hybrid", "metric": "ndcg@5", "outcome": "inconclusive",
                    "exam": "today", "delta": -0.1, "p_value": None, "passed": True, "needed": 150}
    body = render_doc(results([], outcomes=[inconclusive]))
    assert "- **门禁 / gate**：✅ 无失败项 / no failures; 1 项无定论 / 1 inconclusive" in body


def test_a_drop_past_the_tolerance_that_the_test_cannot_tell_from_noise_is_inconclusive() -> None:
    """One question of ten lost 0.5: -0.05 is past the tolerance 0.01, but p = 0.5, so the rule passes it; it
    used to pass as any other pass did, and is now inconclusive."""
    ids = [f"q{i}" for i in range(10)]
    before = dict.fromkeys(ids, 1.0)
    after = {**before, "q0": 0.5}
    check = MetricCheck("r", SPEC, 0.01, "randomization")
    outcome = check.evaluate(recorded(1.0, before), result(0.95, after))
    assert outcome.passed and outcome.finding == Finding.INCONCLUSIVE
    assert outcome.comparison is not None and outcome.comparison.needed is None  # the drop is past the margin
    assert outcome.details[-1] == ("inconclusive: the one-sided 95% lower bound of the difference, -0.1500, is below "
                                   "-0.0100 (margin): a drop of the margin is not ruled out; the observed drop "
                                   "reaches the margin: more questions would rather show it")
    same = check.evaluate(recorded(1.0, before), result(1.0, before), unchanged=True)
    assert same.finding == Finding.UNCHANGED and same.details[-1] == "unchanged: today's rankings are the approved ones"
