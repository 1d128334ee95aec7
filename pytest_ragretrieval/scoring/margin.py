"""Non-inferiority: how far below 0 the mean difference may plausibly lie, and how many questions would tell.

A pass says only that the drop is not shown to be real. The lower bound says how large a drop the data
still allow: the alpha-quantile of the same percentile bootstrap as the 95% interval (same seed, same
draws), a one-sided (1 - alpha) bound, so "the bound is at or above -margin" is a one-sided test at alpha
that the mean drop is smaller than `margin`. The questions needed are the non-inferiority sample size at
80% power, ((z(1 - alpha) + z(0.80)) sd / margin)^2 when nothing changed in truth, sd the spread of the
observed per-question differences; an observed drop leaves less room below the margin, and is counted.

Where questions come in clusters (`scoring/stats.py`'s `Clusters`) the bound resamples whole clusters, as
the 95% interval does, and the clusters needed are the same formula over the clusters, sd the spread of
their residual sums s_g - mean m_g in questions of the mean cluster (the ratio estimator's standard error,
the spread the cluster bootstrap draws): G = ((z(1 - alpha) + z(0.80)) sd_c / room)^2. Each question its
own cluster, sd_c is sd and G the questions needed.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

from ..core.values import DIGITS
from .stats import Clusters, _bootstrap_distribution, _cluster_means, totals

POWER = 0.80
LARGE = 800
"""From this many questions the bound is the normal one: the bootstrap's means are normal there, and
below it the bootstrap reads the resamples `scoring/stats.py` keeps (40 ms an item at 799 questions;
fresh ones cost 0.6 s at 999, seconds at 10,000)."""


def lower_bound(differences: Sequence[float], alpha: float, clusters: Clusters | None = None) -> float | None:
    """The one-sided (1 - alpha) lower bound of the mean per-question difference (after - before): the
    alpha-quantile of the bootstrap means, or from LARGE questions the same quantile of their normal
    limit, mean - z(1 - alpha) sd / sqrt(n) (sd over n, as the bootstrap spreads); None below 2
    questions, 0 when no question moved. With `clusters`, whole clusters drawn (`_cluster_means`), and
    from LARGE clusters the normal limit of their ratio mean."""
    data = np.asarray(differences, dtype=float)
    if data.size < 2:
        return None
    if not data.any():
        return 0.0
    if clusters is not None:
        sums, sizes = totals(data, clusters)
        if sums.size < LARGE:
            return round(float(np.percentile(_cluster_means(sums, sizes), 100 * alpha)), DIGITS)
        average = float(sums.sum() / sizes.sum())
        spread = float(np.sqrt(np.sum((sums - average * sizes) ** 2))) / float(sizes.sum())
        return round(average - NormalDist().inv_cdf(1 - alpha) * spread, DIGITS)
    if data.size >= LARGE:
        spread = float(data.std()) / math.sqrt(data.size)
        return round(float(data.mean()) - NormalDist().inv_cdf(1 - alpha) * spread, DIGITS)
    return round(float(np.percentile(_bootstrap_distribution(data), 100 * alpha)), DIGITS)


def questions_needed(differences: Sequence[float], margin: float, alpha: float) -> int | None:
    """The questions that would show the item non-inferior at `margin` with 80% power at the observed
    spread of `differences`, if its true mean difference were the observed one, or 0 where that rose (a
    rise is not counted on): ((z(1 - alpha) + z(0.80)) sd / (margin + min(mean, 0)))^2. None below 2
    questions, when nothing moved (no spread: nothing to decide), and when the observed drop is the
    margin or more (more questions would rather show the drop: no number shows it ruled out)."""
    data = [float(value) for value in differences]
    if len(data) < 2 or not any(data):
        return None
    average = math.fsum(data) / len(data)
    room = margin + min(average, 0.0)
    if room <= 1e-9:
        return None
    sd = math.sqrt(math.fsum((value - average) ** 2 for value in data) / (len(data) - 1))
    normal = NormalDist()
    z = normal.inv_cdf(1 - alpha) + normal.inv_cdf(POWER)
    return max(2, math.ceil((z * sd / room) ** 2 - 1e-9))


def clusters_needed(differences: Sequence[float], margin: float, alpha: float, clusters: Clusters) -> int | None:
    """The clusters (documents, templates) that would show the item non-inferior at `margin` with 80% power,
    clusters like these (`questions_needed` over the clusters: sd_c the spread of the clusters' residual sums
    in mean-cluster units); None where `questions_needed` is, and below 2 clusters."""
    data = np.asarray(differences, dtype=float)
    if data.size < 2 or not data.any():
        return None
    sums, sizes = totals(data, clusters)
    if sums.size < 2:
        return None
    average = float(sums.sum() / sizes.sum())
    room = margin + min(average, 0.0)
    if room <= 1e-9:
        return None
    residuals = (sums - average * sizes) / float(sizes.mean())
    sd = math.sqrt(math.fsum(float(value) ** 2 for value in residuals) / (sums.size - 1))
    normal = NormalDist()
    z = normal.inv_cdf(1 - alpha) + normal.inv_cdf(POWER)
    return max(2, math.ceil((z * sd / room) ** 2 - 1e-9))
