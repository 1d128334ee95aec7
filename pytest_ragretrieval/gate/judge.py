"""The verdicts: is the baseline comparable, what does each item say, what may be recorded.

Pure: built from the config, the eval set, the baseline, this run's fingerprint and the runs,
so every verdict can be tested without pytest, a database or a model.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from msgspec import structs

from ..bar.clusters import Clustering, changed_lines, judged_under
from ..bar.exam import Exam, Scorer
from ..bar.places import Edit, Rechunk
from ..bar.rule import Replacement, replacement
from ..bar.sides import Side, common_mean, leaving, sides
from ..bar.units import note
from ..baseline.exams import BASE, EXAM_NAMES, TODAY, KeptExam
from ..baseline.format import RERECORD, Baseline, Recorded
from ..baseline.since import Since, since
from ..baseline.update import partial_lines
from ..config.settings import Config
from ..core.errors import RagError
from ..core.values import fmt, signed
from ..evalset.records import Question, Span
from ..files.paths import display
from ..labels.gold import EditedGold, by_question, edited_gold, recorded_gold, review_line
from ..record.types import Comparison
from ..scoring.evaluate import Run, latency_summary
from ..scoring.metrics import metric_order
from .checks import (
    LatencyCheck,
    MetricCheck,
    Outcome,
    QuestionCheck,
    change_text,
    compare,
    p_text,
    per_question,
    scope_text,
)
from .family import Key, Member, adjusted, harshest, member, power_lines, used
from .items import ItemKey, Skip
from .older import older_notes
from .outcomes import decided, gated, through_questions, unchanged
from .pairs import Pairs, compare_configurations
from .rechunk import comparable_of, leaving_across, rechunk, rechunked
from .report import baseline_questions, comparable_notes, lowest_ann_recall, small_set_notes

if TYPE_CHECKING:
    from ..scoring.stats import Adjustment


APPROVAL_LABEL = "the approval label (rag-baseline-approved unless the action's `label` input names another)"
"""The label a lowering needs, as a local run can name it: the action's configuration is not read here."""


class Judge:
    """Compares this session's runs with the baseline; comparisons are computed once per entry."""

    def __init__(
        self,
        config: Config,
        questions: Sequence[Question],
        baseline: Baseline | None,
        fingerprint: Mapping[str, Any],
        runs: Mapping[str, Run],
        *,
        update: bool = False,
        allow_regression: bool = False,
        selected: Sequence[ItemKey] = (),
        places: Mapping[str, Span] | None = None,
        kept: KeptExam | None = None, units: Mapping[str, Sequence[str]] | None = None,
        edits: Mapping[str, Edit] | None = None,
    ) -> None:
        self.config = config
        self.edits = edits or {}
        self.kept, self.units = kept, units or {}
        self.scorer = Scorer(tuple(config.shown), places)
        self.questions = tuple(questions)
        self.baseline = baseline
        self.fingerprint = fingerprint
        self.runs = runs
        self.update = update
        self.allow_regression = allow_regression
        self.needs_baseline = any(key.kind != "latency" for key in selected)
        self.selected: dict[str, set[str]] = {}
        for key in selected:
            if key.kind == "metric":
                self.selected.setdefault(key.retriever, set()).add(key.name)
        self._raw: dict[tuple[Key, int], Comparison | None] = {}
        self._sides: dict[str, tuple[Side, ...]] = {}
        self._family: dict[int, dict[Key, Comparison]] = {}
        self._members: dict[int, list[Member]] = {}
        self._pairs: Pairs | None = None
        self._since: Since | None = None
        self._edited: tuple[EditedGold, ...] | None = None
        self._rechunk: tuple[Rechunk | None] | None = None

    def pairs(self) -> Pairs:
        """The comparisons between configurations, computed once for the summary, reports and results."""
        if self._pairs is None:
            self._pairs = compare_configurations(self.config, self.runs, clustering=self.clusterings[0])
        return self._pairs

    @cached_property
    def clusterings(self) -> tuple[Clustering, ...]:
        """Today's clustering, then the base's where it differs (`base_exam`; a file keeping none: by question)."""
        base, kept = self.base_exam(None), self.baseline is not None and (self.kept is None or self.kept.fingerprint)
        return judged_under(self.questions, base.questions if base is not None else {} if kept else None)

    def since(self) -> Since | None:
        """What changed since the baseline was recorded; None without a baseline."""
        if self.baseline is None:
            return None
        if self._since is None:
            # The retrievers run and their sources; one skipped here (no database URL) is judged nowhere:
            # its fingerprint's changes are noise.
            described = self.fingerprint.get("retrievers", {})
            names = [spec.name for spec in self.config.retrievers
                     if spec.name in self.baseline.retrievers and spec.name in described
                     and (spec.name not in self.runs or self.runs[spec.name].skipped is None)]
            found = since(self.baseline.fingerprint, self.fingerprint, names)
            questions = baseline_questions(self.baseline, self.config, self.questions)
            if questions.note:
                found = replace(found, questions=questions)
            self._since = found
            self._since = rechunked(self, found) or replace(found, labels=review_line(self.edited_gold()) or "")
        return self._since

    def edited_gold(self) -> tuple[EditedGold, ...]:
        """Gold chunks whose text changed since the baseline recorded it, with the questions they are gold of
        (computed once)."""
        if self._edited is None and self.baseline is not None and rechunk(self) is not None:
            self._edited = ()  # a chunker change moves every gold chunk; the gold spans did not move
        elif self._edited is None:
            today = self.fingerprint.get("chunks", {}).get("gold", {})
            self._edited = edited_gold(recorded_gold(self.baseline), today, self.questions)
        return self._edited

    def notes(self) -> list[str]:
        """The warnings every report repeats: a small eval set, too few comparable questions, drops
        the test cannot see (`power_notes`), max-T given up for Holm."""
        found = self.since()
        changes = found.questions if found is not None and found.comparable else None
        fallback = []
        if self.config.significance != "none" and self.config.adjustment == "maxt" and any(
                used("maxt", members) == "holm" for members in self.families()):
            fallback = ["p-values Holm-adjusted, not max-T: the metric items were compared on different questions "
                        "(max-T resamples every item over the same ones)"]
        return (small_set_notes(self.config, self.questions) + comparable_notes(self.config, self.questions, changes)
                + self.value_bar_notes() + older_notes(self) + self.power_notes() + fallback
                + changed_lines(self.config.significance, self.clusterings, [q.id for q in self.questions]))

    def value_bar_notes(self) -> list[str]:
        """Once: the entries whose bar is still a value bar kept from a format-3 file, compared as stored until
        an update raises it by more than the tolerance under both exams (then the bar is rankings)."""
        held = [f"{name} ({', '.join(sorted(entry.bar, key=metric_order))})" for name in sorted(self.runs)
                if (entry := self.recorded(name)) is not None and entry.bar]
        if not held:
            return []
        return ["value bars kept from a format-3 baseline, compared as stored until an update raises them by more "
                "than the tolerance under both exams: " + "; ".join(held)]

    def power_notes(self) -> list[str]:
        """One line per retriever whose minimum detectable effect exceeds `detect` (see `power_lines`)."""
        found = {spec.name: {metric.label: c for metric in self.config.metrics
                             if (c := self.comparison(spec.name, metric.label)) is not None}
                 for spec in self.config.retrievers}
        return power_lines(self.config, found)

    def comparable(self) -> Outcome | None:
        """A failing outcome shared by every item when no baseline can be compared with."""
        found = self.since()
        if found is None:
            return Outcome(False, f"no baseline at {display(self.config.baseline)}; {RERECORD}")
        if found.yardstick:
            return Outcome(
                False,
                f"the baseline is not comparable: its yardstick changed ({'; '.join(map(str, found.yardstick))}), "
                "so its values measure something else; re-record it for all retrievers with "
                "`pytest --rag-update-baseline`",
            )
        return None

    def recorded(self, name: str) -> Recorded | None:
        """The baseline entry of `name` when the baseline's yardstick is today's, else None: its recorded
        values (what "what changed" shows) and its bar (`bar`)."""
        if self.baseline is None or self.comparable() is not None:
            return None
        return self.baseline.retrievers.get(name)

    def today_exam(self, name: str) -> Exam:
        """Today's exam as `name` is scored on it: with chunkings side by side, labelled in its own."""
        exam = Exam.of_today(self.questions, EXAM_NAMES[TODAY])
        return exam.cut(self.config.retriever(name).chunking if self.config.chunkings else None)

    def base_exam(self, name: str | None) -> Exam | None:
        """The base's exam as `name` is scored on it (None: the baseline keeps no labels, format 3): the work
        tree's baseline's, or in a pull request's CI the base revision's (`kept`, `glue/trust.py`); no name: uncut."""
        return None if (exam := self._base_exam) is None else exam.cut(
            self.config.retriever(name).chunking if self.config.chunkings and name else None)

    @cached_property
    def _base_exam(self) -> Exam | None:
        """The base's exam, uncut, read from the baseline once (10,000 questions: 0.2 s a read)."""
        source = None if self.baseline is None else (self.kept or self.baseline).fingerprint
        return None if source is None else Exam.of_baseline(source, EXAM_NAMES[BASE])

    def earlier(self) -> Scorer:
        """How the baseline's rankings are scored: without the places of chunks edited or removed since."""
        found = self.since()
        corpus = found.corpus if found is not None else None
        if found is not None and (cut := rechunk(self)) is not None:  # each ranking at its own chunking's places
            return Scorer(self.scorer.specs, cut.places)
        if corpus is None:
            return self.scorer
        return self.scorer.without(None if corpus.edited is None else (*corpus.edited, *corpus.removed))

    def sides(self, name: str) -> tuple[Side, ...]:
        """`name`'s bar and today's rankings under today's exam, then under the base's where the labels
        changed (`bar/sides.py`); empty without a comparable entry or a result."""
        if name not in self._sides:
            recorded, run, found = self.recorded(name), self.runs.get(name), self.since()
            self._sides[name] = () if recorded is None or run is None or run.result is None or found is None else sides(
                name, recorded, run.result, self.today_exam(name), self.base_exam(name),
                found.questions.comparable, self.scorer, self.earlier(),
                [s.label for s in self.config.across])
        return self._sides[name]

    def side(self, name: str, exam: str = TODAY) -> Side | None:
        return next((side for side in self.sides(name) if side.exam == exam), None)

    def bar(self, name: str) -> Recorded | None:
        """What `name`'s items are judged against under today's exam: the approved rankings and their values."""
        found = self.side(name)
        return found.bar if found is not None else None

    def changes(self, name: str) -> tuple[str, ...]:
        """What changed since the baseline for one retriever (its parameters, its sources', the shared
        inputs), by short path: the header says once how each changed."""
        found = self.since()
        return tuple(found.paths(name)) if found is not None else ()

    def comparison(self, name: str, label: str, exam: str = TODAY) -> Comparison | None:
        """Baseline, value, delta (and p, CI in significance mode) of one retriever x metric under one exam,
        over the comparable questions; p is adjusted when the item is one of the session's family."""
        return harshest([self._clustered(name, label, exam, index) for index in range(len(self.clusterings))])

    def _clustered(self, name: str, label: str, exam: str, clustering: int) -> Comparison | None:
        raw = self._comparison(name, label, exam, clustering)
        return raw if raw is None or raw.p_value is None else self.family(clustering).get((name, label, exam), raw)

    def _comparison(self, name: str, label: str, exam: str = TODAY, clustering: int = 0) -> Comparison | None:
        if ((name, label, exam), clustering) not in self._raw:
            side, changes = self.side(name, exam), self.since()
            found = None
            if side is not None and changes is not None and label in side.bar.metrics:
                comparable = comparable_of(self, name, label)
                found = compare(label, side.bar, side.today, self.config.significance, comparable,
                                self.clusterings[clustering], self.config.alpha,
                                self.config.margin_for(label))
                if found is not None and side.last is not None:
                    found = structs.replace(found, last_update=common_mean(label, side.bar, side.last, side.today,
                                                                            comparable))
            self._raw[((name, label, exam), clustering)] = found
        return self._raw[((name, label, exam), clustering)]

    def members(self, clustering: int = 0) -> list[Member]:
        """The family (see `family.py`): the metric items judged this session that have a p-value and a
        difference from the bar on some question; the items selected by -k/-m (all configured ones when
        none were given), once every selected retriever has run. Each member holds the per-question
        differences its verdict tests (against the bar, as `_comparison`), never those against the
        recorded values: a re-record that keeps the bar then changes no p. Under `clusterings[clustering]`."""
        if clustering not in self._members:
            keys = [(name, label) for name, labels in self.selected.items() for label in sorted(labels)] or [
                (spec.name, metric.label) for spec in self.config.retrievers for metric in self.config.metrics]
            self._members[clustering] = []
            changes = self.since()
            for name, label in keys:
                for side in self.sides(name):
                    found = self._comparison(name, label, side.exam, clustering)
                    if found is not None and found.p_value is not None:
                        assert changes is not None
                        item = member((name, label, side.exam), found, side.bar, side.today,
                                      comparable_of(self, name, label))
                        self._members[clustering] += [item] if item is not None else []
        return self._members[clustering]

    def families(self, clustering: int = 0) -> tuple[list[Member], list[Member]]:
        """The base's exam's family (each item as the base's exam judges it: its base member where the labels
        changed, else its member under today's exam, which is the base's), then today's exam's (every member
        under today's exam; empty where no labels changed). Adjusted apart, so an item's p under the base's
        exam depends only on that exam and today's rankings: a label edit can add a failure under today's
        exam, never change a p, a family or max-T into Holm under the base's."""
        members = self.members(clustering)
        differs = {name for name in self.runs if self.side(name, BASE) is not None}
        base = [found for found in members if (found.key[2] == BASE) == (found.key[0] in differs)]
        return base, [found for found in members if found.key[2] == TODAY] if differs else []

    def adjustment(self) -> Adjustment:
        """The adjustment used under the base's exam: "maxt", "holm" or "none" (see `family.used`)."""
        return used(self.config.adjustment, self.families()[0])

    def family(self, clustering: int = 0) -> dict[Key, Comparison]:
        """The members' comparisons, their p adjusted together as `adjustment` says, each exam's family apart
        (`families`): with 18 items at alpha 0.05 the chance that any passing-in-truth item fails stays 5%,
        not 60%. max-T resamples the items together, so items that move together (the metrics of one
        retriever) cost little; Holm holds whatever the dependence. Empty with `adjustment = "none"`: every
        p is the test's own. Under `clustering` (an index of `clusterings`), whole clusters resampled."""
        if clustering not in self._family:
            self._family[clustering] = {}
            significance = self.config.significance
            base, today = self.families(clustering)
            for members in (today, base):  # an item both hold (no labels changed) takes the base's family's p
                method = used(self.config.adjustment, members)
                # without significance no item has a p-value, so the family is empty either way
                if members and method != "none" and significance != "none":
                    self._family[clustering].update(adjusted(members, method, significance, self.config.alpha,
                                                             self.clusterings[clustering]))
        return self._family[clustering]

    def outcome(self, key: ItemKey) -> Outcome:
        """The verdict of one item whose retriever has run; raises Skip when it could not run here."""
        try:
            return self._outcome(key)
        except RagError as exc:
            return Outcome(False, str(exc))

    def _outcome(self, key: ItemKey) -> Outcome:
        run = self.runs[key.retriever]
        if run.skipped is not None:
            raise Skip(run.skipped)
        if run.error is not None:
            return Outcome(False, str(run.error))
        assert run.result is not None
        if key.kind == "latency":
            spec = self.config.retriever(key.retriever)
            assert spec.max_latency_ms is not None
            summary = latency_summary(run.result)
            return LatencyCheck(key.retriever, spec.max_latency_ms).evaluate(summary["p50"], summary["p95"])
        if self.update:
            return self._recording_outcome(key, run.result.metrics)
        blocked = self.blocked(key.retriever)
        if blocked is not None:
            return blocked
        recorded = self.recorded(key.retriever)
        found = self.since()
        assert recorded is not None and found is not None
        if key.kind == "question":
            question = next(q for q in self.questions if q.id == key.name)
            edited = dict(found.questions.edited).get(key.name)
            if edited is None and key.name in set(recorded.questions) - comparable_of(self, key.retriever, ""):
                edited = found.questions.note or "not comparable"
            gold_edited = by_question(self.edited_gold()).get(key.name, ())
            bar = self.bar(key.retriever)
            assert bar is not None
            return QuestionCheck(key.retriever, question, self.config.k, gold_edited).evaluate(bar, run.result, edited)
        out = gated(self.config, key.retriever, key.name, self.metric_verdict(key.retriever, key.name))
        # a failure says whether it is unit-only (bar/units.py)
        return out if out.passed else replace(out, summary=out.summary + note(self, key.retriever, key.name))

    def metric_verdict(self, name: str, label: str) -> Outcome:
        """One retriever x metric judged against its bar under each exam, by the gate's rule: it fails when
        it fails under either, and says under which."""
        outcomes = [(side.exam, self.exam_verdict(name, label, side)) for side in self.sides(name)]
        assert outcomes
        failed = [(exam, outcome) for exam, outcome in outcomes if not outcome.passed]
        replaced = None if failed else self.question_rule(name, label)
        if replaced is not None:
            return through_questions(name, label, replaced.text(), outcomes[0])
        exam, outcome = decided(outcomes)
        if len(outcomes) == 1:
            return outcome
        other = next(found for name_, found in outcomes if name_ != exam)
        return replace(outcome, summary=f"{outcome.summary} under {EXAM_NAMES[exam]}",
                       details=(*outcome.details, f"under {EXAM_NAMES[BASE if exam == TODAY else TODAY]}: "
                                f"{other.summary}"))

    def exam_verdict(self, name: str, label: str, side: Side) -> Outcome:
        """One retriever x metric judged against its bar under one exam."""
        found = self.since()
        assert found is not None
        metric = next(s for s in self.config.shown if s.label == label)
        judged = {q.id: frozenset(q.relevance) for q in self.today_exam(name).questions.values()}
        base = self.base_exam(name) if side.exam == BASE else None
        if base is not None:  # a chunk judged since is no false miss to pool, whichever exam found the drop
            for question in base.questions.values():
                judged[question.id] = judged.get(question.id, frozenset()) | frozenset(question.relevance)
        check = MetricCheck(
            name, metric, self.config.tolerance.for_metric(metric), self.config.significance,
            self.config.alpha, self.changes(name), edited=by_question(self.edited_gold()),
            judged=judged, ann_recall=lowest_ann_recall(name, self.config, self.runs),
            clusterings=self.clusterings,
            margin=self.config.margin_for(label),
        )
        return check.evaluate(side.bar, side.today, self.comparison(name, label, side.exam),
                              (comparable := comparable_of(self, name, label)), unchanged(side, comparable))

    def missing_baseline(self) -> list[str]:
        """The one line a gate run without a baseline fails with, its items skipped each with one short
        reason (see `blocked`), rather than every item failing with the same block."""
        if self.update or self.baseline is not None or not self.runs or not self.needs_baseline:
            return []
        path = display(self.config.baseline)
        return [f"rag: error: no baseline at {path}, so nothing was judged; record one with "
                f"`pytest --rag-update-baseline`, check the values above and commit {path}"]

    def blocked(self, name: str) -> Outcome | None:
        """Why `name` cannot be compared with the baseline, as a failing outcome (or a Skip). Without a
        baseline every item is skipped with one short reason: the session fails once for them all."""
        if self.baseline is None:
            raise Skip(f"no baseline yet at {display(self.config.baseline)}; {RERECORD}")
        blocked = self.comparable()
        if blocked is not None:
            return blocked
        assert self.baseline is not None
        if name not in self.baseline.retrievers and name in self.baseline.unavailable:
            raise Skip(
                f"{name} has no baseline value: it could not run where the baseline was recorded "
                f"({self.baseline.unavailable[name]}); record it with "
                f"`pytest --rag-update-baseline -k {name}` where it runs"
            )
        if name not in self.baseline.retrievers:
            return Outcome(
                False,
                f"retriever {name!r} is not in the baseline; record it with `pytest --rag-update-baseline -k {name}`",
            )
        return None

    def _recording_outcome(self, key: ItemKey, metrics: Mapping[str, float]) -> Outcome:
        if key.kind == "question":
            return Outcome(True, f"question {key.name} of {key.retriever!r}: its ranking is recorded")
        partial = partial_lines(self.config, self.selected).get(key.retriever)
        if partial is not None:
            return Outcome(False, partial.removeprefix("rag: "))
        refused = self.refused(key)
        if refused is not None:
            return Outcome(False, refused)
        lowering = self.lowering(key)
        lowered = f"; it lowers the bar ({lowering}), as --rag-allow-regression allows" if lowering else ""
        return Outcome(True, f"{key.name} of {key.retriever!r}: {fmt(metrics[key.name])} to be recorded{lowered}")

    def lowering(self, key: ItemKey) -> str | None:
        """Why recording this item's values lowers its bar, else None: a value would fail against the
        bar under either exam, or questions whose approved values leave (removed, or their query edited)
        are replaced by lower ones (`bar.rule.replacement`, their approved values scored under the
        base's exam)."""
        name, label = key.retriever, key.name
        if key.kind != "metric":
            return None
        sides = self.sides(name)
        for side in sides:
            comparison = self.comparison(name, label, side.exam)
            if comparison is None or comparison.baseline is None or label not in side.bar.metrics:
                continue
            if not self.exam_verdict(name, label, side).passed:
                tolerance = self.config.tolerance.for_metric(next(s for s in self.config.shown if s.label == label))
                tested = (f"; {self.config.significance} test {p_text(comparison)}"
                          if comparison.p_value is not None else "")
                under = f" under {EXAM_NAMES[side.exam]}" if len(sides) > 1 else ""
                return (f"{fmt(comparison.value)} is below the bar's {fmt(comparison.baseline)} "
                        f"({signed(comparison.value - comparison.baseline)}, tolerance {fmt(tolerance)}"
                        f"{tested}){scope_text(comparison)}{under}{change_text(self.changes(name))}"
                        f"{note(self, name, label)}")
        replaced = self.question_rule(name, label)
        return None if replaced is None else f"{replaced.text()}, below the bar{note(self, name, label)}"

    def question_rule(self, name: str, label: str) -> Replacement | None:
        """What lowers `name`'s bar of `label` through its questions, else None: questions that leave the
        comparison (removed, their query edited, or their gold changed where the base's exam cannot judge it:
        label work on a file that keeps no labels, gold moved with the corpus) replaced by lower values
        (`bar.rule.replacement`: their approved rankings scored under the base's exam). One rule for the gate's
        verdict and the update, as `diff` counts it, whether or not the baseline was re-recorded."""
        found, run, entry = self.since(), self.runs.get(name), self.recorded(name)
        if entry is None or found is None or run is None or run.result is None:
            return None
        comparable = comparable_of(self, name, label)
        gone, lost = leaving_across(self, entry, comparable, label)
        bar = self.bar(name)
        kept = {qid: q.metrics[label] for qid, q in (bar.questions.items() if bar is not None else ())
                if qid in comparable and label in q.metrics}
        left = {**leaving(entry, self.base_exam(name), label, gone, self.earlier(), name), **lost}
        new = {qid: values[label] for qid, values in per_question(run.result).items() if label in values}
        return replacement({**kept, **left}, new, comparable)

    def refused(self, key: ItemKey) -> str | None:
        """Why this item's values will not be recorded: they would lower its bar (`lowering`) and
        --rag-allow-regression was not given. Names both ways on."""
        if self.allow_regression:
            return None
        lowering = self.lowering(key)
        if lowering is None:
            return None
        return (f"refused to record {key.name} of {key.retriever!r}: {lowering}; fix it and re-run, or pass "
                f"--rag-allow-regression to record it, which lowers the bar: the pull request then needs "
                f"{APPROVAL_LABEL}")
