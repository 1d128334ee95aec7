"""Paired significance tests over per-question values, seeded so the same data gives the same p.

Against the baseline the question is one-sided (`alternative="less"`): did this retriever get
worse? `p_value` is the chance of a mean drop at least this large if the change were noise.
Between two configurations it is two-sided (`"two-sided"`): do they differ at all, either way?
The 95% interval is a percentile bootstrap of the mean per-question difference (after - before).
Many items at once: `holm` adjusts their p-values whatever their dependence; `maxt` resamples them
together, so items that move together (the metrics of one retriever) cost the family little.
numpy only: the bootstrap draws what scipy.stats.bootstrap draws (same seed, same p and interval);
the sign-flip test is defined as scipy.stats.permutation_test's, with its own random signs.
Questions that move together (one document's, one template's) come in clusters: given `clusters`, every
test flips or resamples whole clusters (a cluster's questions summed), so G clusters allow no one-sided
p below 2^-G; without, each question is its own cluster and nothing differs.
Thousands of questions: draws and sums kept and shared, and the normal limit where safe (`scoring/large.py`).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np

from ..core.values import DIGITS
from .clustered import Clusters as Clusters
from .clustered import labels as labels
from .clustered import totals as totals
from .large import LARGE, kept_sums, large_bootstrap_p, large_p, normal_interval, normal_limit

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
EXACT = 2**20
"""Sign patterns enumerated for an exact test: 20 questions that moved, 8 MB of sums per item."""
NEAR = 3.0
"""A resampled family p within NEAR standard errors of alpha is drawn again, with MORE resamples."""
MORE = 99_999
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


def _cluster_means(sums: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Means of RESAMPLES cluster bootstrap resamples: clusters drawn with replacement (as
    `_bootstrap_distribution` draws questions), each resample's mean over the questions it holds."""
    rng = np.random.default_rng(SEED)
    parts = []
    for done in range(0, RESAMPLES, BATCH):
        indices = rng.integers(0, sums.size, (min(BATCH, RESAMPLES - done), sums.size))
        parts.append(sums[indices].sum(axis=-1) / sizes[indices].sum(axis=-1))
    return np.concatenate(parts)


def _confidence_interval(differences: np.ndarray, clusters: Clusters | None = None) -> tuple[float, float]:
    """Percentile bootstrap 95% interval, equal to scipy.stats.bootstrap(method="percentile")'s; with
    `clusters`, whole clusters resampled; from LARGE questions (clusters) the same percentiles of the
    bootstrap means' normal limit."""
    units = differences.size if clusters is None else int(clusters.max()) + 1
    if units >= LARGE:
        return normal_interval(*normal_limit(differences, None if clusters is None else totals(differences, clusters)))
    distribution = _bootstrap_distribution(differences) if clusters is None else _cluster_means(
        *totals(differences, clusters))
    low, high = np.percentile(distribution, [2.5, 97.5])
    return round(float(low), DIGITS), round(float(high), DIGITS)


def randomization_p(differences: np.ndarray, alternative: Alternative = "less", limit: int | None = None, *,
                    clusters: Clusters | None = None, alpha: float | None = None) -> float:
    """Paired sign-flip permutation test, p as scipy.stats.permutation_test defines it.

    Exact (every sign pattern of the questions that moved, no +1) when they have at most `limit`
    patterns (EXACT: 20 questions); a question whose difference is 0 adds 0 whatever its sign,
    so the pattern of the others is the whole test. Else RESAMPLES random sign patterns of every
    question (a flip where a uniform draw is below 0.5) and the +1 correction. `maxt` follows the
    same rule. "less": the mean difference is below 0; "two-sided": twice the smaller one-sided
    p, at most 1. Sums within `_slack` of the observed one count as equal to it (the same sum
    added in another order), as scipy's 100 ulp do. Ours, not scipy's: about five times faster,
    and the same p whatever the scipy version. With `clusters`, the same test over the clusters' sums:
    whole clusters flipped, exact when the clusters whose sum is not 0 are `enumerable`. Given `alpha`, the
    normal limit (corrected by the smallest moved value: half a step of the sum) where `large_p` allows it.
    """
    data = np.asarray(differences, dtype=float)
    if clusters is not None:
        data = totals(data, clusters)[0]
    moved = data[data != 0]
    spread = float(np.sqrt(np.sum(moved ** 2)))
    if moved.size and (large := large_p(float(moved.sum()) / spread, moved.size, alternative, alpha,
                                        float(np.abs(moved).min()) / spread)) is not None:
        return large
    if enumerable(moved.size, limit):
        null, weights = _sign_null(moved)
        observed = float(_in_order(moved[:, None])[0])
        correction = 0
    else:
        null = _flip_sums(data, RESAMPLES)
        weights = np.ones(null.size)
        observed = float(data.sum())
        correction = 1
    slack = _slack(data)
    total = float(weights.sum())
    less = (float(weights[null <= observed + slack].sum()) + correction) / (total + correction)
    greater = (float(weights[null >= observed - slack].sum()) + correction) / (total + correction)
    p: float = less if alternative == "less" else min(less, greater) * 2
    return min(p, 1.0)


def _slack(data: np.ndarray) -> float:
    """How far apart two sums of `data` under sign flips may land when they are the same sum added in
    another order (pairwise or one by one): 1,000 ulp of the sum of the magnitudes, far below the
    steps of values stored at 6 digits (10^-6) even at 10,000 questions."""
    return float(1000 * np.finfo(float).eps * np.abs(data).sum())


def _flips(n: int, resamples: int) -> Iterator[np.ndarray]:
    """The sign-flip test's random patterns over `n` questions, BATCH rows at a time, as signs (a flip
    where a uniform draw is below 0.5): data times -1 is exactly -data. The first draws are the same
    whatever `resamples`, so more resamples add draws to the same ones."""
    if n * resamples <= KEPT_DRAWS:
        yield from _kept_flips(n, BATCH, resamples)
        return
    rng = np.random.default_rng(SEED)
    for done in range(0, resamples, BATCH):
        yield np.where(rng.random((min(BATCH, resamples - done), n)) < 0.5, -1, 1).astype(np.int8)


def _flip_sums(data: np.ndarray, resamples: int) -> np.ndarray:
    """`data`'s sum under each of `_flips`' patterns; past KEPT_DRAWS, kept per item (`large.kept_sums`)."""
    if data.size * resamples <= KEPT_DRAWS:
        return np.concatenate([(signs * data).sum(axis=-1) for signs in _flips(data.size, resamples)])
    return kept_sums(data, resamples, SEED, BATCH)


def enumerable(moved: int, limit: int | None = None) -> bool:
    """Whether the sign patterns of `moved` questions can all be enumerated: at most `limit` of them
    (EXACT when None). The one rule of the single-item test and of max-T."""
    return moved <= (EXACT if limit is None else limit).bit_length() - 1


def _sign_sums(moved: np.ndarray, start: np.ndarray | None = None) -> np.ndarray:
    """Per column of `moved` (questions x members), `start` (0) plus its sum under every sign pattern,
    one row per pattern, the first all +, added one question at a time in order: a pattern's sum
    is the same float however many questions before or after it are enumerated, and the same as
    `_sign_null`'s (max-T's joint patterns read each member's exact null)."""
    sums = np.zeros((1, moved.shape[1])) if start is None else start[None, :]
    for row in moved:
        sums = np.concatenate((sums + row, sums - row))
    return sums


def _in_order(moved: np.ndarray) -> np.ndarray:
    """`_sign_sums`'s first row, all +, without the others: the observed sums."""
    total = np.zeros(moved.shape[1])
    for row in moved:
        total = total + row
    return total


def _sign_null(moved: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct sums of the `moved` values under every sign pattern, sorted, and how many patterns
    give each: the sums `_sign_sums` makes, patterns that reach the same float merged at each step
    (metric values lie on a grid, so 2^20 patterns take a few hundred distinct sums)."""
    values: np.ndarray = np.zeros(1)
    counts: np.ndarray = np.ones(1)
    for value in moved.tolist():
        merged = np.unique(np.concatenate((values + value, values - value)), return_inverse=True)
        values, counts = merged[0], np.bincount(merged[1], weights=np.concatenate((counts, counts)))
    return values, counts


def bootstrap_p(differences: np.ndarray, alternative: Alternative = "less", *, clusters: Clusters | None = None,
                alpha: float | None = None) -> float:
    """Paired bootstrap test: resample the differences shifted to mean 0, count means <= observed
    (two-sided: means at least as far from 0 as observed); with `clusters`, whole clusters resampled.
    Given `alpha`, the means' normal limit (corrected by half the smallest gap between values, over n)."""
    data = np.asarray(differences, dtype=float)
    large = large_bootstrap_p(data, None if clusters is None else totals(data, clusters), alternative, alpha)
    if large is not None:
        return large
    observed = float(data.mean())
    distribution = _bootstrap_distribution(data - observed) if clusters is None else _cluster_means(
        *totals(data - observed, clusters))
    if alternative == "two-sided":
        beyond = int(np.sum(np.abs(distribution) >= abs(observed) - 1e-12))
    else:
        beyond = int(np.sum(distribution <= observed + 1e-12))
    return (beyond + 1) / (RESAMPLES + 1)


def paired_test(
    before: Sequence[float], after: Sequence[float], method: Method, alternative: Alternative = "less",
    clusters: Clusters | None = None, alpha: float | None = None,
) -> PairedTest | None:
    """Test `after` against `before` (same questions, same order, `clusters` theirs); None with fewer than 2
    pairs. `alpha`, where the p is judged against it, allows the large-sample path (`large.large_p`)."""
    if len(before) != len(after):
        raise ValueError("paired samples must have the same length")
    if len(before) < 2:
        return None
    differences = np.asarray(after, dtype=float) - np.asarray(before, dtype=float)
    if not differences.any():
        return PairedTest(method, len(differences), 1.0, (0.0, 0.0))
    if method == "randomization":
        p = randomization_p(differences, alternative, clusters=clusters, alpha=alpha)
    else:
        p = bootstrap_p(differences, alternative, clusters=clusters, alpha=alpha)
    return PairedTest(method, len(differences), round(p, DIGITS), _confidence_interval(differences, clusters))


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



@dataclass(frozen=True)
class _Null:
    """One member's null distribution, read as a p: the share of it at most a statistic, the statistic
    divided by `scale` first (members whose values are the same up to scale share one null). `values`
    sorted and distinct, `shares[i]` the share at most `values[i - 1]` (`shares[0]` is 0); `exact`
    when it holds every sign pattern of the member's moved questions, else it is estimated from the
    resamples."""

    values: np.ndarray
    shares: np.ndarray
    scale: float
    slack: float
    exact: bool

    @staticmethod
    def of(sample: np.ndarray, scale: float, slack: float) -> _Null:
        """The null estimated by `sample`, the draws' statistics."""
        values, counts = np.unique(sample, return_counts=True)
        return _Null(values, np.concatenate(([0], np.cumsum(counts))) / sample.size, scale, slack, False)

    @staticmethod
    def enumerated(item: np.ndarray) -> _Null:
        """The exact null of `item`: every sign pattern of its moved questions."""
        values, counts = _sign_null(item[item != 0])
        return _Null(values, np.concatenate(([0.0], np.cumsum(counts))) / counts.sum(), 1.0, _slack(item), True)

    def share(self, statistics: np.ndarray) -> np.ndarray:
        found: np.ndarray = self.shares[np.searchsorted(self.values, statistics / self.scale + self.slack, "right")]
        return found


@dataclass(frozen=True)
class _Family:
    """The step-down's counts: per member in order of p, the resamples in which the smallest p among it
    and the members after it is at most its own; `rows` resamples, `exact` when they are every sign
    pattern of the questions where some member moved."""

    order: list[int]
    counts: np.ndarray
    rows: int
    exact: bool


def _tail_counts(shares: np.ndarray, order: list[int], own: np.ndarray) -> np.ndarray:
    """Per position in `order`, the rows of `shares` (rows x members) whose smallest p among that member
    and the ones after it is at most the member's own p."""
    counts = np.zeros(len(order), dtype=np.int64)
    tail = np.ones(shares.shape[0])
    for position in range(len(order) - 1, -1, -1):
        tail = np.minimum(tail, shares[:, order[position]])
        counts[position] = np.count_nonzero(tail <= own[order[position]])
    return counts


def _widened_counts(shares: np.ndarray, order: list[int], own: np.ndarray, nulls: Sequence[_Null]) -> np.ndarray:
    """`_tail_counts` where some own p's are estimated. An exact null's p takes few values (4 moved
    questions: multiples of 1/16), so an estimated own p a draw's error below one of them (0.0624
    for 0.0633) misses every resample in which that member reaches it: the exact step-down 0.177,
    the estimate 0.062. So an exact member counts where its p is at most the estimated own p plus
    NEAR of its standard errors: never below the exact count unless the own p is off by more."""
    if all(null.exact for null in nulls):
        return _tail_counts(shares, order, own)
    counts = np.zeros(len(order), dtype=np.int64)
    for position, j in enumerate(order):
        width = 0.0 if nulls[j].exact else NEAR * (own[j] * (1 - own[j]) / shares.shape[0]) ** 0.5
        hit = np.zeros(shares.shape[0], dtype=bool)
        for k in order[position:]:
            hit |= shares[:, k] <= own[j] + (width if nulls[k].exact else 0.0)
        counts[position] = np.count_nonzero(hit)
    return counts


def _enumerated(items: Sequence[np.ndarray], moved: np.ndarray, nulls: Sequence[_Null],
                own: np.ndarray, order: list[int]) -> _Family:
    """Every sign pattern of the `moved` questions, applied to all members at once, 2^16 patterns at a
    time: the patterns of the first questions are the blocks, those of the rest are enumerated
    within each block, each member's sums added in question order as its own null's are."""
    values = np.column_stack(items)[moved]
    head = max(0, moved.size - 16)
    starts = _sign_sums(values[:head])
    counts = np.zeros(len(items), dtype=np.int64)
    for start in starts:
        sums = _sign_sums(values[head:], start)
        shares = np.column_stack([null.share(sums[:, j]) for j, null in enumerate(nulls)])
        counts += _tail_counts(shares, order, own)
    return _Family(order, counts, 2 ** moved.size, True)


def _resampled(items: Sequence[np.ndarray], method: Method, limit: int | None, resamples: int,
               sizes: np.ndarray | None = None) -> tuple[list[_Null], np.ndarray, np.ndarray, np.ndarray]:
    """The members' statistics under `resamples` random draws applied to all of them at once (the
    single-item test's: sign flips or bootstrap indices), the observed ones last (the +1), one row
    per draw; and each member's null, its own p and its single-item test's p. A null is exact when
    the member's own moved questions are `enumerable`; else it is its column of the draws, pooled
    with the columns of every member whose values are the same up to order and scale (and sign, for
    sign flips), so that such members get one p for one statistic, not estimates the draws order.
    With `sizes`, each item holds its clusters' sums and the bootstrap draws clusters (`_cluster_means`)."""
    n = items[0].size
    if method == "bootstrap" and sizes is not None:
        weight = sizes
        observed = np.array([float(item.sum()) / float(sizes.sum()) for item in items])
        shifted = [item - sizes * mean for item, mean in zip(items, observed, strict=True)]
        rng = np.random.default_rng(SEED)
        parts = []
        for done in range(0, resamples, BATCH):
            indices = rng.integers(0, n, (min(BATCH, resamples - done), n))
            held = sizes[indices].sum(axis=-1)
            parts.append(np.column_stack([data[indices].sum(axis=-1) / held for data in shifted]))
    elif method == "bootstrap":
        weight = np.ones(n)
        shifted = [item - float(item.mean()) for item in items]
        rng = np.random.default_rng(SEED)
        parts = []
        for done in range(0, resamples, BATCH):
            indices = rng.integers(0, n, (min(BATCH, resamples - done), n))
            parts.append(np.column_stack([data[indices].mean(axis=-1) for data in shifted]))
        observed = np.array([float(item.mean()) for item in items])
    else:
        stacked = np.column_stack(items)
        parts = [np.column_stack([_flip_sums(item, resamples) for item in items])] if n * resamples > KEPT_DRAWS else [
            signs.astype(float) @ stacked for signs in _flips(n, resamples)]
        observed = np.array([float(item.sum()) for item in items])
    rows = np.concatenate([*parts, observed[None, :]])
    scales = [float(np.abs(item).max()) for item in items]

    def key(j: int) -> tuple[tuple[float, float], ...]:
        if method != "bootstrap":
            return tuple((value, 1.0) for value in np.sort(np.abs(items[j]) / scales[j]).tolist())
        return tuple(sorted(zip((items[j] / scales[j]).tolist(), weight.tolist(), strict=True)))

    same: dict[tuple[tuple[float, float], ...], list[int]] = {}
    for j in range(len(items)):
        same.setdefault(key(j), []).append(j)
    nulls, single = [], []
    for j, item in enumerate(items):
        if method != "bootstrap" and enumerable(int(np.count_nonzero(item)), limit):
            null = _Null.enumerated(item)
            nulls.append(null)
            single.append(null.share(observed[j:j + 1])[0])
            continue
        slack = (1e-12 if method == "bootstrap" else _slack(item)) / scales[j]
        alone = _Null.of(rows[:, j] / scales[j], 1.0, slack)
        single.append(alone.share(observed[j:j + 1] / scales[j])[0])
        pooled = np.concatenate([rows[:, k] / scales[k] for k in same[key(j)]])
        nulls.append(_Null.of(pooled, scales[j], slack))
    own = np.array([null.share(observed[j:j + 1])[0] for j, null in enumerate(nulls)])
    return nulls, rows, own, np.array(single)


def _stepdown(items: Sequence[np.ndarray], method: Method, limit: int | None, resamples: int,
              sizes: np.ndarray | None = None) -> tuple[list[float], int | None]:
    """Each member's adjusted p, in the order given, and the resamples it was read from (None when
    exact: every sign pattern of the questions (clusters) where some member moved)."""
    moved = np.flatnonzero(np.any(np.vstack(items) != 0, axis=0))
    if method != "bootstrap" and enumerable(moved.size, limit):
        nulls = [_Null.enumerated(item) for item in items]
        observed = _in_order(np.column_stack(items)[moved])
        own = np.array([null.share(observed[j:j + 1])[0] for j, null in enumerate(nulls)])
        single = own
        order = sorted(range(len(items)), key=lambda j: own[j])
        family = _enumerated(items, moved, nulls, own, order)
    else:
        nulls, rows, own, single = _resampled(items, method, limit, resamples, sizes)
        order = sorted(range(len(items)), key=lambda j: own[j])
        shares = np.column_stack([null.share(rows[:, j]) for j, null in enumerate(nulls)])
        family = _Family(order, _widened_counts(shares, order, own, nulls), rows.shape[0], False)
    bound = holm([round(float(p), DIGITS) for p in single]) if all(null.exact for null in nulls) else None
    adjusted = [0.0] * len(items)
    running = 0.0
    for position, j in enumerate(family.order):
        running = max(running, int(family.counts[position]) / family.rows, float(single[j]))
        adjusted[j] = round(running, DIGITS) if bound is None else min(round(running, DIGITS), bound[j])
    return adjusted, None if family.exact else family.rows


def near(p: float, alpha: float, resamples: int) -> bool:
    """Whether a p estimated from `resamples` draws is within NEAR standard errors (sqrt(p(1-p)/B))
    of `alpha`: a verdict the draws' error could turn."""
    return bool(abs(p - alpha) < NEAR * (p * (1 - p) / resamples) ** 0.5)


def maxt(differences: Sequence[np.ndarray], method: Method, limit: int | None = None,
         alpha: float | None = None, clusters: Clusters | None = None) -> list[float | None]:
    """Step-down resampling adjusted p-values for drops (Westfall & Young 1993; Carterette 2012 for
    IR), one per item in the order given; None for an item whose differences are all 0: it has no
    statistic and leaves the family (whether all are 0 no resample changes, so dropping it costs
    the family's error control nothing).

    Every item holds its differences over the same questions in the same order, and each resample
    is applied to every item at once, so items that move together stay together. Each item's
    statistic is standardised by its own null distribution: in every resample, its one-sided p
    (the minP form of max-T), so metrics on any scale and of any spread compete fairly. That null
    is exact, every sign pattern of the item's own moved questions, when `enumerable` (as
    `randomization_p`); else it is estimated from the draws, one null pooled for the items whose
    values are the same up to order and scale (and sign), so that items with the same null tie
    instead of being ordered by the draws' noise. Items are taken from the smallest p up; an item's
    adjusted p is the share of resamples in which the smallest p among it and the items after it
    is at most its own, at least the adjusted p before it and at least its own p.

    Exact when the questions where some item moved are `enumerable` with `limit`: every sign
    pattern of them, 2^16 at a time. Else `randomization_p`'s random flips (`bootstrap_p`'s
    indices for the bootstrap) with the +1, and with `alpha` given, a family whose adjusted p's
    include one `near` alpha is drawn again with MORE resamples (once: the bound on its cost).
    An estimate is never cut to Holm's bound over the single-item p's unless every one of those
    is exact: Holm's over estimated p's multiplies their error, and fell below the exact p.

    With `clusters` (the questions' clusters), the same over the clusters: each item's differences
    summed per cluster, whole clusters flipped (or drawn), exact when the clusters where some item
    moved are `enumerable`; an item whose clusters' sums are all 0 leaves the family (None).
    """
    data = [np.asarray(item, dtype=float) for item in differences]
    if len({item.size for item in data}) > 1:
        raise ValueError("max-T resamples every item over the same questions: the lengths differ")
    sizes = None
    if clusters is not None:
        sizes = totals(data[0], clusters)[1]
        data = [totals(item, clusters)[0] for item in data]
    members = [index for index, item in enumerate(data) if item.any()]
    adjusted: list[float | None] = [None] * len(data)
    if not members:
        return adjusted
    items = [data[index] for index in members]
    found, rows = _stepdown(items, method, limit, RESAMPLES, sizes)
    if rows is not None and alpha is not None and any(near(p, alpha, rows) for p in found):
        found, rows = _stepdown(items, method, limit, MORE, sizes)
    for index, p in zip(members, found, strict=True):
        adjusted[index] = p
    return adjusted
