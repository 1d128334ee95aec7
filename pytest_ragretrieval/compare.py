"""Regression checks as small objects: one per retriever x metric, pure and testable alone."""
from __future__ import annotations

from dataclasses import dataclass

from .baseline import Recorded
from .evaluate import RetrieverResult
from .metrics import MetricSpec

EPSILON = 1e-9
"""Values are rounded to 6 decimals; this only absorbs the float error of `baseline - tolerance`."""
MAX_LISTED = 10


def fmt(value: float) -> str:
    return f"{value:.4f}"


def signed(value: float) -> str:
    return f"{value:+.4f}"


@dataclass(frozen=True)
class Outcome:
    """What an item reports: pass or fail, one summary line, detail lines under it."""

    passed: bool
    summary: str
    details: tuple[str, ...] = ()

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


@dataclass(frozen=True)
class MetricCheck:
    """Fails when the value is below the baseline by more than the tolerance."""

    retriever: str
    spec: MetricSpec
    tolerance: float

    def evaluate(self, recorded: Recorded, result: RetrieverResult) -> Outcome:
        label = self.spec.label
        if label not in recorded.metrics:
            return Outcome(
                False,
                f"{label} of retriever {self.retriever!r} is not in the baseline; record it with "
                f"`pytest --rag-update-baseline -k {self.retriever}`",
            )
        before = recorded.metrics[label]
        after = result.metrics[label]
        delta = after - before
        found = drops(label, recorded, result)
        if before - after > self.tolerance + EPSILON:
            return Outcome(
                False,
                f"{label} of {self.retriever!r} fell from {fmt(before)} to {fmt(after)} "
                f"({signed(delta)}, tolerance {fmt(self.tolerance)})",
                tuple(drop_lines(found)),
            )
        return Outcome(True, f"{label} of {self.retriever!r}: {fmt(after)} ({signed(delta)} against {fmt(before)})")
