"""Segments judged (`segments = ["KEY", ...]`): each retriever x metric x segment value is an item, judged
against its bar over the value's comparable questions, as the whole set is (the Verdicts page, "Segments").

Each segment value's items are a family of their own, per exam, adjusted apart from the whole-set items and from
every other value: the whole set's family and p-values are the same with or without `segments`, and adding a
value (a language) moves no other value's p. A family per value, not per key, because max-T resamples its members
over the same questions, which a value's items share and a key's values never do (they split the questions);
so each value is held to the family-wise error rate the whole set is held to, as if it were an eval set of its own.
A value with fewer than `min_questions` comparable questions is shown, not judged: no member of any family.

Membership is today's and the base's (evalset/segments.py): a question the base's exam puts in a value stays in
it, so a retag cannot take a failing segment below `min_questions`. Pure, as the judge.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from msgspec import structs

from ..bar.exam import base_questions
from ..bar.sides import Side
from ..baseline.exams import BASE, EXAM_NAMES, TODAY
from ..core.errors import RagError
from ..core.values import EPSILON, fmt, signed
from ..evalset.segments import Segment, members
from ..labels.gold import by_question
from ..record.types import Comparison
from .checks import MetricCheck, Outcome, compare
from .family import Member, adjusted, member, used
from .items import ItemKey, Skip
from .judge import Judge

Key = tuple[str, str, str, str]
"""One segment item under one exam: (segment name `KEY:VALUE`, retriever, metric label, exam)."""


class Segments:
    """The segment items of one judged run, beside the judge whose sides, bar and settings they read."""

    def __init__(self, judge: Judge, selected: Sequence[ItemKey] = ()) -> None:
        self.judge = judge
        self.config = judge.config
        self.selected = [key for key in selected if key.kind == "segment"]
        self._members: dict[Segment, frozenset[str]] | None = None
        self._raw: dict[Key, Comparison | None] = {}
        self._family: dict[Key, Comparison] | None = None

    def membership(self) -> dict[Segment, frozenset[str]]:
        """Each segment value's questions: where today's eval set or the base's exam puts them."""
        if self._members is None:
            judge = self.judge
            base = () if judge.baseline is None or not self.config.segments else base_questions(
                judge.baseline.fingerprint, judge.kept)
            self._members = members(self.config.segments, judge.questions, base)
        return self._members

    def questions(self, segment: str) -> frozenset[str]:
        """The segment's questions comparable with the baseline."""
        found = self.judge.since()
        ids = self.membership().get(Segment.parse(segment), frozenset())
        return ids & found.questions.comparable if found is not None else frozenset()

    def judged(self, comparison: Comparison) -> bool:
        """Whether a comparison is over enough questions to be judged (`min_questions`), not only shown."""
        return comparison.questions >= self.config.min_questions

    def raw(self, segment: str, name: str, label: str, exam: str = TODAY) -> Comparison | None:
        """The comparison over the segment's comparable questions, its p the test's own; p None (the test's
        in `p_unadjusted`) where the segment is shown, not judged."""
        key = (segment, name, label, exam)
        if key not in self._raw:
            side = self.judge.side(name, exam)
            found = None
            if side is not None and label in side.bar.metrics:
                found = compare(label, side.bar, side.today, self.config.significance, self.questions(segment))
            if found is not None:
                found = structs.replace(found, value_all=None)
                if not self.judged(found):
                    found = structs.replace(found, p_value=None)
            self._raw[key] = found
        return self._raw[key]

    def comparison(self, segment: str, name: str, label: str, exam: str = TODAY) -> Comparison | None:
        """The comparison, its p adjusted over the segment value's family where it is a member."""
        raw = self.raw(segment, name, label, exam)
        if raw is None or raw.p_value is None:
            return raw
        return self.family().get((segment, name, label, exam), raw)

    def _items(self) -> list[tuple[str, str, str]]:
        """(segment, retriever, label) of the items judged: those selected, else every configured one."""
        if self.selected:
            return [(key.segment[0], key.retriever, key.segment[1]) for key in self.selected]
        return [(segment.name, spec.name, metric.label) for segment in self.membership()
                for spec in self.config.retrievers for metric in self.config.metrics]

    def family(self) -> dict[Key, Comparison]:
        """Every judged segment item's comparison, its p adjusted in its value's family, each exam apart (as
        `Judge.families`: an item both exams hold takes the base's family's p)."""
        if self._family is None:
            self._family = {}
            grouped: dict[str, list[Member]] = {}
            for segment, name, label in self._items():
                for side in self.judge.sides(name):
                    found = self.raw(segment, name, label, side.exam)
                    if found is None or found.p_value is None:
                        continue
                    item = member((name, label, side.exam), found, side.bar, side.today, self.questions(segment))
                    if item is not None:
                        grouped.setdefault(segment, []).append(item)
            differs = {name for name in self.judge.runs if self.judge.side(name, BASE) is not None}
            for segment, held in grouped.items():
                base = [item for item in held if (item.key[2] == BASE) == (item.key[0] in differs)]
                today = [item for item in held if item.key[2] == TODAY] if differs else []
                for group in (today, base):
                    method = used(self.config.adjustment, group)
                    if group and method != "none" and self.config.significance != "none":
                        self._family.update({(segment, *key): comparison for key, comparison in adjusted(
                            group, method, self.config.significance, self.config.alpha).items()})
        return self._family

    def outcome(self, key: ItemKey) -> Outcome:
        """A segment item's verdict; raises Skip where its retriever could not run here."""
        try:
            return self._outcome(key)
        except RagError as exc:
            return Outcome(False, str(exc))

    def _outcome(self, key: ItemKey) -> Outcome:
        judge, (segment, label) = self.judge, key.segment
        run = judge.runs[key.retriever]
        if run.skipped is not None:
            raise Skip(run.skipped)
        if run.error is not None:
            return Outcome(False, str(run.error))
        if judge.update:
            refused = self.refused(key)
            if refused is not None:
                return Outcome(False, refused)
            return Outcome(True, f"segment {segment}: {label} of {key.retriever!r}: its questions' rankings are "
                           "recorded with the retriever's")
        blocked = judge.blocked(key.retriever)
        if blocked is not None:
            return blocked
        return self.verdict(segment, key.retriever, label)

    def verdict(self, segment: str, name: str, label: str) -> Outcome:
        """Judged under each exam, failing when it fails under either (as `Judge.metric_verdict`)."""
        outcomes = [(side.exam, self.exam_verdict(segment, name, label, side)) for side in self.judge.sides(name)]
        if not outcomes:
            return Outcome(True, f"segment {segment}: {label} of {name!r}: nothing comparable with the baseline")
        failed = [(exam, outcome) for exam, outcome in outcomes if not outcome.passed]
        exam, outcome = failed[0] if failed else outcomes[0]
        if len(outcomes) == 1:
            return outcome
        other = next(found for name_, found in outcomes if name_ != exam)
        return replace(outcome, summary=f"{outcome.summary} under {EXAM_NAMES[exam]}",
                       details=(*outcome.details, f"under {EXAM_NAMES[BASE if exam == TODAY else TODAY]}: "
                                f"{other.summary}"))

    def exam_verdict(self, segment: str, name: str, label: str, side: Side) -> Outcome:
        """One segment item under one exam: shown, not judged, below `min_questions`; else the whole set's check
        over the segment's questions."""
        head = f"segment {segment}: "
        comparison = self.comparison(segment, name, label, side.exam)
        if comparison is None:
            return Outcome(True, f"{head}{label} of {name!r}: no question of the segment in common with the "
                           "baseline to compare it on")
        if not self.judged(comparison):
            before, after, count = comparison.baseline, comparison.value, comparison.questions
            assert before is not None
            return Outcome(True, f"{head}{label} of {name!r}: {fmt(after)} ({signed(after - before)} against "
                           f"{fmt(before)}) over {count} question{'s' if count != 1 else ''}, "
                           f"fewer than min_questions = {self.config.min_questions}: shown, not judged", (), comparison)
        metric = next(spec for spec in self.config.metrics if spec.label == label)
        judge = self.judge
        check = MetricCheck(name, metric, self.config.tolerance.for_metric(metric), self.config.significance,
                            self.config.alpha, judge.changes(name), edited=by_question(judge.edited_gold()))
        found = check.evaluate(side.bar, side.today, comparison, self.questions(segment))
        return replace(found, summary=head + found.summary)

    def fails(self, name: str) -> bool:
        """Whether a segment item of `name` fails against its bar (under either exam): an update with
        --rag-allow-regression then takes today's rankings as approved, as for a whole-set item."""
        return any(not self.verdict(segment.name, name, metric.label).passed
                   for segment in self.membership() for metric in self.config.metrics)

    def lowered(self, name: str) -> bool:
        """Whether a judged segment item of `name` is below its bar under some exam (within 1e-9): an update
        that raises the whole set's bar must not take today's rankings as approved over it."""
        for segment in self.membership():
            for metric in self.config.metrics:
                for side in self.judge.sides(name):
                    found = self.raw(segment.name, name, metric.label, side.exam)
                    if found is not None and self.judged(found) and (found.delta or 0.0) < -EPSILON:
                        return True
        return False

    def refused(self, key: ItemKey) -> str | None:
        """Why an update will not record `key`'s retriever: a judged segment item fails against its bar and
        --rag-allow-regression was not given."""
        judge = self.judge
        if judge.allow_regression or judge.recorded(key.retriever) is None:
            return None
        segment, label = key.segment
        outcome = self.verdict(segment, key.retriever, label)
        if outcome.passed:
            return None
        return (f"refused to record {key.retriever!r}: {outcome.summary}; fix it and re-run, or pass "
                "--rag-allow-regression to record it, which lowers the segment's bar: the pull request then needs "
                "the approval label")

    def notes(self) -> list[str]:
        """One line per segment value shown, not judged: fewer comparable questions than `min_questions`."""
        found = []
        for segment in self.membership():
            counts = [comparison.questions for name in self.judge.runs for metric in self.config.metrics
                      if (comparison := self.raw(segment.name, name, metric.label)) is not None
                      and not self.judged(comparison)]
            if counts:
                found.append(f"segment {segment.name}: {min(counts)} comparable questions, fewer than min_questions = "
                             f"{self.config.min_questions}: its items are shown, not judged")
        return found

    def record(self, name: str, exam: str) -> dict[str, dict[str, Comparison]]:
        """`name`'s segment comparisons under `exam`, by segment name then label, as `--rag-json` writes them."""
        found: dict[str, dict[str, Comparison]] = {}
        for segment in self.membership():
            for metric in self.config.metrics:
                comparison = self.comparison(segment.name, name, metric.label, exam)
                if comparison is not None:
                    found.setdefault(segment.name, {})[metric.label] = comparison
        return found


def refusals(segments: Segments, keys: Sequence[ItemKey]) -> Mapping[str, list[str]]:
    """The update's refusals from the selected segment items, by retriever."""
    found: dict[str, list[str]] = {}
    for key in keys:
        if key.kind == "segment":
            reason = segments.refused(key)
            if reason is not None and f"rag: {reason}" not in found.get(key.retriever, []):
                found.setdefault(key.retriever, []).append(f"rag: {reason}")
    return found
