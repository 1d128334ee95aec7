"""Each ranking computed once per session: every consumer of a retriever reads the same store.

A retriever's own items, a hybrid fusing it and a rerank reordering that hybrid all call one
`Memo`. The first call for a query runs the retriever at the deepest depth any configured
consumer asks for (`depth`); later calls for that query, at that depth or less, get a slice of
the stored ranking. This relies on what every built-in type guarantees: the top k of a ranking
is the first k of a deeper one, and a ranking shorter than asked is all there is.

Latency stays honest: a query's latency is the time the retriever itself took plus the latency
recorded for every source ranking it read, whether computed just then or earlier (`latency.py`).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.timing import Phases
from ..evalset.records import Question
from ..retrievers.protocol import Asking, Batched, Diagnosing, Noting, Preloading, Query, Retriever, ask
from .latency import Latency


@dataclass(frozen=True)
class Entry:
    ranking: tuple[Any, ...]
    depth: int
    latency_ms: float

    def serves(self, k: int) -> bool:
        return k <= self.depth or len(self.ranking) < self.depth


class Rankings:
    """The session's rankings, by retriever and query, and the latency accounting of nested calls."""

    def __init__(self, phases: Phases | None = None) -> None:
        self.entries: dict[str, dict[str, Entry]] = {}
        self.phases = phases or Phases()
        self.latency = Latency()


class Memo:
    """A built retriever as everyone sees it, computed once per query and read by every consumer.

    Asked with a whole question (`ask`, as the session and hybrid/rerank do), a retriever that
    needs question ids (`Asking`: run files, question factories, fusions over them) is keyed by
    the question's id, any other by its text, so two questions with the same text share a ranking
    only where the text is all that decides it. Asked by text (`memo(text, k)`, as a user's
    factory may), the key is the text.
    """

    def __init__(
        self, name: str, retriever: Retriever, store: Rankings, depth: int,
        sources: Callable[[], Sequence[Memo]] = tuple,
    ) -> None:
        """`sources()`: the memos this retriever reads, as known now (a factory may ask for one late)."""
        self.name = name
        self.retriever = retriever
        self.store = store
        self.depth = depth
        self.sources = sources
        self.entries = store.entries.setdefault(name, {})
        self.by_id = isinstance(retriever, Asking)
        self.loads: dict[str, float] = {}
        """One-time loads done before the first question (`Preloading`), in ms: reported apart from latency."""

    def key(self, query: Query) -> str:
        return f"id:{query.id}" if self.by_id else f"text:{query.query}"

    def __call__(self, query: str, k: int) -> Any:
        return self._get(f"text:{query}", k, lambda depth: self.retriever(query, depth))

    def ask(self, query: Query, k: int) -> Any:
        return self._get(self.key(query), k, lambda depth: ask(self.retriever, query, depth))

    def _get(self, key: str, k: int, compute: Callable[[int], Any]) -> Any:
        entry = self.entries.get(key)
        if entry is not None and entry.serves(k):
            self.store.latency.served(entry.latency_ms)
            return entry.ranking[:k]
        depth = max(k, self.depth)

        def run() -> Any:
            with self.store.phases.phase(f"run {self.name}"):
                return compute(depth)

        returned, latency = self.store.latency.timed(run)
        if isinstance(returned, (str, bytes)) or not hasattr(returned, "__iter__"):
            return returned  # not a ranking: the caller's check names the problem
        ranking = tuple(returned)
        self.entries[key] = Entry(ranking, depth, latency)
        return ranking[:k]

    def latency_ms(self, query: Query) -> float:
        entry = self.entries.get(self.key(query))
        return entry.latency_ms if entry is not None else 0.0

    def prefetch(self, queries: Sequence[Query], k: int, tick: Callable[[int], None] = lambda n: None) -> None:
        """Fill the store for `queries`: sources first, then this retriever, in one batch when it can."""
        for source in self.sources():
            source.prefetch(queries, source.depth)
        unique = {self.key(query): query for query in queries}
        todo = [query for key, query in unique.items() if key not in self.entries or not self.entries[key].serves(k)]
        tick(len(queries) - len(todo))
        many = self.retriever if isinstance(self.retriever, Batched) and not self.by_id and len(todo) >= 2 else None
        if todo and isinstance(self.retriever, Preloading):
            with self.store.phases.phase("loading"):
                self.loads.update(self.retriever.preload(todo, many is not None))
        if many is None:
            for query in todo:
                self.ask(query, k)
                tick(1)
            return
        depth = max(k, self.depth)
        with self.store.phases.phase(f"run {self.name}"):
            found = many.search_many([query.query for query in todo], depth, tick)
        for query, (ranking, latency) in zip(todo, found, strict=True):
            self.entries[self.key(query)] = Entry(tuple(ranking), depth, latency)

    def diagnostics(self, questions: Sequence[Question]) -> Mapping[str, float]:
        return self.retriever.diagnostics(questions) if isinstance(self.retriever, Diagnosing) else {}

    def notes(self) -> list[str]:
        return list(self.retriever.notes()) if isinstance(self.retriever, Noting) else []


class Reused:
    """A source whose rankings of the eval set's questions its consumer's memo holds from the source's
    cached run (runner/reuse.py): the retriever itself is built by `build` only if asked anything else,
    so a fusion-only change builds no index and starts no database."""

    def __init__(self, build: Callable[[], Retriever]) -> None:
        self._build = build
        self._built: Retriever | None = None

    def _retriever(self) -> Retriever:
        if self._built is None:
            self._built = self._build()
        return self._built

    def __call__(self, query: str, k: int) -> Sequence[str]:
        return self._retriever()(query, k)

    def ask(self, query: Query, k: int) -> Sequence[str]:
        return ask(self._retriever(), query, k)
