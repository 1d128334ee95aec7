"""The contracts of the retriever plug-in point: what a type module offers, what a retriever is,
and what a retriever's factory may use (`Context`).

A retriever is the tutorial's unified signature: a query and a depth in, chunk ids out, best
first. Optional abilities are their own protocols, checked with isinstance, never by name.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, Self, runtime_checkable

from ..cache.store import Namespace
from ..database.settings import IndexKind
from ..embedding.prompts import Side
from ..evalset.records import Chunk, Question
from ..files.tables import Table

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from .candidates import Earlier

@dataclass(frozen=True)
class Query:
    """What a retriever may know of a question: its id, its text and its tags, never its judgments."""

    id: str
    query: str
    tags: tuple[str, ...] = ()


def asked(question: Question) -> Query:
    return Query(question.id, question.query, question.tags)


@runtime_checkable
class Retriever(Protocol):
    """Return up to `k` chunk ids for `query`, most relevant first, without duplicates."""

    def __call__(self, query: str, k: int) -> Sequence[str]: ...


@runtime_checkable
class Asking(Protocol):
    """A retriever that needs the whole question (its id and tags), not only its text: a run file
    is read by question id, a `signature = "question"` factory gets the question."""

    def ask(self, query: Query, k: int) -> Sequence[str]: ...


def ask(retriever: Retriever, query: Query, k: int) -> Sequence[str]:
    """Ask a retriever for `k` ids the way it wants to be asked: by question when it can, else by text."""
    if isinstance(retriever, Asking):
        return retriever.ask(query, k)
    return retriever(query.query, k)


@runtime_checkable
class Noting(Protocol):
    """A retriever with remarks for the summary after the run (questions a run file lacks)."""

    def notes(self) -> list[str]: ...


@runtime_checkable
class Diagnosing(Protocol):
    """A retriever that reports numbers about itself after the run (ANN recall, a rerank pool's recall)."""

    def diagnostics(self, questions: Sequence[Question]) -> Mapping[str, float]: ...


@runtime_checkable
class Preloading(Protocol):
    """A retriever with one-time loads (a tokenizer's dictionary, a model) that answering `queries` would
    do inside the first question: `preload` does them before any question is timed and returns the
    milliseconds each took, by what was loaded; empty when nothing needed loading (a warm run).
    `queries`: the questions about to be asked (by id, text and tags: a reranker asks its source for their
    candidates); `batched`: whether they will be answered by `search_many` (`Batched`), else one call each."""

    def preload(self, queries: Sequence[Query], batched: bool) -> Mapping[str, float]: ...


@runtime_checkable
class Batched(Protocol):
    """A retriever that answers many queries at once faster than one by one (a pool of connections).

    `search_many` returns, per query in order, the ranking and the milliseconds that query took;
    it calls `tick(n)` as queries finish, for the progress display.
    """

    def search_many(
        self, queries: Sequence[str], k: int, tick: Callable[[int], None]
    ) -> list[tuple[Sequence[str], float]]: ...


@runtime_checkable
class Narrowing(Protocol):
    """An exact search that an earlier run's rankings narrow after a corpus edit (`vector`): `narrowed`
    counts the questions they decided (runner/reuse.py, `narrowed`)."""

    narrowed: int

    def narrow(self, earlier: Earlier) -> None: ...


@runtime_checkable
class Closing(Protocol):
    """A retriever holding a resource (a connection) to release when the session ends."""

    def close(self) -> None: ...


class Cursor(Protocol):
    """What a retriever may use of a cursor that `Context.connect` opens (psycopg's `Cursor` is one;
    this protocol names no database library, so the judge never reaches one through its imports).
    Rows are tuples of the columns' Python values."""

    def __enter__(self) -> Self: ...

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None, /
    ) -> None: ...

    def execute(self, query: str, params: Sequence[object] | Mapping[str, object] | None = None, /) -> Self: ...

    def fetchone(self) -> tuple[object, ...] | None: ...

    def fetchmany(self, size: int = 0, /) -> list[tuple[object, ...]]: ...

    def fetchall(self) -> list[tuple[object, ...]]: ...


class Connection(Protocol):
    """What a retriever may use of a connection from `Context.connect` or `Context.team_connection`:
    psycopg's `Connection` is one (`typing.cast` to it for the rest of psycopg's API, `psycopg.sql`)."""

    def __enter__(self) -> Self: ...

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None, /
    ) -> None: ...

    def cursor(self) -> Cursor: ...

    def execute(self, query: str, params: Sequence[object] | Mapping[str, object] | None = None, /) -> Cursor: ...

    def commit(self) -> None: ...

    def rollback(self) -> None: ...

    def close(self) -> None: ...


class Context(Protocol):
    """What a retriever's factory may use: the corpus, k, its sources, the database, the embedder."""

    name: str
    options: Mapping[str, object]
    """The retriever table's `options`, as TOML gave them: check a value before using it."""

    @property
    def chunks(self) -> tuple[Chunk, ...]: ...

    @property
    def questions(self) -> tuple[Query, ...]:
        """The eval set's questions as retrievers may see them: id, query and tags, no judgments."""

    @property
    def k(self) -> int: ...

    @property
    def root(self) -> Path:
        """The config's folder: relative paths in a retriever's table are relative to it."""

    @property
    def tokenizer(self) -> str:
        """The key of the config's tokenizer (`tokenizer`), as `retrievers.tokens.tokenizer` takes it."""

    @property
    def tokenize(self) -> Callable[[str], list[str]]:
        """The config's tokenizer."""

    def corpus_vectors(self) -> tuple[list[str], NDArray[np.float32]]:
        """(chunk ids, their vectors as seeded: an n x d float32 array), once the database is seeded."""

    def corpus_tokens(self, tokenizer: str | None = None) -> tuple[list[str], list[NDArray[np.int32]]]:
        """(vocabulary, token ids per chunk) of the chunks sorted by id, through the cache; by the
        tokenizer of that key (`retrievers.tokens.tokenizer_key`), by default the config's."""

    def tokens(
        self, texts: Sequence[str], tokenizer: str | None = None
    ) -> tuple[list[str], list[NDArray[np.int32]]]:
        """(vocabulary, token ids per text) of any texts (queries), through the cache."""

    def load_tokenizer(self, texts: Sequence[str] | None, tokenizer: str | None = None) -> Mapping[str, float]:
        """Load the tokenizer now when `tokens(texts)` would (a text the cache lacks), or outright when
        `texts` is None: milliseconds by what was loaded, empty when nothing was (all cached, or loaded already)."""

    def load_embedder(self, texts: Sequence[str]) -> Mapping[str, float]:
        """Load the embedder's model now when `embed(texts)` would (a query the cache lacks): milliseconds by
        what was loaded, empty when nothing was (all cached, loaded already, or nothing to load: a server)."""

    @property
    def workers(self) -> int:
        """How many connections or processes a retriever may use at once (`workers`)."""

    @property
    def retrievers(self) -> Mapping[str, Retriever]:
        """The sources this retriever declared, by name, built on first use."""

    def retriever(self, name: str) -> Retriever:
        """A declared source; each query's ranking is computed once per session and shared."""

    def connect(self) -> Connection:
        """A psycopg connection to the seeded database, its search_path set to the plugin's schema."""

    def team_connection(self) -> Connection:
        """A read-only psycopg connection to the team's own server (`--rag-db-url`), as it is: no
        schema created, nothing seeded (the `table` and `sql` types)."""

    @property
    def index_kind(self) -> IndexKind:
        """`exact` or `hnsw`: how the seeded table is searched."""

    @property
    def ann_tie_epsilon(self) -> float:
        """`ann_tie_epsilon`: how near the exact k-th distance an index's swap is a tie, not a miss."""

    @property
    def table(self) -> str:
        """The quoted, schema-qualified name of the chunks table."""

    def score_cache(self, kind: str, model_id: str) -> Namespace:
        """A namespace of the content-addressed cache, for scores a retriever computes."""

    def embed(self, texts: Sequence[str], side: Side = "query") -> NDArray[np.float32]:
        """Vectors (an n x d float32 array) from the configured embedder, through the cache; `side` is
        "query" (with the query prompt) or "passage"."""


class Setup(Protocol):
    """What this run embeds and searches with, for the types whose fingerprint depends on it."""

    @property
    def embedding_id(self) -> str: ...

    def embedding(self) -> dict[str, object]:
        """Embedder id and dimension (or the error that kept us from knowing the dimension)."""

    @property
    def index(self) -> dict[str, object]: ...

    def engine(self, settings: Mapping[str, object], table: str | None, column: str | None) -> dict[str, object]:
        """What answers on the team's server: its version, the vector extensions', the indexes of
        `table` (on `column` when given) as the catalog reports them, and the `settings` applied
        (or the error that kept us from asking)."""


class RetrieverType(Protocol):
    """A module under `retrievers/`: one per `type = "..."`, registered in `retrievers.TYPES`.

    Modules import their heavy dependencies only in `build`, so reading a config stays cheap.
    A type that reads its sources at a fixed depth may also define `source_depth(params) -> int`:
    each source's rankings are then computed once at that depth (or deeper) for every consumer.
    A type that reads files of its own (a user dictionary, a run file) defines
    `inputs(params, root) -> dict[str, Path]`: each file by the key that names it, `root` being the
    config's folder. They join the run's inputs, which no output option may name (`config/outputs.py`).
    A type whose `build` reads `ctx.corpus_tokens` may define `corpus_tokenizers(params, tokenizer,
    root) -> list[str]`, the tokenizer keys it reads (`tokenizer` is the global one): a cold run then
    tokenizes the corpus with them on another process while it embeds the corpus.
    """

    def parse(self, table: Table) -> dict[str, object]:
        """The table's parameters, defaults filled in: they are what the fingerprint records."""

    def sources(self, params: Mapping[str, object]) -> list[str]:
        """The retrievers this one reads from (their fingerprints nest under `reads`)."""

    def build(self, params: Mapping[str, object], ctx: Context) -> Retriever: ...

    def fingerprint(self, params: Mapping[str, object], setup: Setup) -> dict[str, object]:
        """What besides the parameters decides this type's rankings (the embedder, the index), as
        data; the runner asks before judging, so the judge only compares what this returns."""

    def details(self, params: Mapping[str, object]) -> dict[str, str]:
        """Named facts for the report's configuration section, such as {"reranker": model}."""
