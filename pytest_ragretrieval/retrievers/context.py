"""Building configured retrievers, once each, and the `ctx` their factories see."""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..cache import Namespace
from ..config.settings import Config
from ..database.resources import Resources
from ..errors import RagError, RetrieverError
from ..evalset.records import Chunk, Question
from . import TYPES, Closing, Retriever
from .protocol import Query, asked
from .tokens import tokenizer


class RetrieverContext:
    """The `Context` a retriever type's `build` and a user's factory get."""

    def __init__(self, bench: Workbench, name: str, options: Mapping[str, Any]) -> None:
        self._bench = bench
        self.name = name
        self.options: Mapping[str, Any] = dict(options)

    @property
    def chunks(self) -> tuple[Chunk, ...]:
        return self._bench.chunks

    @property
    def questions(self) -> tuple[Query, ...]:
        return tuple(asked(question) for question in self._bench.questions)

    @property
    def k(self) -> int:
        return self._bench.config.k

    @property
    def root(self) -> Path:
        return self._bench.config.root

    @property
    def tokenize(self) -> Callable[[str], list[str]]:
        return tokenizer(self._bench.config.tokenizer)

    @property
    def retrievers(self) -> Mapping[str, Retriever]:
        return {name: self.retriever(name) for name in self._bench.config.retriever(self.name).sources}

    def retriever(self, name: str) -> Retriever:
        declared = self._bench.config.retriever(self.name).sources
        if name not in declared:
            raise RetrieverError(
                f"retriever {self.name!r} asked for retriever {name!r}, which it does not list; "
                f"add sources = [{name!r}] to its table"
            )
        return self._bench.get(name)

    def connect(self) -> Any:
        return self._bench.resources.connect()

    @property
    def index_kind(self) -> str:
        return self._bench.config.index.kind

    @property
    def table(self) -> str:
        return self._bench.resources.table

    def score_cache(self, kind: str, model_id: str) -> Namespace:
        return self._bench.resources.score_cache(kind, model_id)

    def embed(self, texts: Sequence[str], side: str = "query") -> Any:
        if side not in ("query", "passage"):
            raise RetrieverError(
                f"retriever {self.name!r} called ctx.embed with side={side!r}; use 'query' or 'passage'"
            )
        return self._bench.resources.embedder.embed(list(texts), None, side)


class Workbench:
    """Builds each retriever on first use; a build error is kept and re-raised for every user."""

    def __init__(
        self, config: Config, chunks: tuple[Chunk, ...], resources: Resources, questions: tuple[Question, ...] = ()
    ) -> None:
        self.config = config
        self.chunks = chunks
        self.questions = questions
        self.resources = resources
        self._built: dict[str, Retriever] = {}
        self._failed: dict[str, RagError] = {}
        self._building: list[str] = []

    def get(self, name: str) -> Retriever:
        if name in self._built:
            return self._built[name]
        if name in self._failed:
            raise self._failed[name]
        if name in self._building:
            raise RetrieverError(f"retriever {name!r} reads from itself through {' -> '.join(self._building)}")
        spec = self.config.retriever(name)
        self._building.append(name)
        try:
            ctx = RetrieverContext(self, name, spec.params.get("options", {}))
            built = TYPES[spec.type].build(dict(spec.params), ctx)
        except RagError as exc:
            self._failed[name] = exc
            raise
        finally:
            self._building.pop()
        self._built[name] = built
        return built

    def close(self) -> None:
        for retriever in self._built.values():
            if isinstance(retriever, Closing):
                retriever.close()
        self._built.clear()
