"""Chunkings side by side: one runner per chunking a selected retriever reads, each over its own chunks
and its own labels (evalset/corpus.py's `chunking_share`), so each is chunked, seeded and indexed once
a run (its own database table, its own BM25 index) and every retriever is scored under its own chunking's
labels. The embedding cache is by content, so a chunk text two chunkings share is embedded once."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from ..config.settings import Config
from ..evalset.corpus import chunking_share
from ..evalset.records import Chunk, Question
from ..scoring.evaluate import Run
from .runs import Runner


class Chunkings:
    """The session's runner when the config names chunkings: it hands each retriever to its chunking's
    runner, started on first need (a `-k` that selects one chunking's retrievers cuts, seeds and
    indexes nothing for the others)."""

    def __init__(self, config: Config, chunks: Sequence[Chunk], questions: Sequence[Question],
                 start: Callable[[tuple[Chunk, ...], tuple[Question, ...]], Runner]) -> None:
        self.config = config
        self.chunks = tuple(chunks)
        self.questions = tuple(questions)
        self._start = start
        self._runners: dict[str, Runner] = {}

    def _of(self, name: str) -> Runner:
        chunking = self.config.retriever(name).chunking
        if chunking not in self._runners:
            self._runners[chunking] = self._start(*chunking_share(chunking, self.chunks, self.questions))
        return self._runners[chunking]

    @property
    def runs(self) -> Mapping[str, Run]:
        return {name: run for runner in self._runners.values() for name, run in runner.runs.items()}

    @property
    def reused(self) -> list[str]:
        return [name for runner in self._runners.values() for name in runner.reused]

    @property
    def reused_questions(self) -> dict[str, tuple[int, int]]:
        return {name: counts for runner in self._runners.values() for name, counts in runner.reused_questions.items()}

    def reclaim(self) -> None:
        self._of(self.config.retrievers[0].name).reclaim()

    def plan(self, names: Sequence[str]) -> None:
        for name in names:
            runner = self._of(name)
            runner.plan([*runner.bench.planned, name])

    def run(self, name: str) -> Run:
        return self._of(name).run(name)

    def flush(self) -> str | None:
        warnings = [runner.flush() for runner in self._runners.values()]
        return next((warning for warning in warnings if warning is not None), None)

    def setup(self, names: Iterable[str]) -> dict[str, dict[str, object]]:
        found: dict[str, dict[str, object]] = {}
        for name in names:
            found.update(self._of(name).setup([name]))
        return found

    def _described(self, pick: Callable[[Runner], str]) -> str:
        found = list(dict.fromkeys(pick(runner) for runner in self._runners.values()))
        used = [text for text in found if "not used" not in text and "not started" not in text]
        return "; ".join(used or found[:1]) or "not started (no selected retriever needed it)"

    @property
    def embedder_description(self) -> str:
        return self._described(lambda runner: runner.embedder_description)

    @property
    def database_description(self) -> str:
        return self._described(lambda runner: runner.database_description)

    def finish(self) -> None:
        """Each runner's cached runs keyed again once every chunking has embedded (`Runner.keep_again`), so a
        run with nothing changed reuses them all; then what the built retrievers hold is released."""
        if len(self._runners) > 1:
            for runner in self._runners.values():
                runner.keep_again()
        for runner in self._runners.values():
            runner.finish()

    def close(self) -> None:
        for runner in self._runners.values():
            runner.close()
