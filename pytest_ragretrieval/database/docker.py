"""The `docker` server: finding the engine, starting a labelled pgvector container, its faults as one-line hints.

The Docker SDK and testcontainers are imported inside functions, so a run that never starts a
container never pays for them. Leftovers of killed runs are handled in `reclaim`.
"""
from __future__ import annotations

import math
import os
import secrets
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.errors import DatabaseError
from ..core.optional import install, need
from .dsn import MASK, one_line, redact
from .hints import ALTERNATIVES
from .reclaim import Owner, reclaim, reclaimed_note, remove_run

if TYPE_CHECKING:
    import docker

DOCKER_IMAGE = "pgvector/pgvector:pg16"
DEFAULT_DOCKER_HOST = "unix:///var/run/docker.sock"
PORT = 5432
CONTAINER_READY_SECONDS = 60.0
LOG_LINES = 3
LOG_CHARS = 240
DETAIL_CHARS = 200
CONNECTION_MODE_HINT = "set TESTCONTAINERS_CONNECTION_MODE=docker_host to connect through the engine's published ports"
RYUK_INSTEAD = (
    "set TESTCONTAINERS_RYUK_DISABLED=true to start without testcontainers' reaper "
    "(a later run then removes what a killed run leaves)"
)


def docker_host() -> tuple[str, str]:
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
    host, where = docker_host()
    try:
        answered = _unix_socket_listens(host, timeout) and _pings(timeout)
    except Exception:
        answered = False
    if not answered:
        return False, f"no Docker engine answered at {where}"
    return True, f"a Docker engine answered at {where}"


@dataclass(frozen=True)
class Started:
    """A container that answered its readiness probe: its DSN, how to remove it, how to describe it in a message."""

    dsn: str
    container_id: str
    notes: tuple[str, ...]
    stop: Callable[[], None]
    diagnose: Callable[[str], str]


def _postgres_container_class() -> Any:
    need("testcontainers", "--rag-db=docker")
    try:
        try:
            from testcontainers.community.postgres import PostgresContainer
        except ImportError:  # 4.12 to 4.14 have no `community.` prefix
            from testcontainers.postgres import PostgresContainer
    except ImportError:
        raise DatabaseError(
            "--rag-db=docker needs testcontainers 4.12 or later (the first to read TESTCONTAINERS_CONNECTION_MODE); "
            f"{install('pgvector').replace('pip install', 'pip install --upgrade')}"
        ) from None
    except ValueError as exc:  # testcontainers parses TESTCONTAINERS_CONNECTION_MODE on import
        raise DatabaseError(
            f"{one_line(str(exc), DETAIL_CHARS)}; use docker_host, gateway_ip or bridge_ip ({CONNECTION_MODE_HINT})"
        ) from None
    return PostgresContainer


@contextmanager
def bounded_wait(seconds: float) -> Iterator[None]:
    """Lower testcontainers' readiness budget (TC_MAX_TRIES x TC_POOLING_INTERVAL, 120 s by default) for one start."""
    from testcontainers.core.config import testcontainers_config as config

    saved = config.max_tries
    config.max_tries = min(saved, max(1, math.ceil(seconds / config.sleep_time)))
    try:
        yield
    finally:
        config.max_tries = saved


def log_tail(container: Any) -> str:
    """The container's last log lines joined with ' | ', or why there are none."""
    try:
        raw = container.get_wrapped_container().logs(tail=LOG_LINES * 4)
    except Exception as exc:
        return f"no logs ({type(exc).__name__})"
    lines = [line.strip() for line in raw.decode(errors="replace").splitlines() if line.strip()][-LOG_LINES:]
    text = " | ".join(lines) or "no output"
    return text if len(text) <= LOG_CHARS else "..." + text[-(LOG_CHARS - 3) :]


def describe_container(container: Any, what: str) -> str:
    """`container 1a2b3c4d5e6f (exited 1) <what> (last log lines: …)`, for messages."""
    wrapped = container.get_wrapped_container()
    try:
        wrapped.reload()
        state = wrapped.attrs.get("State") or {}
        status = str(state.get("Status") or wrapped.status)
        if status in ("exited", "dead"):
            status = f"{status} {state.get('ExitCode', '?')}"
    except Exception as exc:
        status = f"state unknown: {type(exc).__name__}"
    return f"container {wrapped.short_id} ({status}) {what} (last log lines: {log_tail(container)})"


def ensure_image(client: docker.DockerClient, image: str, where: str, instead: str = "use --rag-db=embedded") -> None:
    """Pull the image if the engine lacks it, keeping the registry's own error (the SDK drops it)."""
    import docker

    try:
        client.images.get(image)
        return
    except docker.errors.ImageNotFound:
        pass
    except docker.errors.DockerException as exc:
        raise DatabaseError(
            f"the Docker engine at {where} could not say whether it has the image {image}: "
            f"{one_line(str(exc), DETAIL_CHARS)}; {ALTERNATIVES}"
        ) from None
    error = "no error reported"
    try:
        for event in client.api.pull(image, stream=True, decode=True):
            error = str(event.get("error") or error)
    except docker.errors.DockerException as exc:
        error = str(getattr(exc, "explanation", None) or exc)
    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        raise DatabaseError(
            f"the image {image} is not on the Docker engine at {where} and could not be pulled "
            f"({one_line(error, DETAIL_CHARS)}); pre-load it: docker pull {image} where a registry is reachable, "
            f"or docker save {image} -o image.tar there and docker load -i image.tar here; or {instead}"
        ) from None


def address_failure(container: Any, image: str, exc: Exception) -> str:
    """Started but not found by testcontainers' address lookup: name the connection mode when it is the cause."""
    from testcontainers.core import utils
    from testcontainers.core.config import ConnectionMode, testcontainers_config

    what = f"{type(exc).__name__} {one_line(str(exc), 120)}"
    mode = container.get_docker_client().get_connection_mode()
    if mode is ConnectionMode.docker_host:
        return f"the {image} container started, but its address could not be read ({what}); {ALTERNATIVES}"
    chosen = testcontainers_config.connection_mode_override
    if chosen:
        why = f"TESTCONTAINERS_CONNECTION_MODE={chosen.value} is set"
    elif utils.inside_container():
        why = "chosen by testcontainers because this machine looks like a container (/.dockerenv)"
    else:
        why = "chosen by testcontainers"
    return (
        f"the {image} container started, but testcontainers could not find its address in {mode.value} mode "
        f"({why}): {what}; {CONNECTION_MODE_HINT}"
    )


def _run(container: Any, image: str, where: str, ready_seconds: float, hide: Callable[[str], str]) -> str:
    """Start the container and wait, bounded, until psql answers inside it; its DSN."""
    with bounded_wait(ready_seconds):
        try:
            container.start()
        except TimeoutError:
            described = describe_container(container, f"did not accept connections within {ready_seconds:g}s")
            raise DatabaseError(hide(f"the {image} {described}; {ALTERNATIVES}")) from None
        except Exception as exc:
            text = hide(one_line(str(getattr(exc, "explanation", None) or exc), DETAIL_CHARS))
            raise DatabaseError(
                f"the {image} container did not start: {text} (engine at {where}); {ALTERNATIVES}"
            ) from None
    try:
        host = container.get_container_host_ip()
    except Exception as exc:
        raise DatabaseError(hide(address_failure(container, image, exc))) from None
    try:
        return str(container.get_connection_url(host=host))
    except Exception as exc:
        raise DatabaseError(
            f"the {image} container started, but its published port {PORT} could not be read: "
            f"{hide(one_line(str(exc), DETAIL_CHARS))}; {ALTERNATIVES}"
        ) from None


def start(image: str = DOCKER_IMAGE, ready_seconds: float = CONTAINER_READY_SECONDS) -> Started:
    """Reclaim leftovers, make sure the images are there, start a labelled container; on any failure
    or interrupt (KeyboardInterrupt included) the container is removed before the error goes on."""
    import docker
    from testcontainers.core.config import testcontainers_config as config

    postgres_container = _postgres_container_class()
    _, where = docker_host()
    me = Owner.here()
    password = secrets.token_urlsafe(16)

    def hide(text: str) -> str:
        return text.replace(password, MASK)

    try:
        container = postgres_container(image, driver=None, password=password, labels=me.labels())
    except docker.errors.DockerException as exc:
        raise DatabaseError(
            f"the Docker engine at {where} did not answer: {one_line(str(exc), DETAIL_CHARS)}; {ALTERNATIVES}"
        ) from None
    client = container.get_docker_client().client
    reclaimed = 0
    with suppress(docker.errors.DockerException):
        reclaimed = reclaim(client, me)
    try:
        ensure_image(client, image, where)
        if not config.ryuk_disabled:
            ensure_image(client, config.ryuk_image, where, RYUK_INSTEAD)
        dsn = _run(container, image, where, ready_seconds, hide)
        container_id = container.get_wrapped_container().short_id
    except BaseException:
        with suppress(Exception):
            remove_run(client, me.run)
        with suppress(Exception):
            container.stop()
        raise

    def stop() -> None:
        try:
            container.stop()
        except Exception as exc:
            raise DatabaseError(
                f"could not remove the {image} container {container_id}: {one_line(str(exc), DETAIL_CHARS)}; "
                f"remove it with docker rm -f {container_id}"
            ) from None

    notes = (reclaimed_note(reclaimed),) if reclaimed else ()
    return Started(dsn, container_id, notes, stop, lambda what: hide(describe_container(container, what)))
