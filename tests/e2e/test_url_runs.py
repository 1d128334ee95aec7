"""`url` mode as CI uses a shared server: runs side by side, and runs killed at any moment.

Each run is a real `pytest --rag-eval` process against one server that has no global `vector`:
two at once must both pass, and after runs killed with SIGKILL at random moments, a later run
passes and leaves no `rag_eval_<hex>` schema behind. A small python embedder keeps each run to a
few seconds (no model).
"""
from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from projects import retriever, write_project

from pytest_ragretrieval.database.schemas import RUN_SCHEMA

KILLS = 6
SEED = 20240611
EMBEDDER = '''
import hashlib

import numpy


def embed(texts):
    """Eight deterministic dimensions per text, from its sha256."""
    rows = [numpy.frombuffer(hashlib.sha256(text.encode()).digest()[:8], dtype=numpy.uint8) for text in texts]
    return numpy.array(rows, dtype=numpy.float32) + 1.0
'''
VECTOR = retriever("vector", "vector")


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Someone else's server: no vector extension until a run installs it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pgserver.postgres_server import get_server
    server = get_server(tmp_path_factory.mktemp("shared") / "data", cleanup_mode="delete")
    yield f"postgresql://postgres@/postgres?host={server.get_postmaster_info().socket_dir}"
    server.cleanup()


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("project")
    settings = 'embedding = "python:hashed:embed"\nembedding_id = "hashed-8"\ndb = "url"'
    write_project(folder, retrievers=VECTOR, settings=settings)
    (folder / "hashed.py").write_text(EMBEDDER, encoding="utf-8")
    return folder


def gate(folder: Path, dsn: str, *flags: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "pytest", "--rag-eval", "--rag-db-url", dsn, "--rag-no-reuse", "-p", "no:cacheprovider",
               *flags]  # every run searches on the server: reused rankings would start no schema
    return subprocess.Popen(command, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finished(process: subprocess.Popen[str]) -> tuple[int, str]:
    out, _ = process.communicate(timeout=300)
    return process.returncode, out


def run_schemas(dsn: str) -> list[str]:
    with psycopg.connect(dsn) as conn:
        return [name for (name,) in conn.execute("SELECT nspname FROM pg_namespace ORDER BY 1") if RUN_SCHEMA.fullmatch(name)]


def wait_for_killed_sessions(dsn: str) -> None:
    """The server ends a killed client's sessions (and their locks) when it sees the socket close: wait for that."""
    query = "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
    deadline = time.monotonic() + 30
    with psycopg.connect(dsn, autocommit=True) as conn:
        while conn.execute(query).fetchone() != (0,) and time.monotonic() < deadline:
            time.sleep(0.05)


@pytest.fixture(scope="module")
def recorded(project: Path, shared: str) -> float:
    """Record the baseline once through the server; returns how long a whole run takes."""
    code, out = finished(gate(project, shared, "--rag-update-baseline"))
    assert code == 0, out
    started = time.monotonic()
    code, out = finished(gate(project, shared))
    assert code == 0, out
    return time.monotonic() - started


def test_two_runs_at_once_on_one_server_both_pass(project: Path, shared: str, recorded: float) -> None:
    first, second = gate(project, shared), gate(project, shared)
    for code, out in (finished(first), finished(second)):
        assert code == 0, out
        assert "rag: database url: PostgreSQL" in out and "(schema rag_eval_ext)" in out
    assert run_schemas(shared) == []


def test_runs_killed_at_random_moments_leave_nothing_a_later_run_does_not_reclaim(
    project: Path, shared: str, recorded: float
) -> None:
    moments = random.Random(SEED)
    for _ in range(KILLS):
        process = gate(project, shared)
        time.sleep(moments.uniform(0.0, recorded * 1.1))
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
    process = gate(project, shared)
    deadline = time.monotonic() + 120
    while not run_schemas(shared) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    wait_for_killed_sessions(shared)
    left = run_schemas(shared)
    assert left, "the last run was to be killed while its schema existed"
    code, out = finished(gate(project, shared))
    assert code == 0, out
    assert f"dropped {len(left)} schema{'s' if len(left) != 1 else ''} left by killed runs" in out
    assert run_schemas(shared) == []
