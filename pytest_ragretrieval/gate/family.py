"""The family: the metric items whose p-values are adjusted together, and the drops too small to see.

Pure, as the judge: the comparisons and per-question values are handed over. An item whose
per-question differences are all 0 has no statistic and is no member: no resample moves it, so it
can never fail and costs the others nothing (its p stays the test's own, 1).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from msgspec import structs

from ..bar.clusters import Clustering
from ..baseline.format import Recorded
from ..baseline.since import paired
from ..config.settings import Config
from ..core.values import EPSILON, fmt
from ..record.types import Adjustment, Comparison
from ..scoring.evaluate import RetrieverResult
from .checks import per_question, recorded_values

if TYPE_CHECKING:
    from ..scoring.stats import Adjustment as Adjusting
    from ..scoring.stats import Method


Key = tuple[str, str, str]
"""A member of the family: (retriever, metric label, exam): an item judged under two exams is two members."""


@dataclass(frozen=True)
class Member:
    """One item of the family: its comparison, the questions it was compared on (in id order) and its
    per-question differences (today - baseline)."""

    key: Key
    comparison: Comparison
    ids: tuple[str, ...]
    differences: tuple[float, ...]


def member(key: Key, comparison: Comparison, bar: Recorded, result: RetrieverResult,
           comparable: frozenset[str]) -> Member | None:
    """The item as a member of the family, its differences taken against `bar` (the approved rankings
    scored under the member's exam, as its verdict is judged), or None when none of them is other than 0."""
    pairs = paired(key[1], recorded_values(bar), per_question(result), comparable)
    differences = tuple(after - before for before, after in zip(pairs.before, pairs.after, strict=True))
    return Member(key, comparison, pairs.ids, differences) if any(differences) else None


def used(configured: Adjusting, members: Sequence[Member]) -> Adjusting:
    """The adjustment used: the configured one, except that max-T, which resamples every item over the
    same questions, gives way to Holm when the members were compared on different questions (possible
    only when the baseline's entries hold different questions)."""
    if configured == "maxt" and len({found.ids for found in members}) > 1:
        return "holm"
    return configured


def adjusted(
    members: Sequence[Member], method: Literal["maxt", "holm"], significance: Method, alpha: float,
    clustering: Clustering | None = None,
) -> dict[Key, Comparison]:
    """Each member's comparison with its p adjusted over the family by `method` ("maxt" or "holm");
    max-T draws more resamples when a resampled p lands near `alpha`, and flips or draws whole clusters
    under `clustering` (Holm adjusts the members' own p's, each already over the clusters)."""
    import numpy as np

    from ..scoring.stats import holm, labels, maxt

    if method == "maxt":
        clusters = None if clustering is None else labels([clustering.key(qid) for qid in members[0].ids])
        found = maxt([np.asarray(item.differences) for item in members], significance, alpha=alpha,
                     clusters=clusters)
    else:
        found = list(holm([item.comparison.p_value or 0.0 for item in members]))
    family = {}
    for item, p in zip(members, found, strict=True):
        if p is None:  # its clusters' sums are all 0: no resample moves it, its own p (1) stands
            continue
        family[item.key] = structs.replace(item.comparison, p_value=p, family=len(members),
                                           adjustment=Adjustment(method))
    return family


def harshest(found: Sequence[Comparison | None]) -> Comparison | None:
    """An item's comparison under the clusterings it is judged under, the one that fails it soonest: one
    whose clusters leave it to the tolerance alone (no p), else the smallest p (the first on a tie)."""
    present = [comparison for comparison in found if comparison is not None]
    return min(present, key=lambda c: -1.0 if c.p_value is None else c.p_value) if present else None


def power_lines(config: Config, comparisons: Mapping[str, Mapping[str, Comparison]]) -> list[str]:
    """In significance mode, one line per retriever whose minimum detectable effect exceeds `detect`
    (its worst metric, the first in the configured order on a tie): the drop the set detects reliably
    (80% power), never "cannot be told from noise", since the same run may catch a smaller drop; and
    the questions that would detect `detect` reliably: n = ((z0.975 + z0.80) sd / detect)^2 (Sakai
    2016's topic-set size), which with the MDE's sd is n * (mde / detect)^2, rounded up.
    `comparisons`: retriever -> label -> comparison, in the configured order (an MDE needs 2 questions)."""
    if config.significance == "none":
        return []
    detect = config.detect
    lines = []
    for name, found in comparisons.items():
        blind = [(c.mde, label, c.questions) for label, c in found.items() if c.mde is not None
                 and c.mde > detect + EPSILON]
        if blind:
            mde, label, count = max(blind, key=lambda entry: entry[0])
            needed = math.ceil(count * (mde / detect) ** 2 - EPSILON)
            lines.append(f"{name} {label}: {count} questions detect drops of {fmt(mde)} or more reliably "
                         f"(80% power), smaller ones only sometimes; about {needed} would detect {detect:g} reliably")
    return lines
