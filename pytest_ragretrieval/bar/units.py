"""Lowerings that only come from a changed unit (the Verdicts page, "A re-chunk in chunk-id mode").

When a chunks file is cut anew and `ragretrieval relabel --apply` moves each split gold chunk's label to
the chunks its text went to, recall's denominator grows on those questions: a ranking that found the old
chunk finds one of its halves, and scores less. That is a change of the unit, not of the retriever. A
question's drop is unit-only when the approved ranking, carried through the relabel's mapping (each old
chunk id at its place replaced by the new chunk holding most of its text, so that one place stays one
chunk), and scored under today's exam, is no higher than today's ranking: the mapping alone reproduces
the drop. A drop on a question whose gold did not change is never unit-only. Both kinds still lower the
bar: they are told apart, never passed. Pure.
"""
from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..baseline.format import Baseline, Recorded
from ..baseline.since import asked_alike
from ..core.values import EPSILON, listed
from ..scoring.evaluate import RetrieverResult, Run
from .exam import Exam, Scorer


@dataclass(frozen=True)
class UnitDrops:
    """One retriever x metric's dropping questions, sorted by what explains each drop."""

    unit_only: tuple[str, ...] = ()
    """Relabelled questions whose drop the approved ranking carried through the mapping reproduces."""
    untouched: tuple[str, ...] = ()
    """Questions whose gold did not change, and that dropped."""
    unexplained: tuple[str, ...] = ()
    """Relabelled questions that dropped below what the mapping reproduces."""

    @property
    def kind(self) -> str:
        """`unit-only` when every drop is; `retriever` when one is not; "" when no question dropped."""
        if self.untouched or self.unexplained:
            return RETRIEVER
        return UNIT_ONLY if self.unit_only else ""

    def text(self) -> str:
        """`unit-only: 2 relabelled questions (q1, q4) ...`, or the drops the unit does not explain."""
        if self.kind == UNIT_ONLY:
            return (f"unit-only: {_questions(self.unit_only)} whose gold the re-chunk split, each dropping no lower "
                    "than the approved ranking carried through the relabel's mapping")
        parts = [f"{_questions(self.untouched)} whose gold did not change"] if self.untouched else []
        if self.unexplained:
            parts.append(f"{_questions(self.unexplained)} relabelled, below the approved ranking carried through "
                         "the relabel's mapping")
        unit = f"; {len(self.unit_only)} more only from the changed unit" if self.unit_only else ""
        return f"not from the changed unit: drops on {' and '.join(parts)}{unit}"


UNIT_ONLY = "unit-only"
RETRIEVER = "retriever"
"""The two kinds of lowering across a chunk-id re-chunk, as every output names them."""


def _questions(ids: Sequence[str]) -> str:
    return f"{len(ids)} question{'' if len(ids) == 1 else 's'} ({listed(ids)})"


def carried(ranking: Sequence[str], mapping: Mapping[str, Sequence[str]]) -> tuple[str, ...]:
    """An approved ranking in today's units: each chunk the relabel moved stands at its place for the first
    chunk the mapping gives (the one holding most of its text); a chunk met twice keeps its first place."""
    found: dict[str, None] = {}
    for chunk_id in ranking:
        moved = mapping.get(chunk_id)
        found.setdefault(moved[0] if moved else chunk_id, None)
    return tuple(found)


def unit_drops(label: str, name: str, approved: Mapping[str, Sequence[str]], base: Exam, today: Exam,
               rankings: Mapping[str, Sequence[str]], mapping: Mapping[str, Sequence[str]], scorer: Scorer,
               ids: Collection[str]) -> UnitDrops:
    """Which of the questions `ids` dropped on `label` (the approved ranking under the base's exam against
    today's ranking under today's), and whether the relabel's `mapping` (old chunk id -> new ones) explains
    each drop."""
    shared = [qid for qid in sorted(ids) if qid in base and qid in today and qid in approved]
    before = _values(base.score(scorer, name, approved, shared), label)
    after = _values(today.score(scorer, name, rankings, shared), label)
    relabelled = [qid for qid in shared if base.differs(today, [qid])]
    moved = {qid: carried(approved[qid], mapping) for qid in relabelled}
    expected = _values(today.score(scorer, name, moved, relabelled), label)
    unit_only, untouched, unexplained = [], [], []
    for qid in shared:
        if qid not in before or qid not in after or after[qid] >= before[qid] - EPSILON:
            continue
        if qid not in moved:
            untouched.append(qid)
        elif qid in expected and after[qid] >= expected[qid] - EPSILON:
            unit_only.append(qid)
        else:
            unexplained.append(qid)
    return UnitDrops(tuple(unit_only), tuple(untouched), tuple(unexplained))


class Judging(Protocol):
    """What `note` reads of the gate's judge (`gate/judge.py`), which the bar does not import."""

    units: Mapping[str, Sequence[str]]
    scorer: Scorer
    runs: Mapping[str, Run]
    baseline: Baseline | None
    fingerprint: Mapping[str, Any]

    def recorded(self, name: str) -> Recorded | None: ...
    def base_exam(self, name: str) -> Exam | None: ...
    def today_exam(self, name: str) -> Exam: ...


def note(judge: Judging, name: str, label: str) -> str:
    """` [unit-only: ...]` or ` [not from the changed unit: ...]`, what the gate's failure and the update's
    refusal add after a chunk-id re-chunk (the judge holds the relabel's mapping); "" elsewhere."""
    entry, run, base = judge.recorded(name), judge.runs.get(name), judge.base_exam(name)
    if not judge.units or entry is None or run is None or run.result is None or base is None:
        return ""
    rankings = {q.id: q.ranking for q in run.result.questions}
    drops = unit_drops(label, name, entry.approved_rankings(), base, judge.today_exam(name), rankings, judge.units,
                       judge.scorer, asked_alike(judge.baseline.fingerprint if judge.baseline is not None else {},
                                                 judge.fingerprint))
    return f" [{drops.text()}]" if drops.kind else ""


def _values(result: RetrieverResult, label: str) -> dict[str, float]:
    return {q.id: q.values[label] for q in result.questions if label in q.values}
