"""Regression checks as small objects: one per retriever x metric, pure and testable alone."""
from __future__ import annotations

from dataclasses import dataclass

from ..baseline.format import Recorded, RecordedQuestion
from ..evalset.records import Question
from ..jsontext import escaped
from ..scoring.evaluate import QuestionResult, RetrieverResult
from ..scoring.metrics import MetricSpec, hit_rate
from ..values import DIGITS, EPSILON, fmt, p_clause, signed

MAX_LISTED = 10


@dataclass(frozen=True)
class Comparison:
    """One retriever x metric against the baseline; `p_value`/`ci95` only in significance mode."""

    baseline: float | None
    value: float
    delta: float | None
    p_value: float | None = None
    ci95: tuple[float, float] | None = None



@dataclass(frozen=True)
class Outcome:
    """What an item reports: pass or fail, one summary line, detail lines under it."""

    passed: bool
    summary: str
    details: tuple[str, ...] = ()
    comparison: Comparison | None = None

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


def drops(label: str, recorded: Recorded, result: RetrieverResult) -> list[Drop]:
    """Questions whose value for `label` fell since the baseline, worst first, ties by id."""
    found = []
    for question in result.questions:
        old = recorded.questions.get(question.id)
        if old is None or label not in old.metrics or label not in question.values:
            continue
        if question.values[label] < old.metrics[label] - EPSILON:
            found.append(Drop(question.id, old.metrics[label], question.values[label]))
    found.sort(key=lambda drop: (drop.delta, drop.question))
    return found


def drop_lines(found: list[Drop]) -> list[str]:
    if not found:
        return []
    lines = ["questions that dropped, worst first:"]
    for drop in found[:MAX_LISTED]:
        lines.append(f"  {drop.question}: {fmt(drop.before)} -> {fmt(drop.after)} ({signed(drop.delta)})")
    if len(found) > MAX_LISTED:
        lines.append(f"  ... and {len(found) - MAX_LISTED} more")
    return lines


def paired_values(label: str, recorded: Recorded, result: RetrieverResult) -> tuple[list[float], list[float]]:
    """Per-question (baseline, new) values for `label`, over the questions both runs scored."""
    before: list[float] = []
    after: list[float] = []
    for question in result.questions:
        old = recorded.questions.get(question.id)
        if old is not None and label in old.metrics and label in question.values:
            before.append(old.metrics[label])
            after.append(question.values[label])
    return before, after


def compare(label: str, recorded: Recorded, result: RetrieverResult, significance: str) -> Comparison:
    """Baseline, value, delta and, in significance mode, the paired test's p and 95% interval."""
    before = recorded.metrics[label]
    after = result.metrics[label]
    delta = round(after - before, DIGITS)
    if significance == "none":
        return Comparison(before, after, delta)
    from ..scoring.stats import paired_test

    test = paired_test(*paired_values(label, recorded, result), significance)
    if test is None:
        return Comparison(before, after, delta)
    return Comparison(before, after, delta, test.p_value, test.ci95)


@dataclass(frozen=True)
class MetricCheck:
    """Fails when the value is below the baseline by more than the tolerance and, in significance
    mode, the paired test says the drop is unlikely to be noise (p < alpha)."""

    retriever: str
    spec: MetricSpec
    tolerance: float
    significance: str = "none"
    alpha: float = 0.05

    def evaluate(self, recorded: Recorded, result: RetrieverResult, comparison: Comparison | None = None) -> Outcome:
        label = self.spec.label
        if label not in recorded.metrics:
            return Outcome(
                False,
                f"{label} of retriever {self.retriever!r} is not in the baseline; record it with "
                f"`pytest --rag-update-baseline -k {self.retriever}`",
            )
        if comparison is None:
            comparison = compare(label, recorded, result, self.significance)
        before, after = recorded.metrics[label], result.metrics[label]
        found = drops(label, recorded, result)
        fell = before - after > self.tolerance + EPSILON
        head = (
            f"{label} of {self.retriever!r} fell from {fmt(before)} to {fmt(after)} "
            f"({signed(after - before)}, tolerance {fmt(self.tolerance)})"
        )
        if fell and self.significance != "none":
            test = self._test_text(comparison)
            if comparison.p_value is not None and comparison.p_value >= self.alpha:
                return Outcome(True, f"{head}, but the drop is not significant ({test})", (), comparison)
            return Outcome(False, f"{head}; {test}", tuple(drop_lines(found)), comparison)
        if fell:
            return Outcome(False, head, tuple(drop_lines(found)), comparison)
        return Outcome(
            True, f"{label} of {self.retriever!r}: {fmt(after)} ({signed(after - before)} against {fmt(before)})",
            (), comparison,
        )

    def _test_text(self, comparison: Comparison) -> str:
        if comparison.p_value is None:
            return "too few paired questions for a significance test"
        low, high = comparison.ci95 or (0.0, 0.0)
        relation = "<" if comparison.p_value < self.alpha else ">="
        return (
            f"{self.significance} test {p_clause(comparison.p_value)} {relation} alpha {self.alpha:g}, "
            f"95% CI of the mean difference [{signed(low)}, {signed(high)}]"
        )


@dataclass(frozen=True)
class QuestionCheck:
    """With `fail_on = ["question"]`: a question that was a hit within k must stay one."""

    retriever: str
    question: Question
    k: int

    def evaluate(self, recorded: Recorded, result: RetrieverResult) -> Outcome:
        old: RecordedQuestion | None = recorded.questions.get(self.question.id)
        new: QuestionResult | None = result.question(self.question.id)
        ranking = new.ranking if new is not None else ()
        now = hit_rate(ranking, self.question.relevance, self.k) == 1.0
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
                 f"  relevant: {', '.join(sorted(self.question.relevant_ids))}"),
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
