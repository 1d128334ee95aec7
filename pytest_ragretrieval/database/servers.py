"""Choosing and starting the Postgres + pgvector server: a Docker container, the embedded pgserver, or a URL.

`docker` and `embedded` servers are ours alone and die with the run; a `url` server is someone
else's (see database.handle). psycopg, pgserver and testcontainers are imported inside functions, so a
run without vector retrievers never pays for them.
"""
from __future__ import annotations

import os
import shutil
import socket
import tempfile
import warnings
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import DatabaseError
from . import leftovers
from .dsn import one_line, redact, scrub

if TYPE_CHECKING:
    import psycopg

DOCKER_IMAGE = "pgvector/pgvector:pg16"
DEFAULT_DOCKER_HOST = "unix:///var/run/docker.sock"
URL_ENV = "RAG_EVAL_DATABASE_URL"
READY_SECONDS = 30.0
CONNECT_TIMEOUT = 10
"""Seconds libpq waits for a server to accept a connection (`connect_timeout`)."""
STATEMENT_TIMEOUT = "5min"
"""`statement_timeout` of the plugin's own sessions: a role's own (a tiny one, say) never applies to them."""
ALTERNATIVES = (
    f"use --rag-db=embedded (a local Postgres from pgserver) or --rag-db=url with --rag-db-url DSN or {URL_ENV}"
)
INSTALL_HINT = "install them with: pip install 'pytest-ragretrieval[pgvector]'"


@dataclass(frozen=True)
class Choice:
    """The resolved mode (never `auto`) and why, for the run header."""

    mode: str
    reason: str


@dataclass(frozen=True)
class Server:
    """A reachable server: its DSN, whether the whole server is ours, and how to stop it."""

    dsn: str
    owned: bool
    stop: Callable[[], None]
    ready_seconds: float


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
            return bool(response.ok) and str(response.text).strip() == "OK"
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


def require_psycopg() -> None:
    """psycopg and pgvector's adapter, or one line saying how to install them."""
    try:
        import psycopg  # noqa: F401
        from pgvector.psycopg import register_vector  # noqa: F401
    except ImportError:
        raise DatabaseError(f"vector retrievers need psycopg and pgvector; {INSTALL_HINT}") from None


def open_connection(dsn: str, hint: str, *, autocommit: bool = False) -> psycopg.Connection:
    """A psycopg connection, or a one-line DatabaseError that never shows the password."""
    require_psycopg()
    import psycopg

    try:
        return psycopg.connect(dsn, autocommit=autocommit, connect_timeout=CONNECT_TIMEOUT)
    except psycopg.Error as exc:
        raise DatabaseError(
            f"cannot connect to {redact(dsn)} within {CONNECT_TIMEOUT} s (connect_timeout): "
            f"{scrub(str(exc), dsn)}; {hint}"
        ) from None


def timeout_note(exc: Exception) -> str:
    """Names our statement_timeout when it is what cancelled a statement, so the message says which limit hit."""
    if type(exc).__name__ != "QueryCanceled":
        return ""
    return f" (the plugin's sessions run with statement_timeout = {STATEMENT_TIMEOUT})"


def _log_tail(log: Path) -> str:
    with suppress(OSError):
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
        if lines:
            return f" (server log: {lines[-1].strip()})"
    return ""


def _start_embedded(dsn: str | None) -> Server:
    """pgserver in a fresh temporary folder, marked as this run's (see leftovers); stopping it removes the folder."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from pgserver import get_server  # type: ignore[attr-defined]
    except ImportError:
        raise DatabaseError(f"--rag-db=embedded needs pgserver; {INSTALL_HINT}") from None
    folder = Path(tempfile.mkdtemp(prefix=leftovers.PREFIX))
    marker = leftovers.mark(folder)
    try:
        server = get_server(folder / "data", cleanup_mode="delete")
        socket_dir = server.get_postmaster_info().socket_dir
        uri = server.get_uri()
    except BaseException as exc:
        tail = _log_tail(folder / "data" / "log")
        leftovers.stop_postmaster(folder / "data")
        shutil.rmtree(folder, ignore_errors=True)
        if marker is not None:
            marker.close()
        if not isinstance(exc, Exception):
            raise
        raise DatabaseError(
            f"the embedded Postgres (pgserver) did not start: {one_line(str(exc))}{tail}; "
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
            if marker is not None:
                marker.close()

    return Server(uri, owned=True, stop=stop, ready_seconds=READY_SECONDS)


def _postgres_container_class() -> Any:
    try:
        from testcontainers.community.postgres import PostgresContainer
    except ImportError:
        try:
            from testcontainers.postgres import PostgresContainer
        except ImportError:
            raise DatabaseError(f"--rag-db=docker needs testcontainers; {INSTALL_HINT}") from None
    return PostgresContainer


def _start_docker(dsn: str | None) -> Server:
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
            f"the {DOCKER_IMAGE} container did not start: {one_line(str(exc))}; {ALTERNATIVES}"
        ) from None

    def stop() -> None:
        try:
            container.stop()
        except Exception as exc:
            raise DatabaseError(
                f"could not stop the {DOCKER_IMAGE} container: {one_line(str(exc))}; "
                "remove it with docker rm -f"
            ) from None

    return Server(url, owned=True, stop=stop, ready_seconds=READY_SECONDS)


def _use_url(dsn: str | None) -> Server:
    if not dsn:
        raise DatabaseError(f"--rag-db=url needs a server: pass --rag-db-url DSN or set {URL_ENV}")
    return Server(dsn, owned=False, stop=lambda: None, ready_seconds=0.0)


STARTERS: dict[str, Callable[[str | None], Server]] = {
    "docker": _start_docker,
    "embedded": _start_embedded,
    "url": _use_url,
}
