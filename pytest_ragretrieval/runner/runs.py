"""The runs of one session: each selected retriever over the eval set, once, however many items ask."""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..config.settings import Config
from ..evalset.records import Chunk, Question
from ..progress import Output
from ..scoring.evaluate import Run
from ..timing import Phases
from .execute import execute
from .resources import Resources
from .workbench import Workbench

if TYPE_CHECKING:
    from ..cache import Mode as CacheMode
    from ..config.settings import DbMode


class Runner:
    """Runs retrievers over the eval set: the database and the embedder start on first need, each
    retriever is built once, each ranking computed once. Before judging it also says, as plain data,
    what each retriever's fingerprint adds (`setup`), so the judge computes and calls nothing."""

    def __init__(
        self, config: Config, chunks: Sequence[Chunk], questions: Sequence[Question], *, db_mode: DbMode,
        dsn: str | None, cache_mode: CacheMode, phases: Phases, out: Output,
    ) -> None:
        self.config = config
        self.chunks = tuple(chunks)
        self.questions = tuple(questions)
        self.phases = phases
        self.out = out
        self.resources = Resources(config, self.chunks, db_mode, dsn, cache_mode, phases, out)
        self.bench = Workbench(config, self.chunks, self.resources, self.questions)
        self.runs: dict[str, Run] = {}
        self._setup: dict[str, dict[str, object]] | None = None

    def reclaim(self) -> None:
        """Remove what killed runs left (embedded servers), before this run starts its own."""
        self.resources.reclaim()

    def run(self, name: str) -> Run:
        """The run of `name`, done on first request; never raises (a failure is the run's error)."""
        if name not in self.runs:
            known = {chunk.id for chunk in self.chunks}
            self.runs[name] = execute(
                name, lambda: self.bench.get(name), self.questions, self.config.shown, self.config.depth, known,
                self.out, self.phases,
            )
        return self.runs[name]

    def flush(self) -> str | None:
        """Write what the runs put in the cache (rerank scores) as one pack; a failure is a warning line."""
        try:
            self.resources.cache.flush()
        except OSError as exc:
            return f"rag: warning: cache entries not written ({exc}); computed again next run"
        return None

    def setup(self) -> dict[str, dict[str, object]]:
        """What each configured retriever's type adds to its fingerprint (the embedder's id and
        dimension, the index settings), by retriever, computed once: the dimension may take
        embedding one chunk (through the cache), which is the runner's business, not the judge's."""
        if self._setup is None:
            self._setup = {
                spec.name: spec.module.fingerprint(spec.params, self.resources) for spec in self.config.retrievers
            }
        return self._setup

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
        self.resources.close()
