"""The session the pytest glue hands off to: it holds the run's state and calls each stage in turn.

load (config, eval set, baseline) -> run the selected retrievers (seeding the database on first
need) -> evaluate once (`gate/evaluation.py`: the record, each item's verdict, the baseline update)
-> hand each item its verdict -> write (results file, reports, baseline). The stages are plain
modules; this object only remembers what happened.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..bar.exam import base_questions
from ..bar.places import Edit
from ..baseline.exams import LOCAL, KeptExam
from ..baseline.fingerprint import fingerprint
from ..baseline.format import Baseline, dumps
from ..baseline.format import load as load_baseline
from ..baseline.verify import verify, verify_places
from ..cache.store import Mode as CacheMode
from ..config.outputs import check_outputs
from ..config.settings import Config, load_config
from ..core.errors import ConfigError
from ..core.progress import Output, PlainOutput
from ..core.timing import Phases
from ..core.values import fmt, listed
from ..database.settings import DbMode
from ..evalset.corpus import chunking_share
from ..evalset.documents import load_documents
from ..evalset.records import Chunk, Question
from ..evalset.segments import check_values
from ..evalset.split import check_sizes, held, leak_line, leaks, sides
from ..files.paths import Snapshot, display, snapshot
from ..gate.evaluation import Evaluation, evaluate, verdict
from ..gate.items import ItemKey, item_keys
from ..gate.rechunk import prepared
from ..gate.report import described, header_lines
from ..labels.explain import missed, recorded_rankings
from ..labels.gold import recorded_gold
from ..labels.relabel import units
from ..record.exam import gate_ids
from ..record.report import ReportInput
from ..record.types import Record, TuneSplit, Verdict
from ..report.terminal import summary_lines
from ..report.view import view
from ..retrievers.corpus_tokens import query_tokens
from ..runner.chunkings import Chunkings
from ..runner.resources import database_mode, database_url
from ..runner.runs import Runner
from ..scoring.evaluate import Run, places, score
from ..scoring.metrics import primary
from ..shards.assignment import Shard
from ..shards.items import shard_outcome
from ..shards.partial import partial_document
from .inputs import load_inputs
from .outputs import Judgement, Writer, write_judgement
from .trust import edited, kept_exam, loosened_line


@dataclass(frozen=True)
class Options:
    """Per-run choices, as parsed from the command line."""

    rootpath: Path
    config_path: str | None = None
    update: bool = False
    json_path: Path | None = None
    reports: Mapping[str, Path] = field(default_factory=dict, hash=False)
    """Report format name (see report.formats.FORMATS) -> where to write it."""
    db: DbMode | None = None
    db_url: str | None = None
    outputs: Mapping[str, Path] = field(default_factory=dict, hash=False)
    """Option (`--rag-json`, `--rag-report`, ...) -> the file it writes: checked before the run."""
    cache_mode: CacheMode = "readwrite"
    reuse: bool = True
    """False with --rag-no-reuse: every retriever runs, its latency measured (runner/reuse.py)."""
    allow_regression: bool = False
    every_tag: bool = False
    """--rag-tags: the per-tag table with every row, not only those that moved."""
    shard: Shard | None = None
    """--rag-shard: run this shard's questions and write a partial record to json_path; judge nothing."""


class RagSession:
    """What was loaded, what ran, which items failed, what was written: one instance per pytest run."""

    config: Config
    chunks: tuple[Chunk, ...]
    questions: tuple[Question, ...]
    share: tuple[Question, ...]
    """The questions this run asks: all of them, or a shard's."""
    baseline: Baseline | None
    baseline_read: Snapshot
    """The baseline's bytes as this run read them: an update writes only over those (`write_atomic`)."""
    kept: KeptExam | None
    """Where the base's exam is read when not from the baseline (a pull request's CI: `glue/trust.py`)."""
    edits: dict[str, Edit]
    """Across a chunker change, each document edited since the bar's places were recorded: its edit."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.selected: list[ItemKey] = []
        self.update_lines: list[str] = []
        self.written: list[str] = []
        self.annotations: list[str] = []
        self.writer = Writer(self.written, self.written, "`pytest --rag-update-baseline`")
        """Writes the requested files: `rag: wrote PATH`, or one line that fails the run."""
        self._runner: Runner | Chunkings | None = None
        self._evaluation: Evaluation | None = None
        self.phases = Phases()
        self.corpus: dict[str, Any] | None = None
        self.tune: tuple[Question, ...] = ()
        self.everyone: tuple[Question, ...] = ()
        """Every question of the eval set, in its order: what the runner's cache keys name."""
        """The `tune` questions (evalset/split.py): asked, scored apart, never judged."""
        self.leak_line: str | None = None
        self.held: tuple[Question, ...] = ()
        """Tune questions the base's exam judged: judged here still (`_hold`)."""
        self.moved_line: str | None = None
        self._gated: dict[str, Run] = {}
        """The corpus's record as the team's database computed it, without a chunks file."""
        self.input_warnings: list[str] = []
        """Warnings about the inputs, known once they are loaded: a budget that most chunks do not fit."""

    def load(self) -> None:
        """Read config, fixtures and baseline; any RagError here stops the run before it starts."""
        with self.phases.phase("load and validate"):
            self._load()

    def _load(self) -> None:
        self.config = load_config(self.options.config_path, self.options.rootpath)
        check_outputs(self.config, self.options.outputs, self.options.update)
        self.baseline_read = snapshot(self.config.baseline)  # before the read: a write meanwhile is seen
        self.baseline = load_baseline(self.config.baseline)
        found = load_inputs(self.config, self.baseline, "the gate", mode=self.options.cache_mode,
                            team=True, db_url=self.options.db_url, config_path=self.options.config_path)
        self.chunks, self.questions, self.corpus = found.chunks, found.questions, found.corpus
        self.input_warnings = [f"warning: {line}" for line in found.warnings]
        self.input_warnings += check_values(self.questions, self.config.segments, self.config.evalset)
        if self.config.documents is not None:  # a chunker change: judged by the gold spans
            self.config, self.baseline = prepared(self.config, self.baseline)
        self._split()
        if any(spec.on_no_answer for spec in self.config.metrics) and all(q.answerable for q in self.questions):
            raise ConfigError(
                f"{self.config.where} key 'metrics': abstention is scored on no-answer questions and "
                f"{display(self.config.evalset)} has none; add some (\"relevant\": []) or drop abstention"
            )
        shard = self.options.shard
        # a shard judges nothing (the merge that judges reads the base's exam), but asks the questions it holds
        kept = kept_exam(self.config.baseline, self.baseline) if shard is None or self.tune else None
        self._hold(kept)
        if self.baseline is not None:
            recorded_gold(self.baseline)  # a damaged record of the gold texts fails here, before anything runs
            verify(self.baseline, self.config.k, self.chunks, self.questions)
            if self.config.documents is not None:
                verify_places(self.baseline, load_documents(self.config.documents))
        self.kept = kept if shard is None else None
        self.edits = edited(self.config, self.baseline, self.kept)
        self.share = tuple(q for q in self.questions if shard is None or shard.holds(q.id))
        asked = {q.id for q in (*self.share, *(self.tune if shard is None else ()))}
        self.asked = tuple(q for q in self.everyone if q.id in asked)  # eval-set order: the reuse cache's key

    def _split(self) -> None:
        """Where the questions enter judging: the gate's stay in `questions`, the tune ones go to `tune`, run
        beside them and scored apart (`tune_line`), never judged nor recorded (evalset/split.py)."""
        self.everyone = self.questions
        side_of = sides(self.questions, self.config.split)
        self.tune = tuple(q for q in self.questions if side_of[q.id] == "tune")
        self.leak_line = None
        if not self.tune:
            return
        gate = tuple(q for q in self.questions if side_of[q.id] == "gate")
        check_sizes(len(gate), len(self.tune), self.config.min_questions, self.config.where)
        self.leak_line = leak_line(leaks(self.questions, side_of, query_tokens(
            self.config.cache_dir, self.config.tokenizer, self.config.workers, [q.query for q in self.questions],
            self.options.cache_mode)))
        self.questions = gate

    def _hold(self, kept: KeptExam | None) -> None:
        """The tune questions the base's exam judged (its gate questions: the base revision's in a pull
        request's CI, else the work tree's baseline's) stay judged: a change that moves questions out of the
        gate is still judged on them (evalset/split.py, `held`). An update does not hold them: it records
        the gate's questions alone, so they leave the bar (the question rule judging their leaving) once it
        is merged."""
        self.held = ()
        fingerprint = kept.fingerprint if kept is not None else (
            self.baseline.fingerprint if self.baseline is not None else None)
        if not self.tune or fingerprint is None:
            return
        moved = held(self.tune, gate_ids(fingerprint))
        if self.options.update:
            self.moved_line = (f"rag: {len(moved)} question(s) the baseline judged are on the tune side now "
                               f"({listed([q.id for q in moved], limit=5)}): this update records them no more, and "
                               "the pull-request check judges them under the base revision's exam") if moved else None
            return
        self.held = moved
        ids = {q.id for q in (*self.questions, *moved)}
        self.questions = tuple(q for q in self.everyone if q.id in ids)
        if moved:
            self.moved_line = (f"rag: {len(moved)} question(s) moved to the tune side since the base's exam "
                               f"({listed([q.id for q in moved], limit=5)}) are judged here still: they leave the "
                               "bar once a baseline recorded without them is merged")

    def header_lines(self) -> list[str]:
        exam = [] if self.baseline is None else [f"rag: {LOCAL if self.kept is None else self.kept.line}"]
        lines = header_lines(self.config, self.chunks, self.questions, self.baseline, self.options.update)
        return [*lines, *exam, *([self.leak_line] if self.leak_line else []),
                *([self.moved_line] if self.moved_line else []),
                *(f"rag: {line}" for line in self.input_warnings)]

    def item_keys(self) -> list[ItemKey]:
        """The gate's items; a segment value only the base's exam names still has its items."""
        base = base_questions(self.baseline.fingerprint, self.kept) \
            if self.config.segments and self.baseline is not None else ()
        return item_keys(self.config, self.questions, base)

    def select(self, keys: list[ItemKey]) -> None:
        """Remember which items survived -k/-m: an update changes only their entries."""
        self.selected = list(keys)

    def _start(self, out: Output) -> Runner | Chunkings:
        if self._runner is None:
            mode = database_mode(self.options.db, self.config.db, self.options.db_url)

            def start(chunks: tuple[Chunk, ...], questions: tuple[Question, ...]) -> Runner:
                return Runner(
                    self.config, chunks, questions, db_mode=mode, dsn=database_url(self.options.db_url),
                    cache_mode=self.options.cache_mode, phases=self.phases, out=out,
                    reuse_rankings=self.options.reuse and self.config.reuse_rankings,
                )

            self._runner = (Chunkings(self.config, self.chunks, self.asked, start) if self.config.chunkings
                            else start(self.chunks, self.asked))
        return self._runner

    @property
    def runner(self) -> Runner | Chunkings:
        """Started by `prepare` with the terminal's output, else on first use with plain output."""
        return self._start(PlainOutput())

    @property
    def runs(self) -> Mapping[str, Run]:
        """The runs as judging sees them: over the gate's questions alone (the runner also asked the tune ones)."""
        ran = self._runner.runs if self._runner is not None else {}
        if not self.tune or self.options.shard is not None:
            return ran
        for name, run in ran.items():
            if name not in self._gated:
                self._gated[name] = self._scored(name, run, self.questions)
        return {name: self._gated[name] for name in ran}

    def _scored(self, name: str, run: Run, questions: tuple[Question, ...]) -> Run:
        """`run` scored over `questions` alone, by the labels of the chunking its retriever reads."""
        if run.result is None:
            return run
        if self.config.chunkings:
            questions = chunking_share(self.config.retriever(name).chunking, self.chunks, questions)[1]
        result = run.result
        rankings = {q.id: q.ranking for q in result.questions}
        latencies = {q.id: q.latency_ms for q in result.questions}
        return replace(run, result=score(result.name, questions, rankings, self.config.shown, latencies,
                                         places(self.chunks, self.config.shown)))

    def tune_line(self) -> str | None:
        """The tune questions' primary metric per retriever, one line: scored apart, never in the bar."""
        found = self.tune_values()
        if not found:
            return None
        label = primary([spec.label for spec in self.config.metrics])
        shown = ", ".join(f"{name} {fmt(values[label])}" for name, values in found.items() if label in values)
        return (f"rag: tune split: {len(self.tune)} questions scored apart, never judged nor recorded "
                f"({label}: {shown}); {len(self.questions)} gate questions judged"
                + (f", {len(self.held)} of them moved to tune since the base's exam" if self.held else ""))

    def tune_values(self) -> dict[str, dict[str, float]]:
        """Each run's means over the tune questions (what `--rag-json` writes as `tune`)."""
        ran = self._runner.runs if self._runner is not None else {}
        if not self.tune or self.options.shard is not None:
            return {}
        found = {name: self._scored(name, run, self.tune).result for name, run in ran.items()}
        return {name: dict(result.metrics) for name, result in found.items() if result is not None}

    def evaluation(self) -> Evaluation:
        """The run judged once (`gate/evaluation.py`), on first use (every selected retriever has run by
        then: `prepare` or `verdict` ran it), with the fingerprint of what ran, from the runner's set-up."""
        if self._evaluation is None:
            found = fingerprint(self.config, self.chunks, self.questions, self._setup(), self.corpus)
            reused = self._runner.reused if self._runner is not None else ()
            partly = self._runner.reused_questions if self._runner is not None else {}
            self._evaluation = evaluate(
                self.config, self.questions, self.baseline, found, self.runs, self.selected,
                update=self.options.update, allow_regression=self.options.allow_regression, reused=reused,
                reused_questions=partly,
                places=places(self.chunks, self.config.shown), kept=self.kept, edits=self.edits,
                units=units(self.config, self.baseline, self.chunks),
            )
        return self._evaluation

    def _setup(self) -> dict[str, dict[str, object]]:
        """What the types of the retrievers selected or run, and of their sources, add to the fingerprint."""
        return self.runner.setup([*self._selected_retrievers(), *self.runs])

    def _selected_retrievers(self) -> list[str]:
        return list(dict.fromkeys(key.retriever for key in self.selected))

    def prepare(self, out: Output) -> None:
        """Run every retriever a selected item needs, before the items report, with progress."""
        runner = self._start(out)
        runner.reclaim()
        names = self._selected_retrievers()
        runner.plan(names)
        for name in names:
            self.run(name)

    def run(self, name: str) -> Run:
        """Run a retriever over every question, once per session however many items ask."""
        if name not in self.runs:
            self.runner.run(name)
            warning = self.runner.flush()
            if warning is not None:
                self.update_lines.append(warning)
        return self.runner.runs[name]

    def verdict(self, key: ItemKey) -> Verdict:
        """A selected item's verdict, as data: pytest-xdist's controller judges, its workers report. A
        shard's item says what was measured (`gate/shard.py`); the merge judges."""
        shard = self.options.shard
        if shard is not None:
            return verdict(lambda: shard_outcome(key, self.run(key.retriever), shard))[0]
        for name in self._selected_retrievers():  # run by `prepare`, unless an item asks first
            self.run(name)
        return self.evaluation().verdicts[key]

    def record(self) -> Record:
        """The one output of judging: what `--rag-json` writes and every report is a view of."""
        return self.evaluation().record

    def report_input(self) -> ReportInput:
        record = self.record()
        explained = missed(self.config, self.chunks, self.questions, recorded_rankings("this run", record.retrievers)
                           ) if "html" in self.options.reports else None
        return view(record, self.questions, self.chunks, described(
            self.config, self.runs, self.runner.embedder_description, self.runner.database_description), explained)

    def finish(self) -> None:
        """Write the requested files; the baseline only when every selected retriever ran cleanly. A shard
        writes its partial record alone: reports, results and baselines are the merge's."""
        if self.options.shard is not None and self.options.json_path is not None and self.runs:
            setup = self._setup()
            found = fingerprint(self.config, self.chunks, self.questions, setup, self.corpus)
            described = {"embedder": self.runner.embedder_description, "database": self.runner.database_description}
            self.writer(self.options.json_path, dumps(partial_document(
                self.config, self.options.shard, found, setup, [key.nodeid for key in self.selected],
                [q.id for q in self.share], self.runs, described)))
        plan = self.evaluation().update if self.options.update and self.runs else None
        if plan is not None:
            self.update_lines = plan.lines
        if self.runs and self.options.shard is None:
            self.annotations = write_judgement(Judgement(
                self.options.reports, self.report_input, self.options.json_path, self._timed, plan,
                self.config.baseline, self.baseline_read), self.writer, self.phases)
        if self._runner is not None:
            self._runner.finish()

    def _timed(self) -> Record:
        """The record `--rag-json` writes: with the phases' seconds and the tune questions' values."""
        tune = self.tune_values()
        return self.evaluation().timed(self.phases.rounded(),
                                       TuneSplit(tuple(q.id for q in self.tune), tune) if tune else None)

    @property
    def write_failed(self) -> bool:
        return self.writer.failed

    @property
    def failed_lines(self) -> list[str]:
        """What fails the run as a whole, one line each (a gate run without a baseline)."""
        return list(self.evaluation().failed) if self.runs and self.options.shard is None else []

    def summary_lines(self, columns: int | None = None) -> list[str]:
        if self.options.shard is not None:
            return [f"rag: shard {self.options.shard}: {len(self.share)} of {len(self.questions)} questions, "
                    "judged by `ragretrieval merge` over the partial records of all shards",
                    self.phases.line(), *self.update_lines, *self.written]
        lines = summary_lines(view(self.record()), self.options.every_tag, columns)
        tune = self.tune_line()
        loosened = loosened_line(self.config, self.kept)
        return [*lines, *([tune] if tune else []), *self.input_warnings, *self.evaluation().warnings,
                *([loosened] if loosened else []), self.phases.line(), *self.update_lines, *self.written,
                *self.failed_lines]

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()
