"""Paired significance tests over per-question values, seeded so the same data gives the same p.

The question asked is one-sided: did this retriever get worse than the baseline? `p_value` is
the chance of a mean drop at least this large if the change were noise. The 95% interval is a
percentile bootstrap of the mean per-question difference (new - baseline). scipy is imported
only here, and only when a config asks for significance.
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


def randomization_p(differences: object) -> float:
    """Paired sign-flip permutation test (exact when 2^n <= RESAMPLES), alternative: mean < 0."""
    import numpy as np
    from scipy import stats

    result = stats.permutation_test(
        (differences,), np.mean, permutation_type="samples", alternative="less",
        n_resamples=RESAMPLES, random_state=np.random.default_rng(SEED),
    )
    return float(result.pvalue)


def bootstrap_p(differences: object) -> float:
    """Paired bootstrap test: resample the differences shifted to mean 0, count means <= observed."""
    import numpy as np
    from scipy import stats

    data = np.asarray(differences, dtype=float)
    observed = float(data.mean())
    result = stats.bootstrap(
        (data - observed,), np.mean, n_resamples=RESAMPLES, method="percentile",
        random_state=np.random.default_rng(SEED),
    )
    below = int(np.sum(result.bootstrap_distribution <= observed + 1e-12))
    return (below + 1) / (RESAMPLES + 1)


def paired_test(before: Sequence[float], after: Sequence[float], method: str) -> PairedTest | None:
    """Test `after` against `before` (same questions, same order); None with fewer than 2 pairs."""
    import numpy as np

    if len(before) != len(after):
        raise ValueError("paired samples must have the same length")
    if len(before) < 2:
        return None
    differences = np.asarray(after, dtype=float) - np.asarray(before, dtype=float)
    if not differences.any():
        return PairedTest(method, len(differences), 1.0, (0.0, 0.0))
    p = randomization_p(differences) if method == "randomization" else bootstrap_p(differences)
    return PairedTest(method, len(differences), round(p, DIGITS), _confidence_interval(differences))
