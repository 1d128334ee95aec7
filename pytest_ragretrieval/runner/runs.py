"""The runs of one session: each selected retriever over the eval set, once, however many items ask."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..config.settings import Config
from ..core.errors import RagError, RetrieverError
from ..core.progress import Output
from ..core.timing import Phases
from ..database.dsn import redact
from ..evalset.records import Chunk, Question
from ..record.run import RetrieverRun
from ..retrievers.protocol import asked
from ..scoring.evaluate import Run, places
from . import reuse
from .execute import checked_ranking, execute
from .resources import Resources
from .workbench import Workbench

if TYPE_CHECKING:
    from ..cache.store import Mode as CacheMode
    from ..database.settings import DbMode
    from ..retrievers.candidates import Earlier


def required(name: str, config: Config, run: Run) -> Run:
    """A retriever with `required = true` that cannot run here fails the run instead of being skipped."""
    if run.skipped is None or not config.retriever(name).required:
        return run
    why = f"retriever {name!r} is required (required = true) but cannot run here: {run.skipped}"
    return Run(error=RetrieverError(why))


class Runner:
    """Runs retrievers over the eval set: the database and the embedder start on first need, each
    retriever is built once, each ranking computed once. Before judging it also says, as plain data,
    what the fingerprints of the retrievers run add (`setup`), so the judge computes and calls nothing."""

    def __init__(
        self, config: Config, chunks: Sequence[Chunk], questions: Sequence[Question], *, db_mode: DbMode,
        dsn: str | None, cache_mode: CacheMode, phases: Phases, out: Output, reuse_rankings: bool = True,
    ) -> None:
        """`reuse_rankings`: a reusable retriever whose inputs are all unchanged since its cached run is
        not run again (runner/reuse.py); False measures every retriever (`--rag-no-reuse`)."""
        self.config = config
        self.chunks = tuple(chunks)
        self.questions = tuple(questions)
        self.phases = phases
        self.out = out
        self.resources = Resources(config, self.chunks, db_mode, dsn, cache_mode, phases, out)
        self.bench = Workbench(config, self.chunks, self.resources, self.questions)
        self.resources.before_embedding = self.bench.tokenize_ahead
        self.bench.cached = self._source
        self.bench.earlier = self._earlier
        self.spans = places(self.chunks, config.shown)
        """The chunks' spans by id when a span metric is listed, built once."""
        self.runs: dict[str, Run] = {}
        self.reuse = reuse_rankings
        self.reused: list[str] = []
        """The retrievers whose rankings (and latency) came from their cached run, in the order asked."""
        self.reused_questions: dict[str, tuple[int, int]] = {}
        """The retrievers run for new or edited questions alone: (questions reused, questions searched)."""
        self._common: dict[str, object] | None = None
        self._partial: dict[str, object] | None = None
        self._uncut: dict[str, object] | None = None
        self._partial_keys: dict[str, tuple[str | None, str | None]] = {}
        self._setup: dict[str, dict[str, object]] = {}
        self._running: str | None = None

    def reclaim(self) -> None:
        """Remove what killed runs left (embedded servers), before this run starts its own."""
        self.resources.reclaim()

    def plan(self, names: Sequence[str]) -> None:
        """The retrievers this session runs: those whose corpus tokens are not cached are tokenized on
        another process while the corpus is embedded (`Workbench.tokenize_ahead`)."""
        self.bench.planned = tuple(names)

    def run(self, name: str) -> Run:
        """The run of `name`, done on first request (or its cached run, reused); never raises (a failure
        is the run's error)."""
        if name not in self.runs:
            known = {chunk.id for chunk in self.chunks}
            path = self._entry_path(name)
            cached = None
            if path is not None and self.reuse and path.exists():
                with self.phases.phase("reused rankings"):
                    cached = reuse.read(path, name, self._key(name, with_setup=False), lambda: self._key(name),
                                        self.questions, self.config.shown, self.config.depth, known, self.spans)
            if cached is not None:
                self.reused.append(name)
                self.out.line(f"rag: {name}: rankings reused, every input unchanged since its cached run "
                              "(latency as measured then; --rag-no-reuse runs it)")
                self.runs[name] = cached
                return cached
            self._running = name
            try:
                self.runs[name] = required(name, self.config, execute(
                    name, lambda: self.bench.get(name), self.questions, self.config.shown, self.config.depth, known,
                    self.out, self.phases, self.spans,
                ))
            finally:
                self._running = None
            narrowed = self.bench.narrowed(name)
            if narrowed:
                self.out.line(f"rag: {name}: {narrowed} of {len(self.questions)} questions ranked from their cached "
                              "rankings and the chunks changed since (exact search: the same rankings as a full "
                              "search; --rag-no-reuse searches in full)")
            notes = self.resources.notes.get(name)
            if notes:
                self.runs[name] = replace(self.runs[name], notes=(*self.runs[name].notes, *notes))
            if path is not None and self.resources.cache.mode == "readwrite":
                self._keep(path, name)
        return self.runs[name]

    def keep_again(self) -> None:
        """Cache again the runs this runner made, under keys computed now: another chunking's runner that
        embedded after them added files to the embedding cache, which their keys name (`_keep`)."""
        for name in self.runs:
            path = self._entry_path(name)
            if name not in self.reused and path is not None and self.resources.cache.mode == "readwrite":
                self._keep(path, name)

    def _source(self, name: str) -> RetrieverRun | None:
        """`name`'s cached rankings, for the retriever being run that reads it (a fusion, a reranker), when
        every input of `name` is unchanged and no latency item counts its latency: a change of the
        fusion alone then runs the fusion alone, with no index built and no database started. Else, for
        it or the retriever being run, those of the questions unchanged when every other input is
        (`reuse.partial`): only the added or edited questions are searched."""
        path = self._entry_path(name)
        if path is None or not self.reuse or not path.exists():
            return None
        if name != self._running and reuse.measured(self.config, name):
            return None
        known = {chunk.id for chunk in self.chunks}
        if name != self._running:
            with self.phases.phase("reused rankings"):
                found = reuse.source(path, name, self._key(name, with_setup=False), lambda: self._key(name),
                                     self.questions, self.bench.depth(name), known)
            if found is not None:
                self.out.line(f"rag: {name}: rankings reused for {self._running}, every input of {name} "
                              "unchanged since its cached run")
                return found
        if not reuse.per_question(self.config, name):
            return None
        with self.phases.phase("reused rankings"):
            inputs, wanted = self._partial_key(name)
            found = reuse.partial(path, name, inputs, lambda: wanted, self.questions, self.bench.depth(name), known)
        if found is not None:
            searched = len(self.questions) - len(found.rankings)
            self.reused_questions[name] = (len(found.rankings), searched)
            self.out.line(f"rag: {name}: rankings of {len(found.rankings)} of {len(self.questions)} questions "
                          f"reused from its cached run, every other input unchanged; {searched} searched")
        return found

    def _earlier(self, name: str) -> Earlier | None:
        """`name`'s cached rankings by the digest of each question's vector, with its chunks' digests, when
        every input but the corpus, the questions and the embedding cache's files is unchanged (an exact
        vector search after a corpus edit: `reuse.narrowed`) and no latency item counts its latency."""
        path = self._entry_path(name)
        if path is None or not self.reuse or reuse.measured(self.config, name):
            return None
        with self.phases.phase("reused rankings"):
            return reuse.narrowed(path, name, self._key(name, questions=False, corpus=False), self.bench.depth(name))

    def _keep_vectors(self, path: Path, name: str, wanted: str) -> None:
        """Beside a vector search's entry, its vectors' digests (`reuse.keep_vectors`), when this run read
        the corpus's vectors (a run that searched nothing has none to digest, and keeps none)."""
        if self.config.retriever(name).type != "vector" or not self.resources.embedded:
            return
        inputs = self._key(name, questions=False, corpus=False)
        if inputs is None:
            return
        from ..retrievers.candidates import vector_digests

        ids, matrix = self.resources.corpus_vectors()
        queries = self.resources.embedder.embed([asked(question).query for question in self.questions], None, "query")
        reuse.keep_vectors(path, inputs, wanted, dict(zip(ids, vector_digests(matrix), strict=True)),
                           dict(zip([q.id for q in self.questions], vector_digests(queries), strict=True)))

    def _partial_key(self, name: str) -> tuple[str | None, str | None]:
        """`name`'s keys without the questions, as they were before this run embedded anything: a source
        run before it (a vector search of the new questions) adds query vectors to the embedding cache,
        whose files its key names. So the first one asked computes them for every planned retriever."""
        if name not in self._partial_keys:
            for each in dict.fromkeys([*self.config.reading(self.bench.planned), name]):
                if each not in self._partial_keys and reuse.per_question(self.config, each):
                    self._partial_keys[each] = (self._key(each, with_setup=False, questions=False),
                                                self._key(each, questions=False))
        return self._partial_keys[name]

    def _entry_path(self, name: str) -> Path | None:
        """Where `name`'s cached run lives; None when it is never reused (a run with reuse turned off still
        refreshes the entry, so the next reused run carries the latest latency)."""
        if self.resources.cache.mode == "off" or not reuse.reusable(self.config, name):
            return None
        return reuse.entry_path(self.resources.cache.folder, name)

    def _key(self, name: str, with_setup: bool = True, questions: bool = True, corpus: bool = True) -> str | None:
        """The digest of `name`'s inputs; without the set-up (which may embed a chunk to learn the dimension)
        first, so a changed input is known before anything is embedded; without the questions (`questions`
        False) for reuse question by question; without them, the corpus and the embedding cache's files
        (`corpus` False, with the set-up) for an exact search after a corpus edit. None: the set-up failed."""
        try:
            if self._common is None or self._partial is None or self._uncut is None:
                database = f"{self.resources.db_mode} {redact(self.resources.dsn) if self.resources.dsn else ''}"
                self._common = reuse.shared(self.config, self.chunks, self.questions, database)
                self._partial = {name: value for name, value in self._common.items() if name != "questions"}
                self._uncut = {name: value for name, value in self._partial.items() if name != "chunks"}
            if not corpus:
                return reuse.key(self.config, name, self._uncut, self.setup([name]), None)
            common = self._common if questions else self._partial
            if not with_setup:
                return reuse.key(self.config, name, common, None)
            setup = self.setup([name])
            return reuse.key(self.config, name, common, setup, reuse.vector_files(self.resources.cache.folder))
        except (RagError, ImportError, OSError, ValueError, TypeError):
            return None  # what the set-up could not find, the retriever's run names

    def _keep(self, path: Path, name: str) -> None:
        """Cache a clean run under its keys, computed after it (the set-up then reads the cache), once
        the vectors it embedded are written: the key names the embedding cache's files."""
        try:
            self.resources.cache.flush()
        except (OSError, RagError) as exc:
            self.out.line(f"rag: warning: {name}'s rankings not cached ({exc}); it runs again next time")
            return
        inputs, wanted = self._key(name, with_setup=False), self._key(name)
        if inputs is None or wanted is None:
            return
        partial = None
        if reuse.per_question(self.config, name):
            partial_inputs, partial_wanted = self._key(name, with_setup=False, questions=False), self._key(
                name, questions=False)
            if partial_inputs is not None and partial_wanted is not None:
                partial = (partial_inputs, partial_wanted)
        try:
            reuse.write(path, inputs, wanted, name, self.runs[name], *self._deep(name), partial=partial,
                        questions=self.questions)
            self._keep_vectors(path, name, wanted)
        except (OSError, RagError) as exc:
            self.out.line(f"rag: warning: {name}'s rankings not cached ({exc}); it runs again next time")

    def _deep(self, name: str) -> tuple[int, dict[str, tuple[str, ...]]]:
        """`name`'s rankings to keep: as deep as any consumer reads them (the session's store), else the
        run's own (a store that lacks a question, or holds what the run's check would refuse deeper)."""
        deep, depth = self.bench.stored(name), self.bench.depth(name)
        if deep is not None:
            known = {chunk.id for chunk in self.chunks}
            try:
                return depth, {q.id: checked_ranking(name, q, deep[q.id], depth, known) for q in self.questions}
            except RagError:
                pass
        result = self.runs[name].result
        return self.config.depth, {q.id: q.ranking for q in result.questions} if result is not None else {}

    def flush(self) -> str | None:
        """Write what the runs put in the cache (rerank scores) as one pack; a failure is a warning line."""
        try:
            self.resources.cache.flush()
        except (OSError, RagError) as exc:
            return f"rag: warning: cache entries not written ({exc}); computed again next run"
        return None

    def setup(self, names: Iterable[str]) -> dict[str, dict[str, object]]:
        """What the types of `names` and of the sources they read add to their fingerprints (the
        embedder's id and dimension, the index settings), by retriever, each computed once: the
        dimension may take embedding one chunk (through the cache), which is the runner's business,
        not the judge's. No other retriever is set up: `-k bm25` contacts no embedder."""
        wanted = self.config.reading(names)
        for name in wanted:
            if name not in self._setup:
                spec = self.config.retriever(name)
                self._setup[name] = spec.module.fingerprint(spec.params, self.resources)
        return {name: self._setup[name] for name in wanted}

    @property
    def embedder_description(self) -> str:
        return self.resources.embedder_description

    @property
    def database_description(self) -> str:
        return self.resources.database_description

    def finish(self) -> None:
        """Release what the built retrievers hold (connections); the database stays up until `close`."""
        self.bench.close()

    def close(self) -> None:
        """Everything, whatever `finish` got to: an interrupted run (SIGINT, SIGTERM) comes here without it,
        and a process still tokenizing ahead must not outlive the gate."""
        self.bench.close()
        self.resources.close()
