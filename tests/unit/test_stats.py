"""The paired tests are numpy code: scipy is the reference they are checked against, value by value."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as scipy_stats

from pytest_ragretrieval.scoring import stats
from pytest_ragretrieval.scoring.stats import (
    RESAMPLES,
    SEED,
    Alternative,
    _confidence_interval,
    bootstrap_p,
    randomization_p,
)


def differences(n: int, seed: int) -> np.ndarray:
    """Per-question differences as metrics make them: many ties at 0, a few steps either way."""
    return np.random.default_rng(seed).choice([-1.0, -0.5, -0.25, 0.0, 0.0, 0.0, 0.25, 0.5, 1.0], n)


def scipy_p(data: np.ndarray, alternative: str) -> float:
    return float(scipy_stats.permutation_test(
        (data,), np.mean, permutation_type="samples", alternative=alternative,
        n_resamples=RESAMPLES, random_state=np.random.default_rng(SEED),
    ).pvalue)


def scipy_interval(data: np.ndarray) -> tuple[float, float]:
    found = scipy_stats.bootstrap(
        (data,), np.mean, confidence_level=0.95, n_resamples=RESAMPLES, method="percentile",
        random_state=np.random.default_rng(SEED),
    ).confidence_interval
    return round(float(found.low), 6), round(float(found.high), 6)


@pytest.mark.parametrize("n", [2, 5, 9, 13])
@pytest.mark.parametrize("alternative", ["less", "two-sided"])
def test_the_exact_sign_flip_test_equals_scipys(n: int, alternative: Alternative) -> None:
    """2^n <= 9999: every sign pattern, no +1; the same p to the last bit."""
    for seed in range(5):
        data = differences(n, seed)
        assert randomization_p(data, alternative) == pytest.approx(scipy_p(data, alternative), abs=1e-12)


@pytest.mark.parametrize("n", [14, 40, 500])
def test_the_random_sign_flip_test_agrees_with_scipys_within_monte_carlo_error(n: int) -> None:
    """Different random signs, the same definition: with 9,999 draws the two estimates of one p
    differ by a few thousandths (the standard error at p = 0.5 is 0.005)."""
    for seed in range(3):
        data = differences(n, seed) + (0.1 if seed == 2 else 0.0)
        for alternative in ("less", "two-sided"):
            assert abs(randomization_p(data, alternative) - scipy_p(data, alternative)) < 0.025


def test_a_drop_on_every_question_gets_the_smallest_p_there_is() -> None:
    data = -np.abs(differences(40, 1)) - 0.01
    assert randomization_p(data, "less") == 1 / (RESAMPLES + 1) == scipy_p(data, "less")


@pytest.mark.parametrize("n", [3, 40, 500])
def test_the_bootstrap_interval_is_scipys(n: int) -> None:
    data = differences(n, 7)
    assert _confidence_interval(data) == scipy_interval(data)


def test_batches_change_no_draw(monkeypatch: pytest.MonkeyPatch) -> None:
    """Memory stays flat for thousands of questions because the resamples are drawn in batches;
    the values must not depend on the batch size."""
    data = differences(300, 4)
    whole = (randomization_p(data, "two-sided"), bootstrap_p(data, "two-sided"), _confidence_interval(data))
    monkeypatch.setattr(stats, "BATCH", 333)
    assert (randomization_p(data, "two-sided"), bootstrap_p(data, "two-sided"), _confidence_interval(data)) == whole
