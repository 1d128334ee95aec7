"""Comparisons between configurations: for each pair of retrievers and each metric, how far apart
they are, how often each wins a question, and whether the difference could be noise.

They inform and never fail an item. Each uses the per-question values of this run's two
retrievers over the questions both scored: the difference of the means (a - b), win/tie/loss
counts (a question is a tie when the values are within EPSILON), and a
paired two-sided test (`significance`'s method, randomization when that is "none") with the
95% bootstrap interval of the mean difference; the same machinery as the baseline comparison.
Two retrievers over different chunkings are compared on the span metrics only: chunk-id metrics count
chunks, and two chunkings' chunks are two different exams (a note says so under the table).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..bar.clusters import Clustering
from ..config.settings import Config
from ..core.values import DIGITS, EPSILON
from ..record.types import PairComparison
from ..scoring.evaluate import RetrieverResult, Run

if TYPE_CHECKING:
    from ..scoring.stats import Method

COMBINING = ("hybrid", "rerank")
"""Types whose default comparisons are against each of their sources."""


@dataclass(frozen=True)
class Pairs:
    """This run's comparisons, the test that gave their p-values, and what keeps some from being shown."""

    comparisons: tuple[PairComparison, ...] = ()
    method: Method = "randomization"
    notes: tuple[str, ...] = ()


def pairs(config: Config) -> list[tuple[str, str]]:
    """`compare` as configured, else each hybrid or rerank retriever against each of its sources."""
    if config.compare is not None:
        return list(config.compare)
    return [(spec.name, source) for spec in config.retrievers if spec.type in COMBINING for source in spec.sources]


def compare_pair(a: RetrieverResult, b: RetrieverResult, label: str, method: Method,
                 clustering: Clustering | None = None) -> PairComparison:
    """One pair on one metric, with `method`'s p and the bootstrap interval, whole clusters flipped or
    drawn under `clustering`."""
    mine = {q.id: q.values[label] for q in a.questions if label in q.values}
    theirs = {q.id: q.values[label] for q in b.questions if label in q.values}
    shared = [qid for qid in mine if qid in theirs]
    after = [mine[qid] for qid in shared]
    before = [theirs[qid] for qid in shared]
    wins = sum(1 for x, y in zip(after, before, strict=True) if x > y + EPSILON)
    losses = sum(1 for x, y in zip(after, before, strict=True) if x < y - EPSILON)
    delta = round(a.metrics.get(label, 0.0) - b.metrics.get(label, 0.0), DIGITS)
    found = PairComparison(a.name, b.name, label, delta, wins, len(shared) - wins - losses, losses)
    from ..scoring.stats import labels, paired_test

    clusters = None if clustering is None else labels([clustering.key(qid) for qid in shared])
    test = paired_test(before, after, method, alternative="two-sided", clusters=clusters)
    if test is None:
        return found
    return PairComparison(found.a, found.b, label, delta, found.wins, found.ties, found.losses, test.p_value, test.ci95)


def compare_configurations(config: Config, runs: Mapping[str, Run], labels: Sequence[str] | None = None,
                           clustering: Clustering | None = None) -> Pairs:
    """Every configured pair whose two retrievers ran this session, on every metric, over `clustering`'s
    clusters (today's)."""
    method: Method = config.significance if config.significance != "none" else "randomization"
    notes: list[str] = []
    found: list[PairComparison] = []
    for a, b in pairs(config):
        results = [runs[name].result if name in runs else None for name in (a, b)]
        if results[0] is None or results[1] is None:
            absent = [name for name, result in zip((a, b), results, strict=True) if result is None]
            if all(name in runs for name in absent):
                why = ", ".join(f"{name} {'was skipped' if runs[name].skipped else 'failed'}" for name in absent)
                notes.append(f"{a} vs {b}: not compared, {why}")
            continue
        wanted = labels if labels is not None else [spec.label for spec in config.metrics]
        chunkings = [config.retriever(name).chunking for name in (a, b)]
        if chunkings[0] != chunkings[1]:
            spans = {spec.label for spec in config.shown if spec.metric.spans}
            wanted = [label for label in wanted if label in spans]
            named = " and ".join(repr(chunking or "default") for chunking in chunkings)
            notes.append(f"{a} vs {b}: chunkings {named} differ, so they are compared on span metrics only; "
                         "their chunk-id metrics are shown, never compared")
        for label in wanted:
            found.append(compare_pair(results[0], results[1], label, method, clustering))
    return Pairs(tuple(found), method, tuple(notes))
