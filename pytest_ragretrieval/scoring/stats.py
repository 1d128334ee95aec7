"""Paired significance tests over per-question values, seeded so the same data gives the same p.

Against the baseline the question is one-sided (`alternative="less"`): did this retriever get
worse? `p_value` is the chance of a mean drop at least this large if the change were noise.
Between two configurations it is two-sided (`"two-sided"`): do they differ at all, either way?
The 95% interval is a percentile bootstrap of the mean per-question difference (after - before).
scipy is imported only here, and only when a config asks for significance or compares retrievers.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..values import DIGITS

SEED = 20260917
RESAMPLES = 9999


@dataclass(frozen=True)
class PairedTest:
    method: str
    n: int
    p_value: float
    ci95: tuple[float, float]


def _confidence_interval(differences: object) -> tuple[float, float]:
    import numpy as np
    from scipy import stats

    result = stats.bootstrap(
        (differences,), np.mean, confidence_level=0.95, n_resamples=RESAMPLES,
        method="percentile", random_state=np.random.default_rng(SEED),
    )
    low, high = result.confidence_interval
    return round(float(low), DIGITS), round(float(high), DIGITS)


def randomization_p(differences: object, alternative: str = "less") -> float:
    """Paired sign-flip permutation test (exact when 2^n <= RESAMPLES); alternative "less": mean < 0."""
    import numpy as np
    from scipy import stats

    result = stats.permutation_test(
        (differences,), np.mean, permutation_type="samples", alternative=alternative,
        n_resamples=RESAMPLES, random_state=np.random.default_rng(SEED),
    )
    return float(result.pvalue)


def bootstrap_p(differences: object, alternative: str = "less") -> float:
    """Paired bootstrap test: resample the differences shifted to mean 0, count means <= observed
    (two-sided: means at least as far from 0 as observed)."""
    import numpy as np
    from scipy import stats

    data = np.asarray(differences, dtype=float)
    observed = float(data.mean())
    result = stats.bootstrap(
        (data - observed,), np.mean, n_resamples=RESAMPLES, method="percentile",
        random_state=np.random.default_rng(SEED),
    )
    distribution = result.bootstrap_distribution
    if alternative == "two-sided":
        beyond = int(np.sum(np.abs(distribution) >= abs(observed) - 1e-12))
    else:
        beyond = int(np.sum(distribution <= observed + 1e-12))
    return (beyond + 1) / (RESAMPLES + 1)


def paired_test(
    before: Sequence[float], after: Sequence[float], method: str, alternative: str = "less"
) -> PairedTest | None:
    """Test `after` against `before` (same questions, same order); None with fewer than 2 pairs."""
    import numpy as np

    if len(before) != len(after):
        raise ValueError("paired samples must have the same length")
    if len(before) < 2:
        return None
    differences = np.asarray(after, dtype=float) - np.asarray(before, dtype=float)
    if not differences.any():
        return PairedTest(method, len(differences), 1.0, (0.0, 0.0))
    test = randomization_p if method == "randomization" else bootstrap_p
    p = test(differences, alternative)
    return PairedTest(method, len(differences), round(p, DIGITS), _confidence_interval(differences))
