"""What an update writes as a retriever's bar (the Verdicts page, "The bar"), from plain values: the entry the
baseline holds, today's scored rankings, the questions compared, each exam's differences from the bar and
whether a verdict failed. No `Judge`: the gate's update and the review's check call the same rule."""
from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from ..baseline.format import Recorded
from ..core.values import EPSILON
from ..scoring.evaluate import RetrieverResult
from .rule import kept_bar

Approved = tuple[dict[str, tuple[str, ...]], dict[str, dict[str, float]]]
"""(question id -> the approved ranking kept, metric label -> question id -> a format-3 value bar kept)."""


def raises(deltas: Sequence[Mapping[str, float]], tolerances: Mapping[str, float]) -> bool:
    """Under every exam sat (`deltas`, one mapping per exam: gated metric label -> today's mean minus the
    bar's, for the metrics compared), no gated metric below its bar (within EPSILON) and one above it by more
    than its tolerance (`tolerances`, by label)."""
    for found in deltas:
        if any(delta < -EPSILON for delta in found.values()):
            return False
        if not any(delta > tolerances[label] + EPSILON for label, delta in found.items()):
            return False
    return True


def next_approved(entry: Recorded, today: RetrieverResult, comparable: Collection[str],
                  deltas: Sequence[Mapping[str, float]], tolerances: Mapping[str, float], lowered: bool,
                  may_raise: bool = True) -> Approved:
    """What an update writes as the bar, where it differs from what it records: (the approved rankings, a value
    bar kept from a format-3 file). Today's rankings become the approved ones only where the update raises the
    bar (`raises`; never where `may_raise` is false: a judged segment below its bar), or lowers it (`lowered`:
    a gated verdict failed, recorded with --rag-allow-regression, refused otherwise). Any other update keeps
    the approved rankings of the questions still compared, and so a kept value bar."""
    if lowered or (may_raise and raises(deltas, tolerances)):
        return {}, {}
    approved = entry.approved_rankings()
    rankings = {q.id: q.ranking for q in today.questions}
    kept = {qid: approved[qid] for qid in sorted(rankings) if qid in comparable and qid in approved
            and approved[qid] != rankings[qid]}
    values = {q.id: q.values for q in today.questions}
    bars = {}
    for label, bar in entry.bar.items():
        held = kept_bar(bar, {qid: v[label] for qid, v in values.items() if label in v}, comparable)
        if held:
            bars[label] = held
    return kept, bars
