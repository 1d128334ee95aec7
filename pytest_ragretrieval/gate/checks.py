"""Regression checks as small objects: one per retriever x metric, pure and testable alone."""
from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from msgspec import structs

from ..bar.clusters import Clustering, unreachable
from ..bar.sides import per_question as per_question
from ..bar.sides import recorded_values as recorded_values
from ..baseline.format import Recorded, RecordedQuestion
from ..baseline.since import detectable, paired
from ..core.values import DIGITS, EPSILON, fmt, listed, p_clause, p_value, signed
from ..evalset.records import Question
from ..files.jsontext import escaped
from ..record.report import ADJUSTED
from ..record.types import Adjustment, Comparison, Finding
from ..scoring.evaluate import QuestionResult, RetrieverResult, mean
from ..scoring.metrics import MetricSpec, hit_rate

if TYPE_CHECKING:
    from ..scoring.stats import Significance

MAX_LISTED = 10


@dataclass(frozen=True)
class Outcome:
    """What an item reports: pass or fail, one summary line, detail lines under it."""

    passed: bool
    summary: str
    details: tuple[str, ...] = ()
    comparison: Comparison | None = None
    finding: Finding | None = None
    """A metric item's outcome (docs/verdicts.md, "Three outcomes"); None where nothing was compared."""
    exam: str = ""
    """The exam whose comparison decided it (`today` or `base`), where a metric item was compared."""

    @property
    def lines(self) -> list[str]:
        return [self.summary, *self.details]


@dataclass(frozen=True)
class Drop:
    question: str
    before: float
    after: float

    @property
    def delta(self) -> float:
        return self.after - self.before


def drops(label: str, recorded: Recorded, result: RetrieverResult, comparable: Collection[str]) -> list[Drop]:
    """Comparable questions whose value for `label` fell since the baseline, worst first, ties by id."""
    pairs = paired(label, recorded_values(recorded), per_question(result), comparable)
    found = [Drop(qid, old, new) for qid, old, new in zip(pairs.ids, pairs.before, pairs.after, strict=True)
             if new < old - EPSILON]
    found.sort(key=lambda drop: (drop.delta, drop.question))
    return found


def edited_text(chunks: Sequence[str]) -> str:
    """`its gold chunk security-018 was edited`, or `its gold chunks a, b were edited`."""
    if len(chunks) == 1:
        return f"its gold chunk {chunks[0]} was edited"
    return f"its gold chunks {listed(chunks)} were edited"


def drop_lines(found: list[Drop], edited: Mapping[str, Sequence[str]] | None = None) -> list[str]:
    """The drops, worst first; `edited`: question id -> its gold chunks whose text was edited since the
    baseline, named on its line and counted apart (the label may be stale, not the retrieval worse)."""
    if not found:
        return []
    edited = edited or {}
    lines = ["questions that dropped, worst first:"]
    for drop in found[:MAX_LISTED]:
        gold = f" — {edited_text(edited[drop.question])}" if drop.question in edited else ""
        lines.append(f"  {drop.question}: {fmt(drop.before)} -> {fmt(drop.after)} ({signed(drop.delta)}){gold}")
    if len(found) > MAX_LISTED:
        lines.append(f"  ... and {len(found) - MAX_LISTED} more")
    stale = [drop.question for drop in found if drop.question in edited]
    if stale:
        lines.append(f"{len(stale)} of the {len(found)} questions that dropped stand on gold text edited since the "
                     f"baseline ({listed(stale, limit=MAX_LISTED)}): "
                     "review their labels before reading the drop as worse retrieval")
    return lines


def unjudged_line(
    found: list[Drop], result: RetrieverResult, judged: Mapping[str, Collection[str]], k: int,
    before: Mapping[str, RecordedQuestion] | None = None, ann_recall: float | None = None,
) -> list[str]:
    """`3 of the 4 questions that dropped rank unjudged chunks new to their top 5: ...`: a drop whose new
    top k holds chunks nobody judged, and which its baseline top k (`before`) did not hold, may be a false
    miss (a relevant chunk nobody labelled), not a regression. Nothing when the ANN index lost results
    (`ann_recall` measured and below 1): that is a real loss, not a labelling problem."""
    if ann_recall is not None and ann_recall < 1.0 - EPSILON:
        return []
    rankings = {question.id: question.ranking for question in result.questions}
    before = before or {}

    def new_unjudged(qid: str) -> bool:
        old = before[qid].ranking[:k] if qid in before else ()
        return any(cid not in judged[qid] and cid not in old for cid in rankings.get(qid, ())[:k])

    count = sum(1 for drop in found if drop.question in judged and new_unjudged(drop.question))
    if not count:
        return []
    questions = "the question that dropped ranks" if len(found) == 1 else \
        f"all {count} questions that dropped rank" if count == len(found) else \
        f"{count} of the {len(found)} questions that dropped rank"
    return [f"{questions} unjudged chunks new to their top {k}: possibly false misses; see `ragretrieval pool`"]


def compare(
    label: str, recorded: Recorded, result: RetrieverResult, significance: Significance, comparable: Collection[str],
    clustering: Clustering | None = None, alpha: float = 0.05, margin: float = 0.0,
) -> Comparison | None:
    """Baseline, value and delta over the comparable questions both scored, the minimum detectable
    effect, the one-sided (1 - alpha) lower bound and the questions that would show it non-inferior at
    `margin` (`scoring/margin.py`), and in significance mode the paired test's p and 95% interval, whole
    clusters flipped or drawn under `clustering`; no p where its clusters cannot reach `alpha`
    (`unreachable`: judged by the tolerance alone); None when no question is shared.

    Both means are taken at the stored precision, from the 6-digit per-question values on both sides
    (the values the test resamples), never from a recorded mean of unrounded values: a kept bar has
    only its stored values, so a run is judged alike before and after a re-record that keeps it."""
    pairs = paired(label, recorded_values(recorded), per_question(result), comparable)
    if not pairs.n:
        return None
    before, after = mean(pairs.before), mean(pairs.after)
    value_all = result.metrics[label] if not pairs.whole and result.metrics[label] != after else None
    from ..scoring.margin import clusters_needed, lower_bound, questions_needed
    from ..scoring.stats import labels, paired_test

    differences = [new - old for old, new in zip(pairs.before, pairs.after, strict=True)]
    clusters = None if clustering is None else labels([clustering.key(qid) for qid in pairs.ids])
    found = Comparison(before, after, round(after - before, DIGITS), questions=pairs.n, whole=pairs.whole,
                       value_all=value_all, mde=detectable(pairs.before),
                       lower=lower_bound(differences, alpha, clusters), margin=margin,
                       needed=questions_needed(differences, margin, alpha))
    if clusters is not None:
        found = structs.replace(found, clusters=int(clusters.max()) + 1,
                                needed_clusters=clusters_needed(differences, margin, alpha, clusters))
    if significance == "none" or unreachable(clustering, pairs.ids, alpha):
        return found
    test = paired_test(pairs.before, pairs.after, significance, clusters=clusters, alpha=alpha)
    if test is None:
        return found
    return structs.replace(found, p_value=test.p_value, p_unadjusted=test.p_value, ci95=test.ci95)


def adjustment_note(comparison: Comparison) -> str:
    """` (max-T-adjusted over 6 items; unadjusted 0.0170)`, or nothing in a family of one."""
    if comparison.family > 1 and comparison.p_unadjusted is not None:
        name = ADJUSTED.get(comparison.adjustment or Adjustment.NONE, str(comparison.adjustment))
        return f" ({name}-adjusted over {comparison.family} items; unadjusted {p_value(comparison.p_unadjusted)})"
    return ""


def p_text(comparison: Comparison) -> str:
    assert comparison.p_value is not None
    return f"{p_clause(comparison.p_value)}{adjustment_note(comparison)}"


def scope_text(comparison: Comparison) -> str:
    """Where the questions differ: ` over the 59 questions both runs share (today's mean over ...)`."""
    if comparison.whole:
        return ""
    count = comparison.questions
    text = f" over the {count} question{'s' if count != 1 else ''} both runs share"
    if comparison.value_all is not None:
        text += f" (today's mean over the whole eval set: {fmt(comparison.value_all)})"
    return text


def older_text(comparison: Comparison) -> str:
    """`; already below the bar at the last update (recorded 0.7100, approved 0.7400); this change moved it
    by -0.0100`, from what the file holds: a drop the last update was accepted with is older than this change."""
    last, before = comparison.last_update, comparison.baseline
    if last is None or before is None or last >= before - EPSILON:
        return ""
    return (f"; already below the bar at the last update (recorded {fmt(last)}, approved {fmt(before)}); "
            f"this change moved it by {signed(comparison.value - last)}")


def change_text(changes: Sequence[str]) -> str:
    """` after a change of hybrid.weights`, or nothing: what changed, by its short path (the header
    says once how it changed)."""
    if not changes:
        return ""
    return f" after {'a change' if len(changes) == 1 else 'changes'} of {'; '.join(changes)}"


@dataclass(frozen=True)
class MetricCheck:
    """Fails when the value is below the baseline by more than the tolerance and, in significance
    mode, the paired test says the drop is unlikely to be noise (p < alpha, p adjusted over the
    session's items as `adjustment` says). Both over the comparable questions; `changes` names what changed since."""

    retriever: str
    spec: MetricSpec
    tolerance: float
    significance: Significance = "none"
    alpha: float = 0.05
    changes: tuple[str, ...] = ()
    edited: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)
    """Question id -> its gold chunks whose text was edited since the baseline (`labels/gold.py`)."""
    judged: Mapping[str, Collection[str]] = field(default_factory=dict, hash=False)
    """Each question's judged chunk ids (any grade), for the line on unjudged chunks in a drop's top k."""
    ann_recall: float | None = None
    """The lowest ANN recall measured for the retriever (or its sources); None where none was measured."""
    clusterings: Sequence[Clustering] = ()
    """The clusterings it is judged under: where one's clusters cannot reach alpha (`bar.clusters.unreachable`)
    it has no p and is judged by the tolerance alone."""
    margin: float | None = None
    """The drop a pass must be shown not to exceed to be non-inferior (None: the tolerance)."""

    def evaluate(self, recorded: Recorded, result: RetrieverResult, comparison: Comparison | None = None,
                 comparable: Collection[str] | None = None, unchanged: bool = False) -> Outcome:
        """`comparable`: the questions both sides share (default: every question of this run);
        `comparison`: the judge's, p adjusted (default: computed here, unadjusted); `unchanged`: today's
        rankings of those questions are the approved ones. The outcome names what the evidence says
        (`classify`)."""
        found = self._evaluate(recorded, result, comparison, comparable)
        if found.comparison is None:
            return found
        return classified(found, unchanged, self.tolerance if self.margin is None else self.margin, self.alpha)

    def _evaluate(self, recorded: Recorded, result: RetrieverResult, comparison: Comparison | None,
                  comparable: Collection[str] | None) -> Outcome:
        label = self.spec.label
        if comparable is None:
            comparable = {question.id for question in result.questions}
        if comparison is None and label in recorded.metrics:
            margin = self.tolerance if self.margin is None else self.margin
            comparison = compare(label, recorded, result, self.significance, comparable, alpha=self.alpha,
                                 margin=margin)
        if label not in recorded.metrics:
            held = sorted(other for other in recorded.metrics if other.partition("@")[0] == self.spec.name)
            hint = (f" (it holds {', '.join(held)}: a value at another cutoff measures something else)"
                    if held else "")
            return Outcome(
                False,
                f"{label} of retriever {self.retriever!r} is not in the baseline{hint}; record it with "
                f"`pytest --rag-update-baseline -k {self.retriever}`",
            )
        if comparison is None:
            return Outcome(
                True, f"{label} of {self.retriever!r}: {fmt(result.metrics[label])}, no question in common with the "
                "baseline to compare it on" + change_text(self.changes),
            )
        before, after = comparison.baseline, comparison.value
        assert before is not None
        found = drops(label, recorded, result, comparable)
        fell = before - after > self.tolerance + EPSILON
        untested = unreachable(self.clusterings, paired(label, recorded_values(recorded), per_question(result),
                                                        comparable).ids, self.alpha)
        scope, changed = scope_text(comparison), change_text(self.changes)
        head = (
            f"{label} of {self.retriever!r} fell from {fmt(before)} to {fmt(after)} "
            f"({signed(after - before)}, tolerance {fmt(self.tolerance)}){scope}{changed}{older_text(comparison)}"
        )
        if fell and self.significance != "none":
            test = self._test_text(comparison, untested)
            if comparison.p_value is not None and comparison.p_value >= self.alpha:
                return Outcome(True, f"{head}, but the drop is not significant ({test})", (), comparison)
            return Outcome(False, f"{head}; {test}", self._drop_details(found, result, recorded), comparison)
        if fell:
            return Outcome(False, head, self._drop_details(found, result, recorded), comparison)
        tested = (f"; {self.significance} test {p_text(comparison)}" if comparison.p_value is not None
                  else f"; {untested}" if untested and self.significance != "none" else "")
        return Outcome(
            True, f"{label} of {self.retriever!r}: {fmt(after)} ({signed(after - before)} against {fmt(before)})"
            f"{scope}{changed}{tested}{older_text(comparison)}", (), comparison,
        )

    def _drop_details(self, found: list[Drop], result: RetrieverResult, recorded: Recorded) -> tuple[str, ...]:
        unjudged = [] if self.spec.on_no_answer else unjudged_line(
            found, result, self.judged, self.spec.k, recorded.questions, self.ann_recall)
        return (*drop_lines(found, self.edited), *unjudged)

    def _test_text(self, comparison: Comparison, untested: str = "") -> str:
        if comparison.p_value is None:
            return untested or "too few paired questions for a significance test"
        low, high = comparison.ci95 or (0.0, 0.0)
        relation = "<" if comparison.p_value < self.alpha else ">="
        return (
            f"{self.significance} test {p_clause(comparison.p_value)} {relation} alpha {self.alpha:g}"
            f"{adjustment_note(comparison)}, 95% CI of the mean difference [{signed(low)}, {signed(high)}]"
        )


def classify(comparison: Comparison, passed: bool, unchanged: bool, margin: float) -> Finding:
    """What the evidence says of one comparison: a regression where the gate's rule fails it; else
    unchanged (today's rankings the approved ones, so no difference); else non-inferior when the lower
    bound is at or above -margin (within 1e-9: at margin 0, no question dropped); else inconclusive, one
    question alone included (no bound)."""
    if not passed:
        return Finding.REGRESSION
    if unchanged and comparison.delta is not None and abs(comparison.delta) < EPSILON:
        return Finding.UNCHANGED
    if comparison.lower is not None and comparison.lower >= -margin - EPSILON:
        return Finding.NON_INFERIOR
    return Finding.INCONCLUSIVE


def finding_text(comparison: Comparison, finding: Finding, margin: float, alpha: float) -> str:
    """`non-inferior: the one-sided 95% lower bound of the difference, -0.0120, is at or above -0.0200
    (margin)`, and the like; nothing for a regression (its lines say why)."""
    if finding == Finding.UNCHANGED:
        return "unchanged: today's rankings are the approved ones"
    if finding == Finding.REGRESSION:
        return ""
    if comparison.lower is None:
        return f"inconclusive: {comparison.questions} question is too few to bound a drop"
    clustered = (f" over its {comparison.clusters} clusters (whole clusters drawn)"
                 if isinstance(comparison.clusters, int) else "")
    bound = f"the one-sided {1 - alpha:.0%} lower bound of the difference{clustered}, {signed(comparison.lower)},"
    if finding == Finding.NON_INFERIOR:
        return f"non-inferior: {bound} is at or above -{fmt(margin)} (margin)"
    more = (f", or about {comparison.needed_clusters} clusters like these (at their observed spread)"
            if isinstance(comparison.needed_clusters, int) else "")
    needed = (f"; about {comparison.needed} questions would decide it (80% power at the margin, at the observed "
              f"mean and spread){more}" if comparison.needed is not None
              else "; no number of questions rules out a drop at margin 0: set a margin above 0" if margin <= 0
              else "; the observed drop reaches the margin: more questions would rather show it")
    return f"inconclusive: {bound} is below -{fmt(margin)} (margin): a drop of the margin is not ruled out{needed}"


def classified(outcome: Outcome, unchanged: bool, margin: float, alpha: float) -> Outcome:
    """The outcome with what its evidence says (its last detail line) and the margin it was judged at."""
    comparison = outcome.comparison
    assert comparison is not None
    finding = classify(comparison, outcome.passed, unchanged, margin)
    text = finding_text(comparison, finding, margin, alpha)
    return dataclasses.replace(outcome, details=(*outcome.details, text) if text else outcome.details,
                               finding=finding, comparison=structs.replace(comparison, margin=margin))


@dataclass(frozen=True)
class QuestionCheck:
    """With `fail_on = ["question"]`: a question that was a hit within k must stay one. A question
    that is not comparable with the baseline (new, or its query or graded gold edited) passes with a note."""

    retriever: str
    question: Question
    k: int
    edited: tuple[str, ...] = ()
    """Its gold chunks whose text was edited since the baseline."""

    def evaluate(self, recorded: Recorded, result: RetrieverResult, edited: str | None = None) -> Outcome:
        old: RecordedQuestion | None = recorded.questions.get(self.question.id)
        new: QuestionResult | None = result.question(self.question.id)
        ranking = new.ranking if new is not None else ()
        now = hit_rate(ranking, self.question.relevance, self.k) == 1.0
        if edited is not None:
            return Outcome(True, f"question {self.question.id} of {self.retriever!r} changed since the baseline "
                                 f"({edited}): not compared")
        if old is None:
            return Outcome(True, f"{self.question.id} is not in the baseline of {self.retriever!r}: nothing to keep")
        before = hit_rate(old.ranking, self.question.relevance, self.k) == 1.0
        if before and not now:
            return Outcome(
                False,
                f"question {self.question.id} ({escaped(self.question.query)}) was a hit within {self.k} for "
                f"{self.retriever!r} and is no longer one",
                (f"  before: {', '.join(old.ranking[: self.k]) or '(nothing)'}",
                 f"  now:    {', '.join(ranking[: self.k]) or '(nothing)'}",
                 f"  relevant: {', '.join(sorted(self.question.relevant_ids))}",
                 *([f"  {edited_text(self.edited)} since the baseline: review the label"] if self.edited else [])),
            )
        state = "still a hit" if before else ("a new hit" if now else "not a hit, as before")
        return Outcome(True, f"question {self.question.id} of {self.retriever!r}: {state} within {self.k}")


@dataclass(frozen=True)
class LatencyCheck:
    """`max_latency_ms` on a retriever: its p95 latency per question must not exceed it."""

    retriever: str
    limit_ms: float

    def evaluate(self, p50: float, p95: float) -> Outcome:
        if p95 > self.limit_ms:
            return Outcome(
                False,
                f"p95 latency of {self.retriever!r} is {p95:.1f} ms, above max_latency_ms = {self.limit_ms:g} "
                f"(p50 {p50:.1f} ms)",
            )
        return Outcome(True, f"p95 latency of {self.retriever!r}: {p95:.1f} ms (limit {self.limit_ms:g} ms)")
