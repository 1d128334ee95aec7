"""Choosing, starting and closing the Postgres + pgvector database the vector retrievers query.

`docker` and `embedded` servers are ours alone and die with the run. A `url` server is someone
else's: we work only inside our own `rag_eval_<random>` schema and drop it at the end, so a
run leaves that server exactly as it found it. psycopg, pgserver and testcontainers are
imported inside functions, so a run without vector retrievers never pays for them.
"""
from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import tempfile
import time
import warnings
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable
from urllib.parse import quote, unquote

from .errors import RagError

if TYPE_CHECKING:
    import psycopg

DOCKER_IMAGE = "pgvector/pgvector:pg16"
DEFAULT_DOCKER_HOST = "unix:///var/run/docker.sock"
URL_ENV = "RAG_EVAL_DATABASE_URL"
SCHEMA_PREFIX = "rag_eval_"
MASK = "***"
READY_SECONDS = 30.0
DROP_LOCK_TIMEOUT = "30s"
MESSAGE_LIMIT = 400
ALTERNATIVES = (
    f"use --rag-db=embedded (a local Postgres from pgserver) or --rag-db=url with --rag-db-url DSN or {URL_ENV}"
)
INSTALL_HINT = "install them with: pip install 'pytest-ragretrieval[pgvector]'"


class DatabaseError(RagError):
    """The database could not be chosen, started, reached or cleaned up."""


@dataclass(frozen=True)
class Choice:
    """The resolved mode (never `auto`) and why, for the run header."""

    mode: str
    reason: str


@dataclass(frozen=True)
class _Server:
    """A reachable server: its DSN, whether the whole server is ours, and how to stop it."""

    dsn: str
    owned: bool
    stop: Callable[[], None]
    ready_seconds: float


_URL_FORM = re.compile(r"^(?P<scheme>\s*[a-z][a-z0-9+.-]*://)(?P<rest>.*)$", re.IGNORECASE | re.DOTALL)
_URL_PASSWORD_PARAM = re.compile(r"(?P<key>[?&]password=)(?P<value>[^&#]*)", re.IGNORECASE)
_KV_PASSWORD = re.compile(r"(?P<key>\bpassword\s*=\s*)(?P<value>'(?:[^'\\]|\\.)*'?|\S+)", re.IGNORECASE)
_EMBEDDED_URL = re.compile(r"postgres(?:ql)?://\S*", re.IGNORECASE)


def _userinfo_password(rest: str) -> str:
    """The URL password as written: after the first ':' and up to the last '@', so a raw '@' or '/' in it counts."""
    at = rest.rfind("@")
    return rest[:at].partition(":")[2] if at >= 0 else ""


def _redact_url(scheme: str, rest: str) -> str:
    if _userinfo_password(rest):
        at = rest.rfind("@")
        rest = f"{rest[:at].partition(':')[0]}:{MASK}{rest[at:]}"
    return scheme + _URL_PASSWORD_PARAM.sub(lambda m: m.group("key") + MASK, rest)


def _parsed_password(dsn: str) -> str | None:
    """The password as libpq understands the DSN, to catch forms our patterns miss."""
    try:
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        return None
    try:
        value = conninfo_to_dict(dsn).get("password")
    except Exception:
        return None
    return str(value) if value else None


def _passwords(dsn: str) -> set[str]:
    """Every spelling of the DSN's password: as written, decoded, encoded, and as libpq parses it."""
    found = {_parsed_password(dsn) or ""}
    match = _URL_FORM.match(dsn)
    if match:
        rest = match.group("rest")
        found.add(_userinfo_password(rest))
        found.update(m.group("value") for m in _URL_PASSWORD_PARAM.finditer(rest))
    else:
        for m in _KV_PASSWORD.finditer(dsn):
            found.update({m.group("value"), m.group("value").strip("'")})
    forms = set()
    for password in filter(None, found):
        forms.update({password, unquote(password), quote(password, safe=""), quote(password, safe=" +")})
    return {form for form in forms if form and form != MASK}


def _mask_literal(text: str, passwords: set[str]) -> str:
    for password in sorted(passwords, key=len, reverse=True):
        text = text.replace(password, MASK)
    return text


def redact(dsn: str) -> str:
    """The DSN with any password replaced by `***`, in URL or key=value form."""
    match = _URL_FORM.match(dsn)
    if match:
        safe = _redact_url(match.group("scheme"), match.group("rest"))
    else:
        safe = _KV_PASSWORD.sub(lambda m: m.group("key") + MASK, dsn)
    if MASK in safe:
        return safe
    return _mask_literal(safe, _passwords(dsn))


def scrub(message: str, dsn: str) -> str:
    """A driver message on one line, with the DSN's password and any echoed DSN masked."""
    text = _mask_literal(message, _passwords(dsn))
    text = _EMBEDDED_URL.sub(lambda m: redact(m.group(0)), text)
    text = _KV_PASSWORD.sub(lambda m: m.group("key") + MASK, text)
    return _one_line(text)


def _one_line(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """Whitespace collapsed and long driver or Docker output cut, so every error stays one line."""
    line = " ".join(text.split()) or "no message"
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _docker_host() -> tuple[str, str]:
    """(the engine address the Docker SDK will use, how to name it in messages)."""
    host = os.environ.get("DOCKER_HOST")
    if host:
        return host, f"{redact(host)} (from DOCKER_HOST)"
    return DEFAULT_DOCKER_HOST, f"{DEFAULT_DOCKER_HOST} (the default socket; set DOCKER_HOST to use another)"


def _unix_socket_listens(host: str, timeout: float) -> bool:
    """Probe a unix socket ourselves: the SDK leaks its socket when the connect fails."""
    if not host.startswith("unix://"):
        return True
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(timeout)
        try:
            probe.connect(host[len("unix://"):])
        except OSError:
            return False
    return True


def _pings(timeout: float) -> bool:
    """An unversioned ping with the SDK's version probe skipped, so any engine version answers."""
    import docker
    from docker.constants import MINIMUM_DOCKER_API_VERSION

    client = docker.from_env(timeout=timeout, version=MINIMUM_DOCKER_API_VERSION)
    try:
        with client.api.get(f"{client.api.base_url}/_ping", timeout=timeout) as response:
            return response.ok and response.text.strip() == "OK"
    finally:
        client.close()


def docker_answers(timeout: float = 2.0) -> tuple[bool, str]:
    """(whether a Docker engine answers a ping, what we saw and where we looked)."""
    host, where = _docker_host()
    try:
        answered = _unix_socket_listens(host, timeout) and _pings(timeout)
    except Exception:
        answered = False
    if not answered:
        return False, f"no Docker engine answered at {where}"
    return True, f"a Docker engine answered at {where}"


def choose(mode: str, dsn: str | None) -> Choice:
    """Resolve `auto` and check each mode's precondition before anything starts."""
    if mode == "url":
        if not dsn:
            raise DatabaseError(f"--rag-db=url needs a server: pass --rag-db-url DSN or set {URL_ENV}")
        return Choice("url", f"url: existing server {redact(dsn)}")
    if mode == "embedded":
        return Choice("embedded", "embedded: local Postgres from pgserver, as configured")
    if mode == "docker":
        answers, seen = docker_answers()
        if not answers:
            raise DatabaseError(f"--rag-db=docker: {seen}; start Docker, or {ALTERNATIVES}")
        return Choice("docker", f"docker: {seen}")
    if mode == "auto":
        answers, seen = docker_answers()
        return Choice("docker" if answers else "embedded", f"auto: {seen}")
    raise DatabaseError(f"unknown database mode {mode!r}; use auto, docker, embedded or url")


def _import_psycopg() -> Any:
    try:
        import psycopg
        from pgvector.psycopg import register_vector  # noqa: F401
    except ImportError:
        raise DatabaseError(f"vector retrievers need psycopg and pgvector; {INSTALL_HINT}") from None
    return psycopg


def _connect(dsn: str, hint: str, *, autocommit: bool = False) -> psycopg.Connection:
    """A psycopg connection, or a one-line DatabaseError that never shows the password."""
    psycopg = _import_psycopg()
    try:
        return psycopg.connect(dsn, autocommit=autocommit, connect_timeout=10)
    except psycopg.Error as exc:
        raise DatabaseError(f"cannot connect to {redact(dsn)}: {scrub(str(exc), dsn)}; {hint}") from None


def _log_tail(log: Path) -> str:
    with suppress(OSError):
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
        if lines:
            return f" (server log: {lines[-1].strip()})"
    return ""


def _start_embedded(dsn: str | None) -> _Server:
    """pgserver in a fresh temporary folder; stopping it removes the folder."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pgserver
    except ImportError:
        raise DatabaseError(f"--rag-db=embedded needs pgserver; {INSTALL_HINT}") from None
    folder = Path(tempfile.mkdtemp(prefix="rag-eval-pg-"))
    try:
        server = pgserver.get_server(folder / "data", cleanup_mode="delete")
        socket_dir = server.get_postmaster_info().socket_dir
        uri = server.get_uri()
    except Exception as exc:
        tail = _log_tail(folder / "data" / "log")
        shutil.rmtree(folder, ignore_errors=True)
        raise DatabaseError(
            f"the embedded Postgres (pgserver) did not start: {_one_line(str(exc))}{tail}; "
            "use --rag-db=docker or --rag-db=url instead"
        ) from None

    def stop() -> None:
        try:
            server.cleanup()
        finally:
            shutil.rmtree(folder, ignore_errors=True)
            if socket_dir is not None and folder not in socket_dir.parents:
                with suppress(OSError):
                    socket_dir.rmdir()

    return _Server(uri, owned=True, stop=stop, ready_seconds=READY_SECONDS)


def _postgres_container_class() -> Any:
    try:
        from testcontainers.community.postgres import PostgresContainer
    except ImportError:
        try:
            from testcontainers.postgres import PostgresContainer
        except ImportError:
            raise DatabaseError(f"--rag-db=docker needs testcontainers; {INSTALL_HINT}") from None
    return PostgresContainer


def _start_docker(dsn: str | None) -> _Server:
    """A throwaway `pgvector/pgvector:pg16` container; testcontainers waits until psql answers."""
    container_class = _postgres_container_class()
    container = None
    try:
        container = container_class(DOCKER_IMAGE, driver=None)
        container.start()
        url = container.get_connection_url()
    except Exception as exc:
        if container is not None:
            with suppress(Exception):
                container.stop()
        raise DatabaseError(
            f"the {DOCKER_IMAGE} container did not start: {_one_line(str(exc))}; {ALTERNATIVES}"
        ) from None

    def stop() -> None:
        try:
            container.stop()
        except Exception as exc:
            raise DatabaseError(
                f"could not stop the {DOCKER_IMAGE} container: {_one_line(str(exc))}; "
                "remove it with docker rm -f"
            ) from None

    return _Server(url, owned=True, stop=stop, ready_seconds=READY_SECONDS)


def _use_url(dsn: str | None) -> _Server:
    if not dsn:
        raise DatabaseError(f"--rag-db=url needs a server: pass --rag-db-url DSN or set {URL_ENV}")
    return _Server(dsn, owned=False, stop=lambda: None, ready_seconds=0.0)


_STARTERS: dict[str, Callable[[str | None], _Server]] = {
    "docker": _start_docker,
    "embedded": _start_embedded,
    "url": _use_url,
}


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class Database:
    """A started server plus our schema; `close()` undoes everything `open_database` did."""

    def __init__(self, mode: str, server: _Server) -> None:
        self.mode = mode
        self.schema = SCHEMA_PREFIX + secrets.token_hex(6)
        self._server = server
        self._connections: list[psycopg.Connection] = []
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
    def _hint(self) -> str:
        if self.mode == "url":
            return f"check that the server is running and that the DSN from --rag-db-url or {URL_ENV} is right"
        return f"the {self.mode} server started but refuses connections; {ALTERNATIVES}"

    def _fail(self, what: str, exc: Exception) -> DatabaseError:
        return DatabaseError(f"{what} on {self.dsn_safe}: {scrub(str(exc), self._server.dsn)}")

    def _wait_ready(self) -> psycopg.Connection:
        """Connect, retrying while a server we just started finishes booting."""
        deadline = time.monotonic() + self._server.ready_seconds
        while True:
            try:
                return _connect(self._server.dsn, self._hint, autocommit=True)
            except DatabaseError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.5)

    def _vector_row(self, conn: psycopg.Connection) -> tuple[str, str] | None:
        row = conn.execute(
            "SELECT n.nspname, e.extversion FROM pg_extension e"
            " JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
        ).fetchone()
        return None if row is None else (row[0], row[1])

    def _ensure_vector(self, conn: psycopg.Connection) -> tuple[str, str]:
        """On a shared server use an installed `vector` where it is, else install it in our schema."""
        from psycopg import sql

        row = self._vector_row(conn)
        if row is None:
            if self._server.owned:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            else:
                conn.execute(sql.SQL("CREATE EXTENSION vector SCHEMA {}").format(sql.Identifier(self.schema)))
            row = self._vector_row(conn)
            assert row is not None
        elif not self._server.owned and row[0].startswith(SCHEMA_PREFIX):
            raise DatabaseError(
                f"the vector extension on {self.dsn_safe} lives in schema {row[0]}, left by another run "
                f"and dropped with it; if no run is active drop it (DROP SCHEMA {_quote(row[0])} CASCADE), "
                "or install vector once for everyone (CREATE EXTENSION vector)"
            )
        return row

    def _prepare(self) -> None:
        import psycopg
        from psycopg import sql

        with self._wait_ready() as conn:
            try:
                conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(self.schema)))
                self._created_schema = True
            except psycopg.Error as exc:
                what = f"cannot create schema {self.schema} (the role needs CREATE on the database)"
                raise self._fail(what, exc) from None
            try:
                self.vector_schema, self.vector_version = self._ensure_vector(conn)
            except psycopg.Error as exc:
                raise self._fail(
                    "cannot install the vector extension (ask an administrator to run CREATE EXTENSION vector,"
                    " or use --rag-db=embedded)",
                    exc,
                ) from None
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
        conn = _connect(self._server.dsn, self._hint)
        path = [self.schema] + ([self.vector_schema] if self.vector_schema != self.schema else [])
        try:
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

    def describe(self) -> str:
        """One line for the run header; never holds the password."""
        return (
            f"{self.mode}: PostgreSQL {self.server_version}, pgvector {self.vector_version} "
            f"(schema {self.vector_schema}) at {self.where}, working schema {self.schema}"
        )

    def _drop_schema(self) -> None:
        import psycopg
        from psycopg import sql

        with _connect(self._server.dsn, self._hint, autocommit=True) as conn:
            try:
                conn.execute("SELECT set_config('lock_timeout', %s, false)", (DROP_LOCK_TIMEOUT,))
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(self.schema)))
            except psycopg.Error as exc:
                raise DatabaseError(
                    f"could not drop schema {self.schema} on {self.dsn_safe}: {scrub(str(exc), self._server.dsn)}; "
                    f"drop it by hand (DROP SCHEMA {_quote(self.schema)} CASCADE)"
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
        try:
            self._server.stop()
        except DatabaseError as exc:
            errors.append(exc)
        except Exception as exc:
            errors.append(DatabaseError(f"could not stop the {self.mode} server: {_one_line(str(exc))}"))
        if errors:
            raise errors[0]

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_database(choice: Choice, dsn: str | None = None) -> Database:
    """Start the server, wait until it answers, create our schema, make sure `vector` is there."""
    if choice.mode not in _STARTERS:
        raise DatabaseError(f"cannot open mode {choice.mode!r}; resolve it with choose() first")
    database = Database(choice.mode, _STARTERS[choice.mode](dsn))
    try:
        database._prepare()
    except BaseException:
        with suppress(Exception):
            database.close()
        raise
    return database
