"""The database handle: our schema on a started server, connections into it, and a clean close.

A `url` server is someone else's: we work only inside our own `rag_eval_<random>` schema, held
by an advisory lock for the run's life, and drop it at the end; a killed run's schema is
reclaimed by the next run (see database.schemas). The only thing a run may leave is `vector`,
installed once into `rag_eval_ext` when the server had none.
"""
from __future__ import annotations

import time
from contextlib import suppress
from dataclasses import replace
from typing import TYPE_CHECKING

from ..core.errors import DatabaseError
from ..core.values import listed
from .dsn import one_line, redact, scrub
from .hints import ALTERNATIVES, URL_ENV
from .schemas import (
    DROP_LOCK_TIMEOUT,
    RUN_SCHEMA,
    hold,
    install_vector,
    new_schema,
    quoted,
    reclaim,
    vector_row,
)
from .servers import STARTERS, STATEMENT_TIMEOUT, Choice, Server, ServerMode, open_connection, start_kept, timeout_note

if TYPE_CHECKING:
    import psycopg

    from .kept import Kept


class Database:
    """A started server plus our schema; `close()` undoes everything `open_database` did."""

    def __init__(self, mode: ServerMode, server: Server) -> None:
        self.mode = mode
        self.schema = server.schema or new_schema()
        self.seeded = server.schema is not None
        """The schema is a kept database's, seeded already (see database.kept)."""
        self._server = server
        self._connections: list[psycopg.Connection] = []
        self._lock: psycopg.Connection | None = None
        self.reclaimed: list[str] = []
        self.not_reclaimed: list[str] = []
        self._created_schema = False
        self._closed = False
        self.vector_schema = self.schema
        self.server_version = "?"
        self.vector_version = "?"
        self.where = "?"

    @property
    def dsn_safe(self) -> str:
        return redact(self._server.dsn)

    @property
    def notes(self) -> tuple[str, ...]:
        """What starting the server did on the way, for the run header (a docker start's reclaim)."""
        return self._server.notes

    def _hint(self) -> str:
        """Built only when a connection fails: for a container it asks the engine for its state and logs."""
        if self.mode == "url":
            return f"check that the server is running and that the DSN from --rag-db-url or {URL_ENV} is right"
        if self._server.diagnose is not None:
            return f"the {self.mode} {self._server.diagnose('does not answer on its published port')}; {ALTERNATIVES}"
        return f"the {self.mode} server started but refuses connections; {ALTERNATIVES}"

    def _fail(self, what: str, exc: Exception) -> DatabaseError:
        return DatabaseError(f"{what} on {self.dsn_safe}: {scrub(str(exc), self._server.dsn)}{timeout_note(exc)}")

    def _wait_ready(self) -> psycopg.Connection:
        """Connect, retrying while a server we just started finishes booting."""
        deadline = time.monotonic() + self._server.ready_seconds
        while True:
            try:
                return open_connection(self._server.dsn, self._hint, autocommit=True)
            except DatabaseError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.5)

    def _ensure_vector(self, conn: psycopg.Connection) -> tuple[str, str]:
        """Use an installed `vector` where it is; else install it (ours: anywhere; shared: in rag_eval_ext)."""
        row = vector_row(conn)
        if row is None:
            if self._server.owned:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            else:
                install_vector(conn)
            row = vector_row(conn)
            assert row is not None
        elif not self._server.owned and RUN_SCHEMA.fullmatch(row[0]):
            raise DatabaseError(
                f"the vector extension on {self.dsn_safe} lives in schema {row[0]}, which a run still holds "
                "(runs of pytest-ragretrieval 0.1 put it there); when that run has ended, the next run reclaims "
                "the schema, or install vector once for everyone (CREATE EXTENSION vector)"
            )
        return row

    def _claim(self, conn: psycopg.Connection) -> None:
        """On a shared server: hold our lock on a connection of its own, then reclaim what killed runs left."""
        import psycopg

        try:
            self._lock = open_connection(self._server.dsn, self._hint, autocommit=True)
            hold(self._lock, self.schema)
            self.reclaimed, self.not_reclaimed = reclaim(conn, self.schema, self._server.dsn)
        except psycopg.errors.QueryCanceled:
            raise
        except psycopg.Error as exc:
            raise self._fail(f"cannot take the lock of schema {self.schema}", exc) from None

    def _prepare(self) -> None:
        import psycopg

        with self._wait_ready() as conn:
            try:
                self._set_up(conn)
            except psycopg.errors.QueryCanceled as exc:
                raise self._fail(f"setting up schema {self.schema} was cancelled, not refused", exc) from None
            self.server_version = conn.info.parameter_status("server_version") or "?"
            host = conn.info.host
            self.where = f"{host}:{conn.info.port}/{conn.info.dbname}" if host else f"/{conn.info.dbname}"

    def connect(self) -> psycopg.Connection:
        """A new connection: search_path is our schema then vector's, pgvector's adapter registered."""
        import psycopg
        from pgvector.psycopg import register_vector
        from psycopg import sql

        if self._closed:
            raise DatabaseError(f"the {self.mode} database is already closed; connect before the run ends")
        conn = open_connection(self._server.dsn, self._hint)
        path = [self.schema] + ([self.vector_schema] if self.vector_schema != self.schema else [])
        try:
            conn.execute("SELECT set_config('statement_timeout', %s, false)", (STATEMENT_TIMEOUT,))
            conn.execute(
                sql.SQL("SET search_path TO {}").format(sql.SQL(", ").join(map(sql.Identifier, path)))
            )
            register_vector(conn)
            conn.commit()
        except psycopg.Error as exc:
            conn.close()
            raise self._fail("cannot prepare a connection", exc) from None
        self._connections.append(conn)
        return conn

    def _set_up(self, conn: psycopg.Connection) -> None:
        import psycopg
        from psycopg import sql

        conn.execute("SELECT set_config('statement_timeout', %s, false)", (STATEMENT_TIMEOUT,))
        if not self._server.owned:
            self._claim(conn)
        try:
            if not self.seeded:
                conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(self.schema)))
                self._created_schema = True
        except psycopg.errors.QueryCanceled:
            raise
        except psycopg.Error as exc:
            what = f"cannot create schema {self.schema} (the role needs CREATE on the database)"
            raise DatabaseError(f"{self._fail(what, exc)}; for a role that may only read (the table and sql "
                                "retrievers' own), add --rag-db=embedded: the seeded retrievers run on a local "
                                "Postgres, the team's table on this server") from None
        try:
            self.vector_schema, self.vector_version = self._ensure_vector(conn)
        except psycopg.errors.QueryCanceled:
            raise
        except psycopg.Error as exc:
            raise self._fail(
                "cannot install the vector extension (ask an administrator to run CREATE EXTENSION vector,"
                " or use --rag-db=embedded)",
                exc,
            ) from None

    def keep(self) -> None:
        """The run seeded our schema: a kept database may be reused by later runs (see database.kept)."""
        if self._server.keep is not None:
            self._server.keep(self.schema)

    @property
    def summary(self) -> str:
        """What the reports say of the database: the same on every run over the same server, so it
        names neither an embedded server's temporary folder, nor a container's port, nor the run's
        own schema; a url server is the user's own and is named."""
        where = f" at {self.where}" if self.mode == "url" else ""
        return f"{self.mode}: PostgreSQL {self.server_version}, pgvector {self.vector_version}{where}"

    def describe(self) -> str:
        """One line for the run header; never holds the password."""
        line = (
            f"{self.mode}: PostgreSQL {self.server_version}, pgvector {self.vector_version} "
            f"(schema {self.vector_schema}) at {self.where}, working schema {self.schema}"
        )
        if self.reclaimed:
            count = len(self.reclaimed)
            names = listed(self.reclaimed)
            line += f"; dropped {count} schema{'s' if count != 1 else ''} left by killed runs ({names})"
        if self.not_reclaimed:
            line += f"; could not drop schemas left by killed runs: {listed(self.not_reclaimed)}"
        return line

    def _drop_schema(self) -> None:
        import psycopg
        from psycopg import sql

        left = (f"the next run on this server drops it (no run holds its lock any more), or drop it by hand "
                f"(DROP SCHEMA {quoted(self.schema)} CASCADE)")
        try:
            connection = open_connection(self._server.dsn, self._hint, autocommit=True)
        except DatabaseError as exc:  # the server went away during the run
            raise DatabaseError(f"schema {self.schema} was left on {self.dsn_safe}, which no longer answers "
                                f"({str(exc).partition('; ')[0]}); {left}") from None
        with connection as conn:
            try:
                conn.execute("SELECT set_config('statement_timeout', %s, false)", (STATEMENT_TIMEOUT,))
                conn.execute("SELECT set_config('lock_timeout', %s, false)", (DROP_LOCK_TIMEOUT,))
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(self.schema)))
            except psycopg.Error as exc:
                raise DatabaseError(
                    f"could not drop schema {self.schema} on {self.dsn_safe}: {scrub(str(exc), self._server.dsn)}"
                    f"{timeout_note(exc)}; {left}"
                ) from None

    def close(self) -> None:
        """Idempotent: closes our connections, drops our schema (url) or stops the server."""
        if self._closed:
            return
        self._closed = True
        for conn in self._connections:
            with suppress(Exception):
                conn.close()
        self._connections.clear()
        errors: list[Exception] = []
        if self._created_schema and not self._server.owned:
            try:
                self._drop_schema()
            except DatabaseError as exc:
                errors.append(exc)
        if self._lock is not None:
            with suppress(Exception):
                self._lock.close()
            self._lock = None
        try:
            self._server.stop()
        except DatabaseError as exc:
            errors.append(exc)
        except Exception as exc:
            errors.append(DatabaseError(f"could not stop the {self.mode} server: {one_line(str(exc))}"))
        if errors:
            raise errors[0]

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _start(choice: Choice, dsn: str | None, kept: Kept | None) -> Server:
    """The mode's server; on a kept folder that will not start (copied without its owner, say) the
    folder is wiped and a temporary database is seeded as without one, and the header says why."""
    if kept is None or choice.mode != "embedded":
        return STARTERS[choice.mode](dsn)
    try:
        return start_kept(kept)
    except DatabaseError as exc:
        why = str(exc).partition("; use --rag-db")[0]
        server = STARTERS[choice.mode](dsn)
        return replace(server, notes=(*server.notes, f"{why}; the kept database was removed, a temporary one seeded"))


def open_database(choice: Choice, dsn: str | None = None, kept: Kept | None = None) -> Database:
    """Start the server (on a kept folder when given, embedded mode only), wait until it answers,
    create our schema unless it is seeded already, make sure `vector` is there."""
    if choice.mode not in STARTERS:
        raise DatabaseError(f"cannot open mode {choice.mode!r}; resolve it with choose() first")
    database = Database(choice.mode, _start(choice, dsn, kept))
    try:
        database._prepare()
    except BaseException:
        with suppress(Exception):
            database.close()
        raise
    return database
