"""The `docker` mode for real, on a Docker-compatible engine (Docker, or podman through .ci/docker-standin.sh).

Without an engine every test here skips with the reason, unless RAG_EVAL_REQUIRE_DOCKER=1. The
runs that can be killed use a one-retriever project with a toy embedder (tests/docker_engine.py),
so they need no model; only the whole-sample comparison loads MiniLM.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from docker_engine import containers_of, write_docker_project

from pytest_ragretrieval.database import docker as docker_server
from pytest_ragretrieval.database.handle import open_database
from pytest_ragretrieval.database.reclaim import HOST_LABEL, MACHINE_LABEL, PID_LABEL, RUN_LABEL, STARTED_LABEL, Owner
from pytest_ragretrieval.database.servers import choose

ROOT = Path(__file__).resolve().parents[2]
PYTEST = (sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rag-no-reuse")
"""Every run searches: these tests are about the container a run starts, which a reused run starts none of."""
NO_REAPER = {"TESTCONTAINERS_RYUK_DISABLED": "true"}
"""Killed and interrupted runs start without Ryuk, so only our own cleanup (or reclaim) can remove their container."""

LATENCY = re.compile(rb'("latency_ms": \{\s*"p50": )[-0-9.eE+]+(,\s*"p95": )[-0-9.eE+]+')
PHASE = re.compile(rb'(\n    "(?:load and validate|loading|database start|embedding corpus|seeding|tokenizing|scoring|reports|'
                   rb'(?:build|run) [^"]+)": )[-0-9.eE+]+')
LOADS = re.compile(rb'("loads_ms": \{[^}]*\})')
"""A retriever's one-time loads (runner/store.py): times, and whether one was needed depends on the caches."""


def masked(path: Path) -> tuple[bytes, int]:
    """The results file with the run's timings (each retriever's latency_ms, the phases) replaced by 0,
    and how many latency entries were replaced; the phase names stay, so the same phases must have run,
    but for seeding, which an embedded run on its kept database skips (database/kept.py)."""
    text, replaced = LATENCY.subn(rb"\g<1>0\g<2>0", path.read_bytes())
    text = LOADS.sub(rb'"loads_ms": {}', text)
    return PHASE.sub(rb"\g<1>0", text).replace(b'\n    "seeding": 0,', b""), replaced


def run_sample(mode: str, json_path: Path, engine: Any) -> str:
    """The README's gate on the bundled sample in one database mode; its output. No container may outlive it."""
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    command = [*PYTEST, "--rag-eval", "-m", "rag_eval", f"--rag-db={mode}", f"--rag-json={json_path}"]
    with subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as run:
        output, _ = run.communicate(timeout=600)
    assert run.returncode == 0, output[-3000:]
    assert containers_of(engine, run.pid) == []
    return output


@pytest.mark.slow
def test_the_sample_in_docker_and_auto_mode_gives_the_embedded_results(docker_clean: Any, tmp_path: Path) -> None:
    """Same results file, byte for byte, once the latency numbers (which vary from run to run) are masked."""
    run_sample("embedded", tmp_path / "embedded.json", docker_clean)
    expected, replaced = masked(tmp_path / "embedded.json")
    assert replaced >= 3
    for mode in ("docker", "auto"):
        output = run_sample(mode, tmp_path / f"{mode}.json", docker_clean)
        assert re.search(rf"^rag: database docker: PostgreSQL 16\S* .*\({mode}: a Docker engine answered at ", output, re.M)
        assert masked(tmp_path / f"{mode}.json") == (expected, replaced)


def test_the_container_is_labelled_and_removed_on_close(docker_clean: Any) -> None:
    with open_database(choose("docker", None)) as db:
        (row,) = docker_clean.api.containers(all=True, filters={"label": f"{PID_LABEL}={os.getpid()}"})
        labels = row["Labels"]
        here = Owner.here()
        assert re.fullmatch(r"[0-9a-f]{12}", labels[RUN_LABEL])
        assert (labels[MACHINE_LABEL], labels[STARTED_LABEL], labels[HOST_LABEL]) == (here.machine, here.started, here.host)
        assert db.describe().startswith("docker: PostgreSQL 16") and db.notes == ()
        with db.connect() as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    assert containers_of(docker_clean, os.getpid()) == []


def remove_containers_of(engine: Any, run: subprocess.Popen[Any]) -> None:
    """After a failed check: stop the run and remove what it left, so one failure does not leak into other tests."""
    if run.poll() is None:
        run.kill()
        run.wait()
    for container_id in containers_of(engine, run.pid):
        engine.api.remove_container(container_id, force=True, v=True)


def start_blocked_run(project: Path, engine: Any) -> subprocess.Popen[bytes]:
    """A gate run whose retriever waits, after the database is seeded, until it is signalled."""
    env = {**os.environ, **NO_REAPER, "RAG_TEST_BLOCK": "1"}
    with (project / "blocked-run.log").open("w", encoding="utf-8") as log:
        run = subprocess.Popen([*PYTEST, "--rag-update-baseline"], cwd=project, env=env, stdout=log, stderr=log)
    for _ in range(1200):
        if (project / "blocked").exists() or run.poll() is not None:
            break
        time.sleep(0.1)
    if not (project / "blocked").exists():
        remove_containers_of(engine, run)
        pytest.fail((project / "blocked-run.log").read_text(encoding="utf-8")[-3000:])
    return run


def test_a_killed_run_leaves_nothing_after_the_next_run(docker_clean: Any, tmp_path: Path) -> None:
    project = write_docker_project(tmp_path)
    killed = start_blocked_run(project, docker_clean)
    try:
        left = containers_of(docker_clean, killed.pid)
        killed.send_signal(signal.SIGKILL)
        assert killed.wait(timeout=60) == -signal.SIGKILL
        assert len(left) == 1 and containers_of(docker_clean, killed.pid) == left, "the killed run's container should stay"

        env = {**os.environ, **NO_REAPER}
        with subprocess.Popen([*PYTEST, "--rag-update-baseline"], cwd=project, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) as run:
            output, _ = run.communicate(timeout=600)
        assert run.returncode == 0, output[-3000:]
        assert "rag: removed 1 pgvector container(s) left by runs that are gone (killed, or older than 6 h)" in output
        assert containers_of(docker_clean, killed.pid) == [] and containers_of(docker_clean, run.pid) == []
    finally:
        remove_containers_of(docker_clean, killed)


def test_an_interrupted_run_removes_its_container(docker_clean: Any, tmp_path: Path) -> None:
    """Ctrl-C while the container runs: pytest unwinds, close() runs and removes it (no reaper, no later run)."""
    project = write_docker_project(tmp_path)
    run = start_blocked_run(project, docker_clean)
    try:
        assert len(containers_of(docker_clean, run.pid)) == 1
        run.send_signal(signal.SIGINT)
        assert run.wait(timeout=120) == 2, (project / "blocked-run.log").read_text(encoding="utf-8")[-3000:]
        assert containers_of(docker_clean, run.pid) == []
    finally:
        remove_containers_of(docker_clean, run)


def test_an_interrupt_while_psql_is_awaited_removes_the_container(
    docker_clean: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    postgres_container = docker_server._postgres_container_class()

    def interrupted(self: Any) -> None:
        assert containers_of(docker_clean, os.getpid()) != []
        raise KeyboardInterrupt

    monkeypatch.setattr(postgres_container, "_connect", interrupted)
    with pytest.raises(KeyboardInterrupt):
        open_database(choose("docker", None))
    assert containers_of(docker_clean, os.getpid()) == []


def test_an_interrupt_right_after_the_create_call_removes_the_container(
    docker_clean: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine created it but testcontainers never learnt its id: found by our run label and removed."""
    from testcontainers.core.docker_client import DockerClient

    create = DockerClient.create

    def created_then_interrupted(self: DockerClient, *args: Any, **kwargs: Any) -> Any:
        create(self, *args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(DockerClient, "create", created_then_interrupted)
    with pytest.raises(KeyboardInterrupt):
        docker_server.start()
    assert containers_of(docker_clean, os.getpid()) == []
