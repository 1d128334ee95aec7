"""The session object the pytest glue hands off to: load, run lazily, judge, record, report."""
from __future__ import annotations

import os
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .baseline import RERECORD, Baseline, Recorded, document, dumps, retriever_entry
from .baseline import load as load_baseline
from .compare import EPSILON, LatencyCheck, MetricCheck, Outcome, QuestionCheck, compare, fmt
from .config import Config, load_config
from .context import Workbench
from .errors import ConfigError, RagError, RetrieverError, RetrieverUnavailable
from .evaluate import RetrieverResult, run_retriever, score
from .files import write_atomic
from .fingerprint import chunks_digest, evalset_digest, global_changes, retriever_changes
from .loading import display, load_chunks, load_evalset
from .metrics import METRICS_VERSION
from .progress import Output, PlainOutput, Progress
from .records import Chunk, Question
from .reportdata import Comparison, ReportInput
from .report import latency_summary, summary_lines
from .resources import Resources, database_mode, database_url
from .tokens import describe
from .views import report_input
from .update import RunState, plan_update


@dataclass(frozen=True)
class Options:
    """Per-run choices, as parsed from the command line."""

    rootpath: Path
    config_path: str | None = None
    update: bool = False
    json_path: Path | None = None
    report_path: Path | None = None
    html_path: Path | None = None
    db: str | None = None
    db_url: str | None = None
    cache_mode: str = "readwrite"
    allow_regression: bool = False


@dataclass(frozen=True, order=True)
class ItemKey:
    """One collected item: `rag::<retriever>::<name>`, where name is a metric label or `question::<id>`."""

    retriever: str
    kind: str
    name: str

    @property
    def nodeid_name(self) -> str:
        if self.kind == "metric":
            return self.name
        if self.kind == "latency":
            return "latency"
        return f"{self.kind}::{self.name}"


class Skip(Exception):
    """Raised by `outcome` for an item whose retriever cannot run here."""


@dataclass
class Run:
    """What happened to one retriever: a result, an error, or a reason it was skipped."""

    result: RetrieverResult | None = None
    error: RagError | None = None
    skipped: str | None = None
    latencies: dict[str, float] = field(default_factory=dict)
    diagnostics: dict[str, float] = field(default_factory=dict)


class RagSession:
    def __init__(self, options: Options) -> None:
        self.options = options
        self.config: Config
        self.chunks: tuple[Chunk, ...]
        self.questions: tuple[Question, ...]
        self.baseline: Baseline | None
        self.runs: dict[str, Run] = {}
        self.selected: list[ItemKey] = []
        self.written: list[str] = []
        self.update_lines: list[str] = []
        self._comparisons: dict[tuple[str, str], Comparison | None] = {}
        self.failures: dict[ItemKey, Outcome] = {}
        self.annotations: list[str] = []
        self._fingerprint: dict[str, Any] | None = None
        self._bench: Workbench | None = None
        self._resources: Resources

    def load(self) -> None:
        """Read config, fixtures and baseline; any RagError here stops the run before it starts."""
        self.config = load_config(self.options.config_path, self.options.rootpath)
        self.chunks = load_chunks(self.config.chunks)
        self.questions = load_evalset(self.config.evalset, self.chunks)
        if any(spec.on_no_answer for spec in self.config.metrics) and all(q.answerable for q in self.questions):
            raise ConfigError(
                f"{self.config.where} key 'metrics': abstention is scored on no-answer questions and "
                f"{display(self.config.evalset)} has none; add some (\"relevant\": []) or drop abstention"
            )
        self.baseline = load_baseline(self.config.baseline)
        self._resources = Resources(
            self.config,
            self.chunks,
            database_mode(self.options.db, self.config.db, self.options.db_url),
            database_url(self.options.db_url),
            self.options.cache_mode,
        )

    def header_lines(self) -> list[str]:
        answerable = sum(1 for q in self.questions if q.answerable)
        lines = [
            f"rag: config {self.config.where}",
            f"rag: {len(self.chunks)} chunks, {len(self.questions)} questions "
            f"({answerable} answerable, {len(self.questions) - answerable} no-answer), "
            f"k={self.config.k}, metrics {', '.join(s.label for s in self.config.metrics)}",
        ]
        if self.baseline is None:
            lines.append(f"rag: no baseline yet at {display(self.config.baseline)}")
        else:
            lines.append(f"rag: baseline {display(self.config.baseline)}")
        if self.options.update:
            lines.append("rag: recording a new baseline (--rag-update-baseline)")
        if self.config.significance != "none":
            lines.append(
                f"rag: a drop fails only when a paired {self.config.significance} test gives p < {self.config.alpha:g}"
            )
        return lines + [f"rag: warning: {note}" for note in self.notes()]

    def notes(self) -> list[str]:
        """Warnings every report repeats: today, an eval set too small for its verdicts."""
        answerable = sum(1 for q in self.questions if q.answerable)
        if answerable >= self.config.min_questions:
            return []
        return [
            f"the eval set has {answerable} answerable questions, fewer than min_questions = "
            f"{self.config.min_questions}: a single question can move a mean by up to {1 / answerable:.2f}, "
            "too little data for a verdict to mean much"
        ]

    def item_keys(self) -> list[ItemKey]:
        """Per retriever: one item per metric, per answerable question with fail_on "question",
        and a latency item when `max_latency_ms` is set."""
        keys: list[ItemKey] = []
        for spec in self.config.retrievers:
            keys.extend(ItemKey(spec.name, "metric", metric.label) for metric in self.config.metrics)
            if "question" in self.config.fail_on:
                keys.extend(ItemKey(spec.name, "question", q.id) for q in self.questions if q.answerable)
            if spec.max_latency_ms is not None:
                keys.append(ItemKey(spec.name, "latency", "p95"))
        return keys

    def select(self, keys: list[ItemKey]) -> None:
        """Remember which items survived -k/-m: an update changes only their entries."""
        self.selected = list(keys)

    @property
    def resources(self) -> Resources:
        return self._resources

    @property
    def bench(self) -> Workbench:
        if self._bench is None:
            self._bench = Workbench(self.config, self.chunks, self._resources)
        return self._bench

    def prepare(self, out: Output) -> None:
        """Run every retriever a selected item needs, before the items report, with progress."""
        self._resources.out = out
        for name in dict.fromkeys(key.retriever for key in self.selected):
            self.run(name, out)

    def run(self, name: str, out: Output | None = None) -> Run:
        """Run a retriever over every question, once per session however many items ask."""
        if name in self.runs:
            return self.runs[name]
        outcome = Run()
        try:
            retrieve = self.bench.get(name)
            known = {chunk.id for chunk in self.chunks}
            with Progress(out or PlainOutput(), f"{name} over {len(self.questions)} questions", len(self.questions)) as bar:
                rankings, latencies = run_retriever(
                    name, retrieve, self.questions, self.config.depth, known, tick=bar.advance
                )
            outcome.result = score(name, self.questions, rankings, self.config.metrics, latencies)
            outcome.latencies = latencies
            if hasattr(retrieve, "diagnostics"):
                outcome.diagnostics = dict(retrieve.diagnostics(self.questions))
        except RetrieverUnavailable as exc:
            outcome.skipped = str(exc)
        except RagError as exc:
            outcome.error = exc
        except Exception as exc:
            outcome.error = RetrieverError(f"retriever {name!r} raised {_describe(exc)}")
        self.runs[name] = outcome
        return outcome

    def fingerprint(self) -> dict[str, Any]:
        if self._fingerprint is None:
            fp: dict[str, Any] = {
                "chunks_sha256": chunks_digest(self.chunks),
                "evalset_sha256": evalset_digest(self.questions),
                "k": self.config.k,
                "metrics_version": METRICS_VERSION,
                "tokenizer": describe(self.config.tokenizer),
                "retrievers": {spec.name: self._retriever_fingerprint(spec.name) for spec in self.config.retrievers},
            }
            self._fingerprint = fp
        return self._fingerprint

    def _retriever_fingerprint(self, name: str) -> dict[str, Any]:
        """Own parameters plus, under `reads`, those of every source: a changed source shows here."""
        spec = self.config.retriever(name)
        fp = dict(spec.fingerprint)
        if spec.type == "vector":
            try:
                fp["embedding"] = self._resources.embedding_fingerprint()
            except RagError as exc:
                fp["embedding"] = {"id": self.config.embedding_id or self.config.embedding, "error": str(exc)}
            fp["index"] = self.config.index.fingerprint
        if spec.type == "python":
            fp["embedding"] = self.config.embedding_id or self.config.embedding
        if spec.sources:
            fp["reads"] = {source: self._retriever_fingerprint(source) for source in spec.sources}
        return fp

    def comparable(self) -> Outcome | None:
        """A failing outcome shared by every item when no baseline can be compared with."""
        if self.baseline is None:
            return Outcome(False, f"no baseline at {display(self.config.baseline)}; {RERECORD}")
        changed = global_changes(self.baseline.fingerprint, self.fingerprint())
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
        if retriever_changes(self.baseline.fingerprint, self.fingerprint(), name):
            return None
        return self.baseline.retrievers.get(name)

    def comparison(self, name: str, label: str) -> Comparison | None:
        """Baseline, value, delta (and p, CI in significance mode), computed once per entry."""
        if (name, label) not in self._comparisons:
            run = self.runs.get(name)
            recorded = self.recorded(name)
            found = None
            if run is not None and run.result is not None and recorded is not None and label in recorded.metrics:
                found = compare(label, recorded, run.result, self.config.significance)
            self._comparisons[(name, label)] = found
        return self._comparisons[(name, label)]

    def outcome(self, key: ItemKey) -> Outcome:
        """The verdict of one item; failing ones are kept for the reports and annotations."""
        try:
            found = self._outcome(key)
        except RagError as exc:
            found = Outcome(False, str(exc))
        if not found.passed:
            self.failures[key] = found
        return found

    def _outcome(self, key: ItemKey) -> Outcome:
        run = self.run(key.retriever)
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
        if self.options.update:
            return self._recording_outcome(key, run.result)
        blocked = self._blocked(key.retriever)
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

    def _blocked(self, name: str) -> Outcome | None:
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
        changed = retriever_changes(self.baseline.fingerprint, self.fingerprint(), name)
        if changed:
            return Outcome(
                False,
                f"the fingerprint of {name!r} changed since the baseline was recorded "
                f"({', '.join(changed)}); re-record with `pytest --rag-update-baseline -k {name}`",
            )
        return None

    def _recording_outcome(self, key: ItemKey, result: RetrieverResult) -> Outcome:
        if key.kind == "question":
            return Outcome(True, f"question {key.name} of {key.retriever!r}: its ranking is recorded")
        value = result.metrics[key.name]
        refused = self.refused(key)
        if refused is not None:
            return Outcome(False, refused)
        return Outcome(True, f"{key.name} of {key.retriever!r}: {fmt(value)} to be recorded")

    def refused(self, key: ItemKey) -> str | None:
        """The ratchet: why a lower value than the comparable baseline's will not be recorded."""
        if self.options.allow_regression or key.kind != "metric":
            return None
        comparison = self.comparison(key.retriever, key.name)
        if comparison is None or comparison.baseline is None or comparison.value >= comparison.baseline - EPSILON:
            return None
        return (
            f"refused to record {key.name} of {key.retriever!r}: {fmt(comparison.value)} is below the baseline's "
            f"{fmt(comparison.baseline)}; pass --rag-allow-regression to record it"
        )

    def finish(self) -> None:
        """Write the requested files; the baseline only when every selected retriever ran cleanly."""
        if self.options.json_path is not None and self.runs:
            self._write(self.options.json_path, dumps(self.results_document()))
        if self.runs and (self.options.report_path or self.options.html_path or in_github_actions()):
            self._write_reports(report_input(self))
        if self.options.update and self.runs:
            self._update_baseline()
        if self._bench is not None:
            self._bench.close()

    def _write_reports(self, data: ReportInput) -> None:
        if self.options.report_path is not None:
            from .report_markdown import render_markdown

            self._write(self.options.report_path, render_markdown(data))
        if self.options.html_path is not None:
            from .report_html import render_html

            self._write(self.options.html_path, render_html(data))
        if in_github_actions():
            from .github import error_annotations, step_summary

            self.annotations = error_annotations(data)
            summary = os.environ.get("GITHUB_STEP_SUMMARY")
            if summary:
                with open(summary, "a", encoding="utf-8") as stream:
                    stream.write(step_summary(data) + "\n")

    def close(self) -> None:
        if hasattr(self, "_resources"):
            self._resources.close()

    def _write(self, path: Path, text: str) -> None:
        write_atomic(path, text)
        self.written.append(f"rag: wrote {display(path)}")

    def results_document(self) -> dict[str, Any]:
        entries = {}
        for name, run in self.runs.items():
            if run.result is None:
                continue
            entry = retriever_entry(run.result)
            entry["latency_ms"] = latency_summary(run.result)
            if run.diagnostics:
                entry["diagnostics"] = run.diagnostics
            comparisons = {
                label: comparison for label in run.result.metrics
                if (comparison := self.comparison(name, label)) is not None
            }
            if comparisons:
                entry["comparison"] = {
                    label: {
                        "baseline": c.baseline, "value": c.value, "delta": c.delta,
                        "p_value": c.p_value, "ci95": list(c.ci95) if c.ci95 is not None else None,
                    }
                    for label, c in comparisons.items()
                }
            entries[name] = entry
        return document(self.config.k, self.fingerprint(), entries)

    def _update_baseline(self) -> None:
        selected: dict[str, set[str]] = {}
        refused: list[str] = []
        for key in self.selected:
            if key.kind != "metric":
                continue
            selected.setdefault(key.retriever, set())
            reason = self.refused(key)
            if reason is None:
                selected[key.retriever].add(key.name)
            else:
                refused.append(f"rag: {reason}")
        states = {
            name: RunState(run.result, run.error is not None, run.skipped) for name, run in self.runs.items()
        }
        plan = plan_update(self.config, self.baseline, self.fingerprint(), states, selected)
        self.update_lines = refused + plan.lines
        if plan.document is None:
            return
        text = dumps(plan.document)
        if self.config.baseline.exists() and self.config.baseline.read_text(encoding="utf-8") == text:
            self.update_lines.append(f"rag: {display(self.config.baseline)} is already up to date")
            return
        self._write(self.config.baseline, text)

    def summary_lines(self) -> list[str]:
        comparable = self.baseline is not None and not global_changes(self.baseline.fingerprint, self.fingerprint())
        lines = summary_lines(self.config, self.runs, self.baseline, comparable)
        notes = [f"warning: {note}" for note in self.notes()]
        return [*lines, *notes, *self.update_lines, *self.written]


def in_github_actions() -> bool:
    return os.environ.get("GITHUB_ACTIONS") == "true"


def _describe(exc: BaseException) -> str:
    """`Type: message (file:line)` for the innermost frame, enough to find a user's bug."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" ({frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"
