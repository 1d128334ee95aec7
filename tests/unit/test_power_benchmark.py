"""benchmarks/power.py's core on a few synthetic questions, so the published study cannot rot:
a regression that removes every hit is always caught, an unchanged run never fails, and the
verdict it simulates is MetricCheck's."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from pytest_ragretrieval.baseline.format import Recorded, RecordedQuestion
from pytest_ragretrieval.evalset.records import Question
from pytest_ragretrieval.gate.checks import MetricCheck
from pytest_ragretrieval.scoring.evaluate import QuestionResult, RetrieverResult, mean
from pytest_ragretrieval.scoring.metrics import MetricSpec


def _load() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "power.py"
    spec = importlib.util.spec_from_file_location("power_benchmark", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


power = _load()


def synthetic(questions: int = 12) -> tuple[Any, list[Question]]:
    """Every retriever ranks question i's one relevant chunk at place 1 + i % 3, among 7 others."""
    asked = [Question(f"q{i}", f"query {i}", {f"gold{i}": 1}) for i in range(questions)]
    rankings = []
    for _ in power.RETRIEVERS:
        rows = []
        for i in range(questions):
            ranking = [f"other{i}-{j}" for j in range(7)]
            ranking.insert(i % 3, f"gold{i}")
            rows.append(ranking)
        rankings.append(rows)
    return power.values_of(rankings, asked), asked


def test_the_values_are_the_metrics_of_each_ranking_and_its_changes() -> None:
    values, asked = synthetic(3)
    assert values.base.shape == (3, 6, 3)
    assert values.base[power.TARGET, power.RECALL].tolist() == [1.0, 1.0, 1.0]
    assert values.pushed[power.RECALL].tolist() == [0.0, 0.0, 0.0]
    mrr = [spec.name for spec in power.METRICS].index("mrr")
    assert values.base[0, mrr].tolist() == [1.0, 0.5, pytest.approx(1 / 3)]
    # Swapping places 1 and 2 moves the gold of q0 down and q1's up; q2's (place 3) stays.
    assert values.swapped[0, 0, mrr].tolist() == [0.5, 1.0, pytest.approx(1 / 3)]
    assert values.loss.tolist() == [1.0, 1.0, 1.0]


def test_a_planted_regression_takes_the_share_of_questions_that_makes_its_size() -> None:
    loss = np.array([1.0, 0.0, 1.0, 1.0, 0.5, 1.0, 1.0, 1.0, 1.0, 1.0])
    mask = power.planted(loss, np.arange(10), 0.2)
    assert mask.tolist() == [True, False, True, False, False, False, False, False, False, False]
    assert power.planted(loss, np.arange(10)[::-1], 1.0).sum() == 9


def test_a_regression_of_every_hit_is_always_caught_and_no_change_never_fails() -> None:
    values, _ = synthetic()
    caught = power.simulate(values, "synthetic", power.Scenario("regression", 1.0), 10, 5, (0,))
    assert caught.fails == (5,) * len(power.RULES)
    assert caught.true_drop == 1.0 and caught.observed_drop == 1.0
    assert all(caught.rate(rule) == 0.0 for rule in range(len(power.RULES)))
    unchanged = power.simulate(values, "synthetic", power.Scenario("zero"), 10, 5, (1,))
    assert unchanged.fails == (0,) * len(power.RULES)
    assert unchanged.observed_drop == 0.0


def test_the_same_seed_gives_the_same_cell() -> None:
    values, _ = synthetic()
    tiny = power.Scenario("tiny", 0.05)
    assert power.simulate(values, "s", tiny, 8, 4, (2,)) == power.simulate(values, "s", tiny, 8, 4, (2,))


@pytest.mark.parametrize("seed", range(6))
def test_an_item_fails_as_metric_check_fails_it(seed: int) -> None:
    """One item, so no adjustment: the simulated verdict equals MetricCheck's, with and without the test."""
    rng = np.random.default_rng(seed)
    before = rng.choice([0.0, 1.0], 16, p=[0.3, 0.7])
    after = np.where(rng.random(16) < 0.35, 0.0, before)
    spec = MetricSpec("recall", 5)
    label = spec.label
    recorded = Recorded({label: mean(before.tolist())},
                        {f"q{i}": RecordedQuestion((), {label: float(v)}) for i, v in enumerate(before)})
    result = RetrieverResult("hybrid", {label: mean(after.tolist())}, {},
                             tuple(QuestionResult(f"q{i}", (), {label: float(v)}) for i, v in enumerate(after)), 0, 0)
    for tolerance in (0.0, 0.05, 0.1):
        rules = [power.Rule(tolerance, "none"), power.Rule(tolerance, "unadjusted")]
        expected = [not MetricCheck("hybrid", spec, tolerance, significance).evaluate(recorded, result).passed
                    for significance in ("none", "randomization")]
        assert power.failed(before[None], after[None], rules) == expected


def test_the_default_is_the_lowest_false_green_among_rules_with_few_false_reds() -> None:
    def cell(kind: str, rates: list[float]) -> object:
        scenario = power.Scenario(kind, 0.05 if kind == "regression" else 0.0)
        fails = [round(100 * (1 - rate if kind == "regression" else rate)) for rate in rates]
        return power.Cell("d", scenario, 40, 100, tuple(fails), 0.0, 0.0, 0.0)

    count = len(power.RULES)
    green = [0.5] * count
    red = [0.0] * count
    green[0], red[0] = 0.1, 0.2  # the most powerful rule fails harmless changes too often
    green[4] = 0.3
    chosen = power.choose([cell("regression", green), cell("tiny", red)])
    assert chosen is not None and chosen[0] == 4
    assert chosen[1] == pytest.approx(0.3)
    assert power.wilson(0, 100) == (pytest.approx(0.0, abs=1e-12), pytest.approx(0.037, abs=0.001))
    low, high = power.wilson(50, 100)
    assert low < 0.5 < high and high - low == pytest.approx(0.19, abs=0.005)


def test_unchanged_items_cost_holm_over_all_18_its_verdict_and_no_other_adjustment() -> None:
    """One item drops on all 8 questions (exact p = 1/256) and 17 do not move: Holm over 18 makes it
    0.07, Holm over the items that moved and max-T leave it 0.0039."""
    before = np.ones((18, 8))
    after = before.copy()
    after[7] = 0.0
    rules = [power.Rule(0.0, test) for test in power.TESTS]
    assert dict(zip(power.TESTS, power.failed(before, after, rules), strict=True)) == {
        "none": True, "unadjusted": True, "holm18": False, "holm": True, "maxt": True}


def test_the_quick_run_ends_with_the_share_moved_curve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """`power.py --quick`, the documented smoke run, on the bundled sample with synthetic rankings in
    place of the model's. Before, it (and any run without the CMRC file) ended with `ValueError: max()
    arg is an empty sequence`: no cell had 300 questions to choose a default for."""
    def ranked(chunks: list[Any], questions: list[Question], work: Path) -> list[list[list[str]]]:
        ids = sorted(chunk.id for chunk in chunks)
        found = []
        for shift in range(len(power.RETRIEVERS)):
            rows = []
            for i, question in enumerate(questions):
                others = [ids[(7 * i + shift + j) % len(ids)] for j in range(power.DEPTH)]
                gold = sorted(question.relevant_ids)[:1]
                ranking = [c for c in others if c not in gold][:power.DEPTH - 1]
                ranking.insert((i + shift) % 4, gold[0])
                rows.append(ranking)
            found.append(rows)
        return found

    monkeypatch.setattr(power, "rankings", ranked)
    power.main(["--quick", "--work", str(tmp_path)])
    printed = capsys.readouterr().out
    assert "4 trials per cell, 9,999 resamples per test (the gate's)" in printed
    assert "| rule: worst false red, % | 2% moved | 4% moved | 8% moved | 12% moved |" in printed
    chosen = next(line for line in printed.splitlines() if line.startswith("| *chosen, all sizes* |"))
    assert chosen.count("**tolerance") + chosen.count("none qualifies") == 4
    assert "Default for all sizes, 12% moved" in printed and "300 questions" not in printed
