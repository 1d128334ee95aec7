"""Judging at thousands of questions: the draws kept and shared, and the large-sample path held to its rule."""
from __future__ import annotations

from statistics import NormalDist

import numpy as np
import pytest

from pytest_ragretrieval.scoring import large, stats
from pytest_ragretrieval.scoring.large import CLOSE, LARGE
from pytest_ragretrieval.scoring.stats import bootstrap_p, maxt, paired_test, randomization_p

ALPHA = 0.05


def signs(n: int, negative: int) -> np.ndarray:
    """`n` differences of 1 or -1, `negative` of them -1, spread over the questions."""
    data = np.ones(n)
    data[np.random.default_rng(3).choice(n, negative, replace=False)] = -1.0
    return data


def normal(data: np.ndarray, corrected: bool = False) -> float:
    """The normal limit's p; `corrected`: half a step of the sum (the smallest moved value) for continuity."""
    moved = data[data != 0]
    step = float(np.abs(moved).min()) if corrected else 0.0
    return NormalDist().cdf((float(moved.sum()) + step) / float(np.sqrt(np.sum(moved ** 2))))


def test_the_normal_p_is_used_from_1000_moved_questions_at_least_close_above_alpha() -> None:
    data = signs(1200, 620)
    assert normal(data) >= ALPHA + CLOSE
    assert randomization_p(data, alpha=ALPHA) == normal(data, corrected=True)
    assert randomization_p(data, alpha=ALPHA) != randomization_p(data)
    assert abs(randomization_p(data, alpha=ALPHA) - randomization_p(data)) < 0.005


@pytest.mark.parametrize("negative", [628, 640])
def test_a_p_within_close_of_alpha_or_below_it_is_resampled(negative: int) -> None:
    data = signs(1200, negative)
    assert normal(data) < ALPHA + CLOSE
    assert randomization_p(data, alpha=ALPHA) == randomization_p(data)
    assert bootstrap_p(data, alpha=ALPHA) == bootstrap_p(data)


def test_fewer_than_1000_moved_questions_are_resampled_among_10000() -> None:
    data = np.zeros(10_000)
    data[:LARGE - 1] = signs(LARGE - 1, 480)
    assert normal(data) >= ALPHA + CLOSE
    assert randomization_p(data, alpha=ALPHA) == randomization_p(data)
    data[LARGE - 1] = 1.0
    assert randomization_p(data, alpha=ALPHA) == normal(data, corrected=True)


def test_the_bootstrap_takes_the_normal_limit_of_its_means() -> None:
    data = signs(1500, 770)
    spread = float(data.std()) / len(data) ** 0.5
    step = 1 / len(data)  # half the gap between -1 and +1, over n
    assert bootstrap_p(data, alpha=ALPHA) == pytest.approx(NormalDist().cdf((float(data.mean()) + step) / spread),
                                                           abs=1e-12)
    assert abs(bootstrap_p(data, alpha=ALPHA) - bootstrap_p(data)) < 0.01


def test_the_interval_from_1000_questions_is_the_normal_one_and_near_the_bootstraps() -> None:
    data = np.random.default_rng(5).choice([-1.0, -0.5, 0.0, 0.0, 0.5, 1.0], LARGE)
    test = paired_test([0.0] * LARGE, data.tolist(), "randomization")
    assert test is not None
    low, high = test.ci95
    spread = 1.959964 * float(data.std()) / LARGE ** 0.5
    assert low == pytest.approx(float(data.mean()) - spread, abs=1e-6)
    assert high == pytest.approx(float(data.mean()) + spread, abs=1e-6)
    boot = stats._bootstrap_distribution(data)
    assert abs(low - float(np.percentile(boot, 2.5))) < 0.005
    assert abs(high - float(np.percentile(boot, 97.5))) < 0.005


def test_an_items_resampled_sums_are_kept_and_are_the_flips_sums() -> None:
    data = np.random.default_rng(6).choice([-1.0, -0.5, 0.0, 0.0, 0.0, 0.5, 1.0], 1600)
    kept = stats._flip_sums(data, stats.RESAMPLES)
    assert stats._flip_sums(data.copy(), stats.RESAMPLES) is kept
    direct = np.concatenate([(flips * data).sum(axis=-1) for flips in stats._flips(data.size, stats.RESAMPLES)])
    assert np.abs(kept - direct).max() < 1e-9


def test_max_t_reads_the_single_tests_sums_and_gives_the_same_p_as_fresh_draws() -> None:
    rng = np.random.default_rng(8)
    items = [rng.choice([-1.0, 0.0, 0.0, 0.0, 1.0], 1200) for _ in range(3)]
    large._kept_sums.cache_clear()
    fresh = maxt(items, "randomization")
    assert large._kept_sums.cache_info().misses == 3
    again = maxt(items, "randomization")
    assert large._kept_sums.cache_info().hits == 3
    assert fresh == again
