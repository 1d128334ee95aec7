"""The docker mode's faults, each one line with its remedy, provoked on a real engine.

An image on `localhost:1` stands for "no registry": nothing listens there, on any machine, so
the pull fails at once on Docker and podman alike.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

import pytest

from pytest_ragretrieval.core.errors import DatabaseError
from pytest_ragretrieval.database import docker as docker_server
from pytest_ragretrieval.database import servers
from pytest_ragretrieval.database.handle import open_database
from pytest_ragretrieval.database.servers import choose

NO_REGISTRY = "localhost:1/rag-eval/pgvector"


def one_line(caught: pytest.ExceptionInfo[DatabaseError]) -> str:
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_a_missing_image_without_a_registry_says_how_to_preload_it(docker_clean: Any) -> None:
    image = f"{NO_REGISTRY}:pg16"
    with pytest.raises(DatabaseError) as caught:
        docker_server.start(image)
    message = one_line(caught)
    assert re.match(rf"the image {re.escape(image)} is not on the Docker engine at \S+ \(from DOCKER_HOST\) and could not be pulled \(.+\); ", message), message
    assert message.endswith(
        f"pre-load it: docker pull {image} where a registry is reachable, or docker save {image} -o image.tar there "
        "and docker load -i image.tar here; or use --rag-db=embedded"
    )


def test_a_missing_reaper_image_says_how_to_start_without_it(docker_clean: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from testcontainers.core.config import testcontainers_config

    monkeypatch.setattr(testcontainers_config, "ryuk_disabled", False)
    monkeypatch.setattr(testcontainers_config, "ryuk_image", f"{NO_REGISTRY}-ryuk:0")
    with pytest.raises(DatabaseError) as caught:
        docker_server.start()
    message = one_line(caught)
    assert message.startswith(f"the image {NO_REGISTRY}-ryuk:0 is not on the Docker engine at ")
    assert message.endswith(
        "or set TESTCONTAINERS_RYUK_DISABLED=true to start without testcontainers' reaper "
        "(a later run then removes what a killed run leaves)"
    )


@pytest.mark.parametrize(
    ("script", "state", "logs"),
    [
        ("echo booting; echo still booting >&2; exec sleep 600", "running", "booting | still booting"),
        ("echo 'FATAL: bad setting'; exit 3", "exited 3", "FATAL: bad setting"),
    ],
)
def test_a_server_that_never_gets_ready_is_named_with_its_last_log_lines(
    docker_clean: Any, monkeypatch: pytest.MonkeyPatch, script: str, state: str, logs: str
) -> None:
    """The wait is bounded (ready_seconds, not testcontainers' 120 s) and the container is removed afterwards."""
    postgres_container = docker_server._postgres_container_class()
    configure = postgres_container._configure

    def with_entrypoint(self: Any) -> None:
        configure(self)
        self._kwargs["entrypoint"] = ["sh", "-c", script]

    monkeypatch.setattr(postgres_container, "_configure", with_entrypoint)
    with pytest.raises(DatabaseError) as caught:
        docker_server.start(ready_seconds=3)
    message = one_line(caught)
    assert re.fullmatch(
        rf"the pgvector/pgvector:pg16 container [0-9a-f]{{12}} \({state}\) did not accept connections within 3s "
        rf"\(last log lines: {re.escape(logs)}\); use --rag-db=embedded .*",
        message,
    ), message


def test_a_published_port_that_never_answers_names_the_container(
    docker_clean: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ready inside, silent outside (paused here): the connection error names the container, its state and logs."""
    start = docker_server.start

    def paused_after_start() -> docker_server.Started:
        started = start()
        docker_clean.api.pause(started.container_id)
        return started

    monkeypatch.setattr(docker_server, "start", paused_after_start)
    monkeypatch.setattr(servers, "READY_SECONDS", 1.0)
    monkeypatch.setattr(servers, "CONNECT_TIMEOUT", 2)
    with pytest.raises(DatabaseError) as caught:
        open_database(choose("docker", None))
    message = one_line(caught)
    assert re.search(
        r"^cannot connect to postgresql://test:\*\*\*@\S+ within \d+ s \(connect_timeout\): .+; the docker container [0-9a-f]{12} \(paused\) does not "
        r"answer on its published port \(last log lines: .*ready to accept connections\); use --rag-db=embedded ",
        message,
    ), message


def test_the_gateway_lookup_failure_names_the_connection_mode(docker_clean: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """What podman's container list (no HostConfig) does to testcontainers' gateway lookup, reproduced on any engine."""
    from testcontainers.core.config import ConnectionMode, testcontainers_config
    from testcontainers.core.docker_client import DockerClient

    get_container = DockerClient.get_container

    def as_podman_lists_it(self: DockerClient, container_id: str) -> dict[str, Any]:
        row = dict(get_container(self, container_id))
        row.pop("HostConfig", None)
        return row

    monkeypatch.setattr(testcontainers_config, "connection_mode_override", ConnectionMode.gateway_ip)
    monkeypatch.setattr(DockerClient, "get_container", as_podman_lists_it)
    with pytest.raises(DatabaseError) as caught:
        docker_server.start()
    assert one_line(caught) == (
        "the pgvector/pgvector:pg16 container started, but testcontainers could not find its address in gateway_ip "
        "mode (TESTCONTAINERS_CONNECTION_MODE=gateway_ip is set): KeyError 'HostConfig'; "
        "set TESTCONTAINERS_CONNECTION_MODE=docker_host to connect through the engine's published ports"
    )


def test_the_gateway_mode_guessed_from_dockerenv_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """No engine needed: the reason testcontainers picked gateway_ip when the variable is unset."""
    from testcontainers.core import utils
    from testcontainers.core.config import ConnectionMode, testcontainers_config

    container = type("C", (), {"get_docker_client": lambda self: type("D", (), {
        "get_connection_mode": lambda self: ConnectionMode.gateway_ip})()})()
    monkeypatch.setattr(testcontainers_config, "connection_mode_override", None)
    monkeypatch.setattr(utils, "inside_container", lambda: True)
    assert docker_server.address_failure(container, "img", KeyError("HostConfig")) == (
        "the img container started, but testcontainers could not find its address in gateway_ip mode (chosen by "
        "testcontainers because this machine looks like a container (/.dockerenv)): KeyError 'HostConfig'; "
        "set TESTCONTAINERS_CONNECTION_MODE=docker_host to connect through the engine's published ports"
    )


def test_a_misspelt_connection_mode_is_one_line() -> None:
    """testcontainers reads the variable when it is imported, so a fresh interpreter shows it."""
    code = (
        "from pytest_ragretrieval.database.docker import _postgres_container_class\n"
        "from pytest_ragretrieval.core.errors import DatabaseError\n"
        "try:\n    _postgres_container_class()\nexcept DatabaseError as exc:\n    print(exc)\n"
    )
    env = dict(os.environ, TESTCONTAINERS_CONNECTION_MODE="docker-host")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.splitlines()
    assert "TESTCONTAINERS_CONNECTION_MODE" in line and "'docker-host'" in line
    assert line.endswith(
        "; use docker_host, gateway_ip or bridge_ip "
        "(set TESTCONTAINERS_CONNECTION_MODE=docker_host to connect through the engine's published ports)"
    )
