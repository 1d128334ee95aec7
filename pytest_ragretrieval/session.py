"""The session object the pytest glue hands off to: load, run lazily, judge, record, report."""
from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .baseline import RERECORD, Baseline, document, dumps, retriever_entry, write_atomic
from .baseline import load as load_baseline
from .compare import MetricCheck, Outcome, fmt
from .config import Config, load_config
from .context import Workbench
from .errors import RagError, RetrieverError, RetrieverUnavailable
from .evaluate import RetrieverResult, run_retriever, score
from .fingerprint import chunks_digest, evalset_digest, global_changes, retriever_changes
from .loading import display, load_chunks, load_evalset
from .metrics import METRICS_VERSION
from .progress import Output, PlainOutput, Progress
from .records import Chunk, Question
from .report import latency_summary, summary_lines
from .resources import Resources, database_mode, database_url
from .tokens import describe
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
        return self.name if self.kind == "metric" else f"{self.kind}::{self.name}"


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
        self._fingerprint: dict[str, Any] | None = None
        self._bench: Workbench | None = None
        self._resources: Resources

    def load(self) -> None:
        """Read config, fixtures and baseline; any RagError here stops the run before it starts."""
        self.config = load_config(self.options.config_path, self.options.rootpath)
        self.chunks = load_chunks(self.config.chunks)
        self.questions = load_evalset(self.config.evalset, self.chunks)
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
        return lines

    def item_keys(self) -> list[ItemKey]:
        keys = []
        for spec in self.config.retrievers:
            keys.extend(ItemKey(spec.name, "metric", metric.label) for metric in self.config.metrics)
        return keys

    def select(self, keys: list[ItemKey]) -> None:
        """Remember which items survived -k/-m: an update changes only their entries."""
        self.selected = list(keys)

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
            fp["embedding"] = self._resources.embedding_fingerprint()
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

    def outcome(self, key: ItemKey) -> Outcome:
        run = self.run(key.retriever)
        if run.skipped is not None:
            raise Skip(run.skipped)
        if run.error is not None:
            return Outcome(False, str(run.error))
        assert run.result is not None
        if self.options.update:
            return self._recording_outcome(key, run.result)
        blocked = self.comparable()
        if blocked is not None:
            return blocked
        assert self.baseline is not None
        recorded = self.baseline.retrievers.get(key.retriever)
        if recorded is None and key.retriever in self.baseline.unavailable:
            raise Skip(
                f"{key.retriever} has no baseline value: it could not run where the baseline was recorded "
                f"({self.baseline.unavailable[key.retriever]}); record it with "
                f"`pytest --rag-update-baseline -k {key.retriever}` where it runs"
            )
        if recorded is None:
            return Outcome(
                False,
                f"retriever {key.retriever!r} is not in the baseline; record it with "
                f"`pytest --rag-update-baseline -k {key.retriever}`",
            )
        changed = retriever_changes(self.baseline.fingerprint, self.fingerprint(), key.retriever)
        if changed:
            return Outcome(
                False,
                f"the fingerprint of {key.retriever!r} changed since the baseline was recorded "
                f"({', '.join(changed)}); re-record with `pytest --rag-update-baseline -k {key.retriever}`",
            )
        spec = next(s for s in self.config.metrics if s.label == key.name)
        return MetricCheck(key.retriever, spec, self.config.tolerance.for_metric(spec)).evaluate(recorded, run.result)

    def _recording_outcome(self, key: ItemKey, result: RetrieverResult) -> Outcome:
        return Outcome(True, f"{key.name} of {key.retriever!r}: {fmt(result.metrics[key.name])} to be recorded")

    def finish(self) -> None:
        """Write the requested files; the baseline only when every selected retriever ran cleanly."""
        if self.options.json_path is not None and self.runs:
            self._write(self.options.json_path, dumps(self.results_document()))
        if self.options.update and self.runs:
            self._update_baseline()
        if self._bench is not None:
            self._bench.close()

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
            entries[name] = entry
        return document(self.config.k, self.fingerprint(), entries)

    def _update_baseline(self) -> None:
        selected: dict[str, set[str]] = {}
        for key in self.selected:
            if key.kind == "metric":
                selected.setdefault(key.retriever, set()).add(key.name)
        states = {
            name: RunState(run.result, run.error is not None, run.skipped) for name, run in self.runs.items()
        }
        plan = plan_update(self.config, self.baseline, self.fingerprint(), states, selected)
        self.update_lines = plan.lines
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
        return [*lines, *self.update_lines, *self.written]


def _describe(exc: BaseException) -> str:
    """`Type: message (file:line)` for the innermost frame, enough to find a user's bug."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" ({frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"
