"""The database and the embedder, started only when a selected retriever first needs them."""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from ..cache.store import Cache, Namespace
from ..config.settings import Config
from ..core.errors import RagError, RetrieverUnavailable
from ..core.progress import Output, PlainOutput
from ..core.timing import Phases
from ..evalset.records import Chunk
from ..files.paths import display

if TYPE_CHECKING:
    import numpy as np
    import psycopg

    from ..cache.store import Mode as CacheMode
    from ..database.handle import Database
    from ..database.kept import Kept
    from ..database.servers import ServerMode
    from ..database.session import TeamCorpus
    from ..database.settings import DbMode
    from ..embedding.cached import CachedEmbedder


class Resources:
    """One database and one cached embedder per session; `close()` is safe at any point.

    It implements the retriever types' `Setup` (what a fingerprint adds) and serves the workbench's
    `ctx`; `out` gets its progress lines (the embedding, the database start, the seeding).
    """

    def __init__(
        self, config: Config, chunks: Sequence[Chunk], db_mode: DbMode, dsn: str | None, cache_mode: CacheMode,
        phases: Phases | None = None, out: Output | None = None,
    ) -> None:
        self.config = config
        self.phases = phases or Phases()
        self.chunks = list(chunks)
        self.db_mode = db_mode
        self.dsn = dsn
        self.cache = Cache(config.cache_dir, cache_mode)
        self.out: Output = out or PlainOutput()
        self._embedder: CachedEmbedder | None = None
        self._database: Database | None = None
        self._table: str | None = None
        self._failure: Exception | None = None
        self._embedding_error: str | None = None
        self._vectors: np.ndarray | None = None
        self._team: str | None = None
        """Where the team's server is (host:port/database), once a table or sql retriever connected."""
        self._compared: dict[TeamCorpus, str] = {}
        """The chunks file against each team table, read once however many retrievers name it."""
        self.notes: dict[str, list[str]] = {}
        """By `table` or `sql` retriever, once it connected: each pin the database's own value differs from,
        and how the team's table it names differs from the chunks file (counts, ids, texts)."""
        self.before_embedding: Callable[[], None] = lambda: None
        """Called once, just before the corpus is embedded (the workbench starts tokenizing ahead)."""

    @property
    def embedder(self) -> CachedEmbedder:
        if self._embedder is None:
            from ..embedding import make_embedder
            from ..embedding.base import FailOnce
            from ..embedding.cached import CachedEmbedder

            self._embedder = CachedEmbedder(
                FailOnce(make_embedder(self.config)), self.cache, self.out, batch_size=self.config.embedding_batch_size
            )
        return self._embedder

    def embed(self, texts: list[str], label: str | None = None) -> np.ndarray:
        """Vectors through the cache; only labelled (bulk) calls print a progress line."""
        return self.embedder.embed(texts, label)

    @property
    def embedding_id(self) -> str:
        """The embedder's id (prompts included), known without loading anything; the config's
        name for it when the embedder cannot even be built here."""
        try:
            return str(self.embedder.id)
        except RagError:
            return self.config.embedding_id or self.config.embedding

    def embedding(self) -> dict[str, object]:
        """Embedder id and dimension; the dimension comes from the corpus, through the cache.

        When the embedder cannot say (no model, no key), the error takes the dimension's place:
        the fingerprint then differs from any recorded one, and the item shows the error.
        """
        if self._embedding_error is not None:
            return {"id": self.embedding_id, "error": self._embedding_error}
        try:
            first = min(self.chunks, key=lambda chunk: chunk.id)
            dimension = self.embedder.dimension or self.embed([first.text], "embedding one chunk").shape[1]
        except RagError as exc:
            self._embedding_error = str(exc)
            return {"id": self.embedding_id, "error": self._embedding_error}
        return {"id": self.embedder.id, "dimension": int(dimension)}

    @property
    def index(self) -> dict[str, object]:
        return self.config.index.fingerprint

    def engine(self, settings: Mapping[str, object], table: str | None, column: str | None) -> dict[str, object]:
        """The team server's engine for a `table` or `sql` retriever's fingerprint (see database.team)."""
        from ..database.team import engine_record

        return engine_record(self.dsn, settings, table, column)

    def team_connection(self, name: str) -> psycopg.Connection:
        """A read-only connection to the team's server: it starts, creates and seeds nothing. Without a
        database URL (a CI runner that cannot reach the server) the retriever is unavailable here."""
        from ..database.team import connect, no_url, unset_limits, where

        if not self.dsn:
            raise RetrieverUnavailable(no_url())
        conn = connect(self.dsn)
        if self._team is None:
            limits = unset_limits(conn)
            if limits:
                self.out.line(f"rag: warning: {limits}")
        self._team = where(conn)
        if name not in self.notes:
            self.notes[name] = self._notes(name, conn)
        return conn

    def _notes(self, name: str, conn: psycopg.Connection) -> list[str]:
        """What the run measures that the team may not expect: a `search_settings` pin over a different
        value of the database's own, and a table that differs from the chunks file the run judges with."""
        from ..database.team import corpus_difference, pinned_differences
        from ..retrievers.table import corpus_of

        params = self.config.retriever(name).params
        found = pinned_differences(conn, params["engine"]) if params["engine"] else []
        corpus = corpus_of(params)
        if self.config.chunks is not None and corpus is not None:
            if corpus not in self._compared:
                self._compared[corpus] = corpus_difference(conn, corpus, self.chunks, display(self.config.chunks))
            found.append(self._compared[corpus])
        return [note for note in found if note]

    def score_cache(self, kind: str, model_id: str) -> Namespace:
        return self.cache.namespace(kind, model_id, ext="f64", dtype="<f8")

    def _start(self) -> Database:
        """Embed the corpus, then start and seed the database.

        Embeddings are cached and a started server is not, so this order never loses work, and an
        embedder that fails (a dead server, a missing key) costs no database start.
        """
        from ..database.handle import open_database
        from ..database.seed import seed, table_label, update
        from ..database.servers import choose

        vectors = self._embedded()
        stats = self.embedder.stats
        started = time.perf_counter()
        with self.phases.phase("database start"):
            choice = choose(self.db_mode, self.dsn)
            kept = self._kept(choice.mode, vectors)
            database = open_database(choice, self.dsn, kept)
        self._database = database
        self.out.line(f"rag: database {database.describe()} ({choice.reason}) in {time.perf_counter() - started:.2f}s")
        for note in database.notes:
            self.out.line(f"rag: {note}")
        index = "exact search" if self.config.index.kind == "exact" else f"{self.config.index.kind} index"
        what = (f"{len(self.chunks)} chunks ({vectors.shape[1]} dimensions, {stats.hits} embeddings "
                f"from the cache, {stats.embedded} computed, {index})")
        if database.seeded and kept is not None and kept.delta is not None:
            started = time.perf_counter()
            with self.phases.phase("seeding"):
                conn = database.connect()
                try:
                    update(conn, database.schema, self.chunks, vectors, kept.delta)
                finally:
                    conn.close()
                database.keep()
            self.out.line(f"rag: updated a copy of the seeded database kept in {display(kept.delta.donor)}: "
                          f"{len(kept.delta.written)} rows written, {len(kept.delta.removed)} removed; {what} "
                          f"in {time.perf_counter() - started:.2f}s")
        elif database.seeded and kept is not None:
            self.out.line(f"rag: reused the seeded database kept in {display(kept.folder)}: {what}")
        else:
            started = time.perf_counter()
            with self.phases.phase("seeding"):
                conn = database.connect()
                try:
                    seed(conn, database.schema, self.chunks, vectors, self.config.index)
                finally:
                    conn.close()
                database.keep()
            self.out.line(f"rag: seeded {what} in {time.perf_counter() - started:.2f}s")
        self._table = table_label(database.schema)
        return database

    def _embedded(self) -> np.ndarray:
        """The corpus's vectors as the database stores them, embedded through the cache once: an exact
        search that needs no SQL (`retrievers/candidates.py`) reads them with no database started."""
        if self._vectors is None:
            from ..database.seed import storable

            self.before_embedding()
            with self.phases.phase("embedding corpus"):
                vectors = self.embed([chunk.text for chunk in self.chunks], "embedding corpus")
            self._vectors = storable(self.chunks, vectors, self.config.index)
        return self._vectors

    def _kept(self, mode: ServerMode, stored: np.ndarray) -> Kept | None:
        """The kept folder for this corpus, embeddings and index (see database.kept): embedded mode,
        `keep_database` on and a readwrite cache only; None when another run holds it."""
        if mode != "embedded" or not self.config.keep_database or self.cache.mode != "readwrite":
            return None
        from ..database.kept import claim, table

        wanted = table(self.chunks, stored, self.config.index)
        return claim(self.config.cache_dir, wanted.key, wanted, exact=self.config.index.kind == "exact")

    def reclaim(self) -> None:
        """Stop and remove embedded servers whose run was killed, and say so (see database.leftovers)."""
        from ..database.leftovers import reclaim

        found = reclaim()
        if found:
            names = ", ".join(path.name for path in found)
            self.out.line(
                f"rag: reclaimed {len(found)} embedded Postgres server{'s' if len(found) > 1 else ''} "
                f"left by killed runs ({names})"
            )

    @property
    def database(self) -> Database:
        return self._ready()

    def _ready(self) -> Database:
        """The seeded database; a failure to start or seed is kept and raised for every caller."""
        if self._failure is not None:
            raise self._failure
        if self._table is None:
            try:
                self._start()
            except Exception as exc:
                self._failure = exc
                raise
        assert self._database is not None
        return self._database

    def connect(self) -> psycopg.Connection:
        """A new connection to the seeded table; the HNSW search setting applied when indexed."""
        from ..database.seed import configure_search

        conn = self.database.connect()
        if self.config.index.kind != "exact":
            configure_search(conn, self.config.index)
        return conn

    def corpus_vectors(self) -> tuple[list[str], np.ndarray]:
        """(chunk ids, vectors) in the order and precision they are seeded; no database is started for them."""
        return [chunk.id for chunk in self.chunks], self._embedded()

    @property
    def embedded(self) -> bool:
        """Whether the corpus's vectors were read this session (`corpus_vectors` then costs nothing)."""
        return self._vectors is not None

    @property
    def table(self) -> str:
        self._ready()
        assert self._table is not None
        return self._table

    @property
    def embedder_description(self) -> str:
        if self._embedder is None:
            return f"{self.config.embedding} (not used by the selected retrievers)"
        dimension = self._embedder.dimension
        return f"{self._embedder.id}" + (f", {dimension} dimensions" if dimension else "")

    @property
    def database_description(self) -> str:
        team = f"the team's server at {self._team}, read-only (table and sql retrievers)" if self._team else ""
        if self._database is None:
            return team or "not started (no selected retriever needed it)"
        return str(self._database.summary) + (f"; {team}" if team else "")

    def close(self) -> None:
        if self._database is not None:
            self._database.close()
            self._database = None


def database_mode(option: DbMode | None, configured: DbMode, url_option: str | None) -> DbMode:
    """`--rag-db` wins; else `--rag-db-url` alone means url; else the config's `db`."""
    if option is not None:
        return option
    if url_option:
        return "url"
    return configured


def database_url(url_option: str | None) -> str | None:
    from ..database.hints import URL_ENV

    return url_option or os.environ.get(URL_ENV) or None
