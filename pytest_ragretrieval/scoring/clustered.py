"""Questions that move together, as the paired tests read them: each question's cluster as an integer,
and per cluster the sum of its questions' differences and its size (`scoring/stats.py` flips or draws
those sums; `bar/clusters.py` says which questions form a cluster)."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

Clusters = np.ndarray
"""Each question's cluster as an integer, 0 up in order of the clusters' first questions (`labels`)."""


def labels(keys: Sequence[str]) -> Clusters | None:
    """The questions' cluster keys (in the questions' order) as `Clusters`; None when every question is
    its own cluster: the tests then run question by question, exactly as without clusters."""
    first: dict[str, int] = {}
    found = np.array([first.setdefault(key, len(first)) for key in keys], dtype=np.int64)
    return None if len(first) == len(keys) else found


def totals(data: np.ndarray, clusters: Clusters) -> tuple[np.ndarray, np.ndarray]:
    """Per cluster, in order, the sum of its questions' `data` (added in question order) and its size."""
    count = int(clusters.max()) + 1
    sums = np.zeros(count)
    for index, value in zip(clusters.tolist(), data.tolist(), strict=True):
        sums[index] += value
    return sums, np.bincount(clusters, minlength=count).astype(float)
