"""Choosing and starting the Postgres + pgvector server: a Docker container, the embedded pgserver, or a URL.

`docker` and `embedded` servers are ours alone and die with the run; a `url` server is someone
else's (see database.handle). psycopg, pgserver and testcontainers are imported inside functions, so a
run without vector retrievers never pays for them.
"""
from __future__ import annotations

import shutil
import tempfile
import warnings
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..core.errors import DatabaseError
from ..core.optional import need
from . import leftovers
from .dsn import one_line, redact, scrub
from .hints import ALTERNATIVES, URL_ENV

if TYPE_CHECKING:
    import psycopg

    from .kept import Kept
    from .settings import DbMode

READY_SECONDS = 30.0
CONNECT_TIMEOUT = 10
"""Seconds libpq waits for a server to accept a connection (`connect_timeout`)."""
KEEPALIVES: dict[str, Any] = {"keepalives": 1, "keepalives_idle": 30, "keepalives_interval": 10, "keepalives_count": 3}
"""TCP keepalives on every connection: a server whose host is gone is noticed within about a minute
(a socket's connection has none: a Unix socket cannot lose its peer that way)."""
STATEMENT_TIMEOUT = "5min"
"""`statement_timeout` of the plugin's own sessions: a role's own (a tiny one, say) never applies to them."""


ServerMode = Literal["docker", "embedded", "url"]
"""A database mode once `auto` is resolved."""


@dataclass(frozen=True)
class Choice:
    """The resolved mode (never `auto`) and why, for the run header."""

    mode: ServerMode
    reason: str


@dataclass(frozen=True)
class Server:
    """A reachable server: its DSN, whether the whole server is ours, how to stop it; for a container,
    how to describe it when it stops answering, and what its start did on the way (header notes)."""

    dsn: str
    owned: bool
    stop: Callable[[], None]
    ready_seconds: float
    diagnose: Callable[[str], str] | None = None
    notes: tuple[str, ...] = ()
    schema: str | None = None
    """The seeded schema of a kept database (see database.kept); None: the run creates and seeds its own."""
    keep: Callable[[str], None] | None = None
    """Called with the schema once seeded, on a kept database that was not seeded yet."""


def choose(mode: DbMode, dsn: str | None) -> Choice:
    """Resolve `auto` and check each mode's precondition before anything starts.

    `auto` takes a given server first: a DSN from --rag-db-url or RAG_EVAL_DATABASE_URL is the
    user's choice of database as plainly as `--rag-db=url`, and ignoring it would be silent.
    """
    if mode == "url":
        if not dsn:
            raise DatabaseError(f"--rag-db=url needs a server: pass --rag-db-url DSN or set {URL_ENV}")
        return Choice("url", f"url: existing server {redact(dsn)}")
    if mode == "embedded":
        return Choice("embedded", "embedded: local Postgres from pgserver, as configured")
    from .docker import docker_answers  # the Docker SDK's checks: docker and auto modes only

    if mode == "docker":
        need("testcontainers", "--rag-db=docker")
        answers, seen = docker_answers()
        if not answers:
            raise DatabaseError(f"--rag-db=docker: {seen}; start Docker, or {ALTERNATIVES}")
        return Choice("docker", f"docker: {seen}")
    if mode == "auto":
        if dsn:
            return Choice("url", f"auto: a server is given (--rag-db-url or {URL_ENV}): {redact(dsn)}")
        answers, seen = docker_answers()
        return Choice("docker" if answers else "embedded", f"auto: {seen}")
    raise DatabaseError(f"unknown database mode {mode!r}; use auto, docker, embedded or url")


def require_psycopg(needed_by: str = "the database of vector retrievers") -> None:
    """psycopg and pgvector's adapter, or one line saying how to install them."""
    need("psycopg", needed_by)
    need("pgvector.psycopg", needed_by)


def open_connection(dsn: str, hint: str | Callable[[], str], *, autocommit: bool = False) -> psycopg.Connection:
    """A psycopg connection, or a one-line DatabaseError that never shows the password.

    A callable hint runs only on failure (a container's hint asks the engine for its state and logs).
    """
    require_psycopg()
    import psycopg

    try:
        return psycopg.connect(dsn, autocommit=autocommit, connect_timeout=CONNECT_TIMEOUT, **KEEPALIVES)
    except psycopg.Error as exc:
        said = hint() if callable(hint) else hint
        raise DatabaseError(
            f"cannot connect to {redact(dsn)} within {CONNECT_TIMEOUT} s (connect_timeout): "
            f"{scrub(str(exc), dsn)}; {said}"
        ) from None


def timeout_note(exc: Exception) -> str:
    """Names our statement_timeout when it is what cancelled a statement, so the message says which limit hit."""
    if type(exc).__name__ != "QueryCanceled":
        return ""
    return f" (the plugin's sessions run with statement_timeout = {STATEMENT_TIMEOUT})"


def _log_tail(log: Path) -> str:
    with suppress(OSError):
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
        faults = [line for line in lines if any(word in line for word in ("FATAL:", "PANIC:", "ERROR:"))]
        if lines:
            return f" (server log: {(faults or lines)[-1].strip()})"
    return ""


def _pgserver() -> Callable[..., Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return need("pgserver", "--rag-db=embedded").get_server  # type: ignore[no-any-return]


def _not_started(exc: BaseException, data: Path, cleanup: Callable[[], None]) -> DatabaseError:
    """Stop whatever started, clean up, and say why in one line (re-raising an interrupt as it is)."""
    tail = _log_tail(data / "log")
    try:
        leftovers.stop_postmaster(data)
    finally:
        cleanup()
    if not isinstance(exc, Exception):
        raise exc
    return DatabaseError(
        f"the embedded Postgres (pgserver) did not start: {one_line(str(exc))}{tail}; "
        "use --rag-db=docker or --rag-db=url instead"
    )


def _start_embedded(dsn: str | None) -> Server:
    """pgserver in a fresh temporary folder, marked as this run's (see leftovers); stopping it removes the folder."""
    get_server = _pgserver()
    folder = Path(tempfile.mkdtemp(prefix=leftovers.PREFIX))
    marker = leftovers.mark(folder)

    def remove() -> None:
        shutil.rmtree(folder, ignore_errors=True)
        if marker is not None:
            marker.close()

    try:
        server = get_server(folder / "data", cleanup_mode="delete")
        socket_dir = server.get_postmaster_info().socket_dir
        uri = server.get_uri()
    except BaseException as exc:
        raise _not_started(exc, folder / "data", remove) from None

    def stop() -> None:
        try:
            server.cleanup()
        finally:
            remove()
            if socket_dir is not None and folder not in socket_dir.parents:
                with suppress(OSError):
                    socket_dir.rmdir()

    return Server(uri, owned=True, stop=stop, ready_seconds=READY_SECONDS)


def _next_xid(dsn: str) -> str:
    """The id the next writing transaction gets: reading never takes one, writing anything does."""
    with open_connection(dsn, "the kept database stopped answering", autocommit=True) as conn:
        row = conn.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text").fetchone()
    return str(row[0]) if row else "?"


def start_kept(kept: Kept) -> Server:
    """Postgres on a kept folder (see database.kept): seeded already when `kept.schema` is set (a copy
    the run updates when `kept.delta` is), else made here (autovacuum off: nothing but the seeding is to
    write to it) for the run to seed."""
    try:
        uri = kept.start()
        if kept.schema is None:
            with open_connection(uri, "the kept database refuses connections", autocommit=True) as conn:
                conn.execute("ALTER SYSTEM SET autovacuum = off")
                conn.execute("SELECT pg_reload_conf()")
        before = [_next_xid(uri)] if kept.schema is not None and kept.delta is None else []
    except BaseException as exc:
        raise _not_started(exc, kept.data, lambda: kept.release(False)) from None

    def keep(schema: str) -> None:
        before.append(_next_xid(uri))
        kept.seeded(schema)

    def stop() -> None:
        unchanged = False
        with suppress(Exception):
            unchanged = bool(before) and _next_xid(uri) == before[0]
        try:
            kept.stop()
        except BaseException:
            leftovers.stop_postmaster(kept.data)
            kept.release(False)
            raise
        kept.release(unchanged)

    return Server(uri, owned=True, stop=stop, ready_seconds=READY_SECONDS, schema=kept.schema, keep=keep)


def _start_docker(dsn: str | None) -> Server:
    """A labelled, throwaway pgvector container; leftovers of runs that are gone are removed first."""
    from .docker import start

    started = start()
    return Server(started.dsn, True, started.stop, READY_SECONDS, started.diagnose, started.notes)


def _use_url(dsn: str | None) -> Server:
    if not dsn:
        raise DatabaseError(f"--rag-db=url needs a server: pass --rag-db-url DSN or set {URL_ENV}")
    return Server(dsn, owned=False, stop=lambda: None, ready_seconds=0.0)


STARTERS: dict[ServerMode, Callable[[str | None], Server]] = {
    "docker": _start_docker,
    "embedded": _start_embedded,
    "url": _use_url,
}
