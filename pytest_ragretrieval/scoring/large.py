"""Paired tests over thousands of questions: the sign patterns kept packed, each item's sums kept, and the
large-sample path (the normal limit) where it cannot turn a verdict (`scoring/stats.py` calls these).

9,999 sign patterns over 10,000 questions are 100 million draws per item: drawn afresh for every item
and every exam, they were most of judging's cost. Here they are drawn once per question count, kept
8 questions a byte, and an item's sums under them are computed once and kept, so its single test,
max-T and the other exam read them. The normal limit is used where at least LARGE questions
(clusters) moved and its p is at least CLOSE above alpha (the Verdicts page, "Thousands of questions").
"""
from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from statistics import NormalDist

import numpy as np

from ..core.values import DIGITS

LARGE = 1000
"""From this many questions (clusters) that moved, the large-sample path: the normal limit of the test's
null (the central limit theorem over the moved questions' flips or draws) for a p at least CLOSE above
alpha, which no adjustment can turn into a failure, and for the 95% interval, which decides nothing."""
CLOSE = 0.01


def normal_limit(differences: np.ndarray, grouped: tuple[np.ndarray, np.ndarray] | None = None
                 ) -> tuple[float, float]:
    """The mean difference and the standard deviation of the bootstrap's means about it (over n, as the
    bootstrap spreads; with `grouped`, the clusters' sums and sizes, the ratio mean's, whole clusters drawn)."""
    if grouped is None:
        return float(differences.mean()), float(differences.std()) / differences.size ** 0.5
    sums, sizes = grouped
    mean = float(sums.sum() / sizes.sum())
    return mean, float(np.sqrt(np.sum((sums - sizes * mean) ** 2)) / sizes.sum())


def normal_interval(mean: float, spread: float) -> tuple[float, float]:
    """The 95% interval of the bootstrap means' normal limit, at the stored precision."""
    z = NormalDist().inv_cdf(0.975)
    return round(mean - z * spread, DIGITS), round(mean + z * spread, DIGITS)


def normal_p(z: float, alternative: str) -> float:
    """The p of a statistic `z` standard deviations from its null's mean, in the normal limit ("less" or
    "two-sided")."""
    less = NormalDist().cdf(z)
    return less if alternative == "less" else min(1.0, 2 * min(less, 1 - less))


def large_p(z: float, moved: int, alternative: str, alpha: float | None, step: float = 0.0) -> float | None:
    """The large-sample p, where it is used: LARGE questions (clusters) moved, and at least CLOSE above
    `alpha` (an adjusted p is never below its own, so no adjustment turns it into a failure); else None,
    and the test resamples. `step`: the continuity correction, in standard deviations: sums of metric
    values lie on a grid, and the resampled p counts the sums equal to the observed one (1,200 questions
    of +1 and -1: 0.124 without, 0.135 resampled); the rule reads the p without it, the lower one."""
    if alpha is None or moved < LARGE or normal_p(z, alternative) < alpha + CLOSE:
        return None
    return normal_p(z + step if alternative == "less" else z - step if z > 0 else z + step, alternative)


def large_bootstrap_p(data: np.ndarray, grouped: tuple[np.ndarray, np.ndarray] | None, alternative: str,
                      alpha: float | None) -> float | None:
    """The bootstrap test's large-sample p (`large_p`), or None: the means' normal limit, corrected for
    continuity by half the smallest gap between the values (the clusters' sums), over n."""
    units = data if grouped is None else grouped[0]
    mean, spread = normal_limit(data, grouped)
    if not spread:
        return None
    values = np.unique(units)
    step = float(np.diff(values).min()) / 2 / data.size / spread if values.size > 1 else 0.0
    return large_p(mean / spread, int(np.count_nonzero(units)), alternative, alpha, step)


def kept_sums(data: np.ndarray, resamples: int, seed: int, batch: int) -> np.ndarray:
    """`data`'s sum under each of the sign-flip test's `resamples` patterns (a flip where a uniform draw of
    `seed`'s generator is below 0.5, `batch` rows at a time), summed by table: per byte of 8 questions,
    the sum of those it flips, read for every pattern at once. Kept per item (read only)."""
    return _kept_sums(np.ascontiguousarray(data, dtype=float).tobytes(), resamples, seed, batch)


@lru_cache(maxsize=64)
def _kept_sums(raw: bytes, resamples: int, seed: int, batch: int) -> np.ndarray:
    data = np.frombuffer(raw, dtype=float)
    groups = -(-data.size // 8)
    padded = np.zeros(groups * 8)
    padded[:data.size] = data
    bits = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(float)
    table = (padded.reshape(groups, 8) @ bits.T).ravel()
    offsets = 256 * np.arange(groups, dtype=np.intp)
    total = float(data.sum())
    sums = np.concatenate([total - 2 * table[packed.astype(np.intp) + offsets].sum(axis=-1)
                           for packed in _packed_flips(data.size, resamples, seed, batch)])
    sums.flags.writeable = False
    return sums


def _packed_flips(n: int, resamples: int, seed: int, batch: int) -> Iterator[np.ndarray]:
    """The patterns, `batch` rows at a time, packed 8 questions a byte (a set bit: a flip); the test's
    (fewer than 20,000) kept for the next item of as many questions (9,999 over 10,000: 12.5 MB)."""
    if resamples < 20_000:
        yield from _kept_packed(n, resamples, seed, batch)
        return
    rng = np.random.default_rng(seed)
    for done in range(0, resamples, batch):
        yield np.packbits(rng.random((min(batch, resamples - done), n)) < 0.5, axis=1)


@lru_cache(maxsize=2)
def _kept_packed(n: int, resamples: int, seed: int, batch: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    return tuple(np.packbits(rng.random((min(batch, resamples - done), n)) < 0.5, axis=1)
                 for done in range(0, resamples, batch))
