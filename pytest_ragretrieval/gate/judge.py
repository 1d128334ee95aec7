"""The verdicts: is the baseline comparable, what does each item say, what may be recorded.

Pure: built from the config, the eval set, the baseline, this run's fingerprint and the runs,
so every verdict can be tested without pytest, a database or a model.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..baseline.fingerprint import UNRECORDED, global_changes, retriever_changes
from ..baseline.format import RERECORD, Baseline, Recorded
from ..baseline.update import partial_lines
from ..config.settings import Config
from ..errors import RagError
from ..evalset.records import Question
from ..paths import display
from ..scoring.evaluate import Run, latency_summary
from ..values import EPSILON, fmt
from .checks import (
    Comparison,
    LatencyCheck,
    MetricCheck,
    Outcome,
    QuestionCheck,
    compare,
)
from .items import ItemKey, Skip
from .pairs import Pairs, compare_configurations


def small_set_notes(config: Config, questions: Sequence[Question]) -> list[str]:
    """Warnings every report repeats: today, an eval set too small for its verdicts."""
    answerable = sum(1 for q in questions if q.answerable)
    if answerable >= config.min_questions:
        return []
    return [
        f"the eval set has {answerable} answerable questions, fewer than min_questions = "
        f"{config.min_questions}: a single question can move a mean by up to {1 / answerable:.2f}, "
        "too little data for a verdict to mean much"
    ]


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
    ) -> None:
        self.config = config
        self.questions = tuple(questions)
        self.baseline = baseline
        self.fingerprint = fingerprint
        self.runs = runs
        self.update = update
        self.allow_regression = allow_regression
        self.selected: dict[str, set[str]] = {}
        for key in selected:
            if key.kind == "metric":
                self.selected.setdefault(key.retriever, set()).add(key.name)
        self._comparisons: dict[tuple[str, str], Comparison | None] = {}
        self._pairs: Pairs | None = None

    def pairs(self) -> Pairs:
        """The comparisons between configurations, computed once for the summary, reports and results."""
        if self._pairs is None:
            self._pairs = compare_configurations(self.config, self.runs)
        return self._pairs

    def comparable(self) -> Outcome | None:
        """A failing outcome shared by every item when no baseline can be compared with."""
        if self.baseline is None:
            return Outcome(False, f"no baseline at {display(self.config.baseline)}; {RERECORD}")
        changed = global_changes(self.baseline.fingerprint, self.fingerprint)
        if changed:
            return Outcome(
                False,
                f"the baseline is not comparable: {', '.join(changed)} changed since it was recorded; "
                "re-record it for all retrievers with `pytest --rag-update-baseline`",
            )
        return None

    def recorded(self, name: str) -> Recorded | None:
        """The baseline entry of `name` when it can be compared with this run, else None."""
        if self.baseline is None or self.comparable() is not None:
            return None
        if retriever_changes(self.baseline.fingerprint, self.fingerprint, name):
            return None
        return self.baseline.retrievers.get(name)

    def comparison(self, name: str, label: str) -> Comparison | None:
        """Baseline, value, delta (and p, CI in significance mode) of one retriever x metric."""
        if (name, label) not in self._comparisons:
            run = self.runs.get(name)
            recorded = self.recorded(name)
            found = None
            if run is not None and run.result is not None and recorded is not None and label in recorded.metrics:
                found = compare(label, recorded, run.result, self.config.significance)
            self._comparisons[(name, label)] = found
        return self._comparisons[(name, label)]

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
        assert recorded is not None
        if key.kind == "question":
            question = next(q for q in self.questions if q.id == key.name)
            return QuestionCheck(key.retriever, question, self.config.k).evaluate(recorded, run.result)
        metric = next(s for s in self.config.metrics if s.label == key.name)
        check = MetricCheck(
            key.retriever, metric, self.config.tolerance.for_metric(metric), self.config.significance, self.config.alpha
        )
        return check.evaluate(recorded, run.result, self.comparison(key.retriever, key.name))

    def blocked(self, name: str) -> Outcome | None:
        """Why `name` cannot be compared with the baseline, as a failing outcome (or a Skip)."""
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
        changed = retriever_changes(self.baseline.fingerprint, self.fingerprint, name)
        if changed == [UNRECORDED]:
            return Outcome(
                False,
                f"the baseline holds values of {name!r} but no fingerprint for them, so nothing shows they are "
                f"comparable; re-record with `pytest --rag-update-baseline -k {name}`",
            )
        if changed:
            return Outcome(
                False,
                f"the fingerprint of {name!r} changed since the baseline was recorded "
                f"({', '.join(changed)}); re-record with `pytest --rag-update-baseline -k {name}`",
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
        return Outcome(True, f"{key.name} of {key.retriever!r}: {fmt(metrics[key.name])} to be recorded")

    def refused(self, key: ItemKey) -> str | None:
        """The ratchet: why a lower value than the comparable baseline's will not be recorded."""
        if self.allow_regression or key.kind != "metric":
            return None
        comparison = self.comparison(key.retriever, key.name)
        if comparison is None or comparison.baseline is None or comparison.value >= comparison.baseline - EPSILON:
            return None
        return (
            f"refused to record {key.name} of {key.retriever!r}: {fmt(comparison.value)} is below the baseline's "
            f"{fmt(comparison.baseline)}; pass --rag-allow-regression to record it"
        )
