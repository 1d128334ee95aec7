"""Paired significance tests over per-question values, seeded so the same data gives the same p.

Against the baseline the question is one-sided (`alternative="less"`): did this retriever get
worse? `p_value` is the chance of a mean drop at least this large if the change were noise.
Between two configurations it is two-sided (`"two-sided"`): do they differ at all, either way?
The 95% interval is a percentile bootstrap of the mean per-question difference (after - before).
Many items at once: `holm` adjusts their p-values whatever their dependence; `maxt` resamples them
together, so items that move together (the metrics of one retriever) cost the family little.
numpy only: the bootstrap draws what scipy.stats.bootstrap draws (same seed, same p and interval);
the sign-flip test is defined as scipy.stats.permutation_test's, with its own random signs.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np

from ..core.values import DIGITS

Method = Literal["randomization", "bootstrap"]
"""How a p-value is computed: sign-flip permutations, or bootstrap resamples."""
Significance = Literal["none", "randomization", "bootstrap"]
"""`significance`: a p-value by one of the methods, or none (a drop fails by its size alone)."""
Adjustment = Literal["maxt", "holm", "none"]
"""`adjustment`: how the p-values of a session's items are adjusted together."""
Alternative = Literal["less", "two-sided"]
"""The test's alternative: the mean difference is below 0, or either way."""
SEED = 20260917
RESAMPLES = 9999
BATCH = 1000
KEPT_DRAWS = 8_000_000
"""Draws kept for the next test of as many questions (a run tests several pairs and metrics over the same
questions, and the seed makes their draws the same): up to 800 questions, at most 72 MB."""


@dataclass(frozen=True)
class PairedTest:
    method: Method
    n: int
    p_value: float
    ci95: tuple[float, float]


def _means(data: np.ndarray, draw: Callable[[int], np.ndarray]) -> np.ndarray:
    """The mean of each of RESAMPLES rows that `draw(rows)` makes, BATCH rows at a time, so that
    memory stays flat with thousands of questions; the draws are the same whatever the batch."""
    parts = [draw(min(BATCH, RESAMPLES - done)).mean(axis=-1) for done in range(0, RESAMPLES, BATCH)]
    return np.concatenate(parts)


def _bootstrap_distribution(data: np.ndarray) -> np.ndarray:
    """Means of RESAMPLES resamples with replacement: indices drawn as scipy.stats.bootstrap draws them."""
    if data.size * RESAMPLES <= KEPT_DRAWS:
        batches = iter(_kept_indices(data.size, BATCH, RESAMPLES))
        return _means(data, lambda rows: data[next(batches)])
    rng = np.random.default_rng(SEED)
    return _means(data, lambda rows: data[rng.integers(0, data.size, (rows, data.size))])


@lru_cache(maxsize=2)
def _kept_indices(n: int, batch: int, resamples: int) -> tuple[np.ndarray, ...]:
    """The bootstrap's index batches for `n` questions, as `_bootstrap_distribution` draws them."""
    rng = np.random.default_rng(SEED)
    return tuple(rng.integers(0, n, (min(batch, resamples - done), n)) for done in range(0, resamples, batch))


@lru_cache(maxsize=2)
def _kept_flips(n: int, batch: int, resamples: int) -> tuple[np.ndarray, ...]:
    """The sign-flip test's random patterns for `n` questions, as `randomization_p` draws them, as signs:
    data times -1 is exactly -data, and a multiplication is several times faster than `np.where`."""
    rng = np.random.default_rng(SEED)
    return tuple(np.where(rng.random((min(batch, resamples - done), n)) < 0.5, -1, 1).astype(np.int8)
                 for done in range(0, resamples, batch))


def _confidence_interval(differences: np.ndarray) -> tuple[float, float]:
    """Percentile bootstrap 95% interval, equal to scipy.stats.bootstrap(method="percentile")'s."""
    low, high = np.percentile(_bootstrap_distribution(differences), [2.5, 97.5])
    return round(float(low), DIGITS), round(float(high), DIGITS)


def randomization_p(differences: np.ndarray, alternative: Alternative = "less", limit: int | None = None) -> float:
    """Paired sign-flip permutation test, p as scipy.stats.permutation_test defines it.

    Exact (every sign pattern of the questions that moved, no +1) when they have at most `limit`
    patterns (RESAMPLES: 13 questions); a question whose difference is 0 adds 0 whatever its sign,
    so the pattern of the others is the whole test. Else RESAMPLES random sign patterns of every
    question (a flip where a uniform draw is below 0.5) and the +1 correction. `maxt` follows the
    same rule. "less": the mean difference is below 0; "two-sided": twice the smaller one-sided
    p, at most 1. Values within 100 ulp of the observed mean count as equal to it, as in scipy.
    Ours, not scipy's: about five times faster, and the same p whatever the scipy version.
    """
    data = np.asarray(differences, dtype=float)
    n = data.size
    observed = float(data.mean())
    moved = data[data != 0]
    if enumerable(moved.size, limit):
        null = _sign_means(moved, n)
        correction = 0
    else:
        if n * RESAMPLES <= KEPT_DRAWS:
            batches = iter(_kept_flips(n, BATCH, RESAMPLES))
            null = _means(data, lambda rows: next(batches) * data)
        else:
            rng = np.random.default_rng(SEED)
            null = _means(data, lambda rows: np.where(rng.random((rows, n)) < 0.5, -data, data))
        correction = 1
    gamma = abs(100 * np.finfo(float).eps * observed)
    less = (int(np.count_nonzero(null <= observed + gamma)) + correction) / (null.size + correction)
    greater = (int(np.count_nonzero(null >= observed - gamma)) + correction) / (null.size + correction)
    p: float = less if alternative == "less" else min(less, greater) * 2
    return min(p, 1.0)


def enumerable(moved: int, limit: int | None = None) -> bool:
    """Whether the sign patterns of `moved` questions can all be enumerated: at most `limit` of them
    (RESAMPLES when None, so an exact test never takes more draws than a random one). The one rule
    of the single-item test and of max-T."""
    return moved <= (RESAMPLES if limit is None else limit).bit_length() - 1


def _sign_means(moved: np.ndarray, n: int) -> np.ndarray:
    """The mean over `n` questions under every sign pattern of the `moved` values (the other
    questions' differences are 0), one per pattern, in a fixed order."""
    patterns = (np.arange(2**moved.size)[:, None] >> np.arange(moved.size)) & 1
    means: np.ndarray = np.where(patterns == 1, -moved, moved).sum(axis=-1) / n
    return means


def bootstrap_p(differences: np.ndarray, alternative: Alternative = "less") -> float:
    """Paired bootstrap test: resample the differences shifted to mean 0, count means <= observed
    (two-sided: means at least as far from 0 as observed)."""
    data = np.asarray(differences, dtype=float)
    observed = float(data.mean())
    distribution = _bootstrap_distribution(data - observed)
    if alternative == "two-sided":
        beyond = int(np.sum(np.abs(distribution) >= abs(observed) - 1e-12))
    else:
        beyond = int(np.sum(distribution <= observed + 1e-12))
    return (beyond + 1) / (RESAMPLES + 1)


def paired_test(
    before: Sequence[float], after: Sequence[float], method: Method, alternative: Alternative = "less"
) -> PairedTest | None:
    """Test `after` against `before` (same questions, same order); None with fewer than 2 pairs."""
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


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values, in the order given: the i-th smallest of m is multiplied by
    m - i + 1, each at least the one before it (so the order is kept) and at most 1. An item fails
    when its adjusted p is below alpha, which keeps the chance of any false alarm in the family at
    alpha whatever the dependence between the items (Holm 1979)."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [0.0] * len(p_values)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = round(running, DIGITS)
    return adjusted



def _null_means(items: Sequence[np.ndarray], method: Method, limit: int | None) -> np.ndarray:
    """Each item's mean under every resample of the null, one row per resample and one column per
    item, drawn once for all the items (the same sign flips, the same bootstrap indices). Sign
    flips: every pattern of the questions where some item moved when `enumerable`, else the
    random draws `randomization_p` makes for one item; bootstrap: the indices `bootstrap_p` draws.
    Where those tests add 1 to both counts (random draws), the observed means are the last row:
    the observed data count as one resample, which is what the +1 is."""
    n = items[0].size
    moved = np.flatnonzero(np.any(np.vstack(items) != 0, axis=0))
    if method != "bootstrap" and enumerable(moved.size, limit):
        return np.column_stack([_sign_means(data[moved], n) for data in items])
    rng = np.random.default_rng(SEED)
    if method == "bootstrap":
        shifted = [data - float(data.mean()) for data in items]

        def draw(rows: int) -> np.ndarray:
            indices = rng.integers(0, n, (rows, n))
            return np.column_stack([data[indices].mean(axis=-1) for data in shifted])
    else:
        def draw(rows: int) -> np.ndarray:
            flips = rng.random((rows, n)) < 0.5
            return np.column_stack([np.where(flips, -data, data).mean(axis=-1) for data in items])
    parts = [draw(min(BATCH, RESAMPLES - done)) for done in range(0, RESAMPLES, BATCH)]
    return np.concatenate([*parts, np.array([[float(data.mean()) for data in items]])])


def _shares(null: np.ndarray, means: np.ndarray, slack: float) -> np.ndarray:
    """The share of the sorted `null` at most each of `means` (within `slack`)."""
    found: np.ndarray = np.searchsorted(null, means + slack, side="right") / null.size
    return found


def _nulls(
    items: Sequence[np.ndarray], columns: Sequence[np.ndarray], method: Method, limit: int | None
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per item, two null distributions of its mean, sorted: the one its p is read from in the
    family, and the single-item test's. Exact, every sign pattern of its own moved questions, when
    `enumerable` (as `randomization_p` computes it), for both. Else the single-item test's is its
    column of the common resample (`columns`: its draws, the observed mean included for the +1),
    and the family's pools the columns of every item whose null is the same (the same values up to
    order, and for sign flips up to sign: an item moved on its own questions as another on theirs),
    so that such items get one p for one mean, not two estimates that resampling noise orders."""
    def key(data: np.ndarray) -> tuple[float, ...]:
        return tuple(np.sort(np.abs(data) if method != "bootstrap" else data).tolist())

    same: dict[tuple[float, ...], list[int]] = {}
    for j, data in enumerate(items):
        same.setdefault(key(data), []).append(j)
    found = []
    for data, column in zip(items, columns, strict=True):
        moved = data[data != 0]
        if method != "bootstrap" and enumerable(moved.size, limit):
            exact = np.sort(_sign_means(moved, data.size))
            found.append((exact, exact))
        else:
            pooled = [columns[j] for j in same[key(data)]]
            found.append((np.sort(np.concatenate(pooled)) if len(pooled) > 1 else column, column))
    return found


def maxt(differences: Sequence[np.ndarray], method: Method, limit: int | None = None) -> list[float | None]:
    """Step-down resampling adjusted p-values for drops (Westfall & Young 1993; Carterette 2012 for
    IR), one per item in the order given; None for an item whose differences are all 0: it has no
    statistic and leaves the family (whether all are 0 no resample changes, so dropping it costs
    the family's error control nothing).

    Every item holds its differences over the same questions in the same order, and each resample
    (every sign pattern of the questions where some item moved when `enumerable` with `limit`,
    else the random flips of `randomization_p`; the indices of `bootstrap_p`) is applied to every
    item at once, so items that move together stay together. Each item's statistic is
    standardised by its own null distribution: in every resample, its one-sided p, the single-item
    test's (exact over its own moved questions when `enumerable`, else the share of the common
    resample at most it, with the +1), so metrics on any scale and of any spread compete fairly,
    and items with the same exact p on different questions tie instead of being ordered by
    resampling noise. Items are taken from the smallest p up; an item's adjusted p is the share
    of resamples in which the smallest p among it and the items after it is at most its own, at
    least the adjusted p before it and at least its own p (the minP form of the max-T step-down).
    So: the single-item test's p for one item or for m identical ones; never below each item's
    own p; never above Holm's over the single-item p's: the exact step-down never is (Bonferroni
    over the items left), so an estimate above it is the random draws' error, and is cut to it.
    """
    data = [np.asarray(item, dtype=float) for item in differences]
    if len({item.size for item in data}) > 1:
        raise ValueError("max-T resamples every item over the same questions: the lengths differ")
    members = [index for index, item in enumerate(data) if item.any()]
    adjusted: list[float | None] = [None] * len(data)
    if not members:
        return adjusted
    items = [data[index] for index in members]
    null = _null_means(items, method, limit)
    rows = null.shape[0]
    observed = np.array([float(item.mean()) for item in items])
    if method == "bootstrap":
        slack = np.full(len(items), 1e-12)
    else:
        slack = np.abs(100 * np.finfo(float).eps * observed)
    nulls = _nulls(items, [np.sort(null[:, j]) for j in range(len(items))], method, limit)
    resampled = np.column_stack([_shares(family, null[:, j], slack[j]) for j, (family, _) in enumerate(nulls)])
    own = [float(_shares(family, observed[j:j + 1], slack[j])[0]) for j, (family, _) in enumerate(nulls)]
    single = [float(_shares(alone, observed[j:j + 1], slack[j])[0]) for j, (_, alone) in enumerate(nulls)]
    order = sorted(range(len(items)), key=lambda j: own[j])
    smallest = np.ones(rows)
    found = [0.0] * len(items)
    for position in range(len(order) - 1, -1, -1):
        j = order[position]
        smallest = np.minimum(smallest, resampled[:, j])
        found[position] = max(int(np.count_nonzero(smallest <= own[j])) / rows, single[j])
    bound = holm([round(p, DIGITS) for p in single])
    running = 0.0
    for position, j in enumerate(order):
        running = max(running, found[position])
        adjusted[members[j]] = min(round(running, DIGITS), bound[j])
    return adjusted
