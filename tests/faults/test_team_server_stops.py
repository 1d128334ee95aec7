"""A team server that stops answering mid-run (SIGSTOP): every read has a client-side deadline, and
SIGTERM ends a `sql` run whose threads wait on it (issue 40, item 11)."""
from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from projects import retriever

psycopg = pytest.importorskip("psycopg")
psutil = pytest.importorskip("psutil")
pytest.importorskip("pgserver")

from pytest_ragretrieval.core.errors import DatabaseError  # noqa: E402
from pytest_ragretrieval.database.session import deadline  # noqa: E402
from pytest_ragretrieval.database.team import connect  # noqa: E402

EMBEDDER = '''
import numpy


def embed(texts):
    return numpy.ones((len(texts), 4), dtype=numpy.float32)
'''
SLOW = "SELECT id FROM public.docs, (SELECT pg_sleep(0.5)) AS pause ORDER BY id LIMIT %(k)s"
"""Half a second a question: the run is surely waiting on the server when it stops."""


@pytest.fixture
def server() -> Iterator[tuple[str, str, int]]:
    """(the owner's DSN, a SELECT-only reader's DSN, the postmaster's pid) of a fresh embedded server."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pgserver.postgres_server import get_server
    folder = Path(tempfile.mkdtemp(prefix="rag-stopped-"))
    pg = get_server(folder / "data", cleanup_mode="delete")
    info = pg.get_postmaster_info()
    owner = f"postgresql://postgres@/postgres?host={info.socket_dir}"
    with psycopg.connect(owner, autocommit=True) as conn:
        conn.execute("CREATE TABLE docs (id text PRIMARY KEY, body text NOT NULL)")
        conn.execute("INSERT INTO docs SELECT 'doc-' || n, 'w' || n FROM generate_series(1, 20) AS n")
        conn.execute("CREATE ROLE reader LOGIN; REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        conn.execute("GRANT USAGE ON SCHEMA public TO reader; GRANT SELECT ON docs TO reader")
    try:
        yield owner, f"postgresql://reader@/postgres?host={info.socket_dir}", int(info.pid)
    finally:
        resume(postmaster_and_children(int(info.pid)))
        pg.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


def postmaster_and_children(pid: int) -> list[Any]:
    postmaster = psutil.Process(pid)
    return [postmaster, *postmaster.children(recursive=True)]


def stop(pid: int) -> list[Any]:
    """SIGSTOP the whole server, backends included, as a frozen host or a paused VM would be."""
    stopped = []
    for process in postmaster_and_children(pid):
        try:  # a backend of a connection just closed may exit between the listing and the signal
            process.send_signal(signal.SIGSTOP)
        except psutil.NoSuchProcess:
            continue
        stopped.append(process)
    return stopped


def resume(stopped: list[Any]) -> None:
    for process in stopped:
        try:
            process.send_signal(signal.SIGCONT)
        except psutil.NoSuchProcess:
            pass


def test_a_read_from_a_stopped_server_ends_at_the_client_side_deadline(server: tuple[str, str, int]) -> None:
    """On 571473c a read from a SIGSTOPped server waited for good: statement_timeout is the server's,
    and a stopped server enforces nothing."""
    _, reader, postmaster = server
    with connect(reader) as conn:
        stopped = stop(postmaster)
        try:
            with pytest.raises(DatabaseError) as error, deadline(conn, "reading the chunks", seconds=1):
                conn.execute("SELECT id FROM docs").fetchall()
        finally:
            resume(stopped)
    message = str(error.value)
    assert message.startswith("reading the chunks: the team's server did not answer within 1 s (the plugin's "
                              "client-side deadline"), message
    assert "\n" not in message


def test_sigterm_ends_a_sql_run_waiting_on_a_stopped_server(server: tuple[str, str, int], tmp_path: Path) -> None:
    """On 571473c SIGTERM did not end a `sql` run whose server was SIGSTOPped: the main thread was
    interrupted, then waited for good for the threads blocked on the server's sockets."""
    owner, reader, postmaster = server
    questions = [{"id": f"q{n}", "query": f"w{n}", "relevant": [f"doc-{n}"]} for n in range(1, 13)]
    (tmp_path / "evalset.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    (tmp_path / "flat.py").write_text(EMBEDDER, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.ragretrieval]\nevalset = "evalset.jsonl"\nembedding = "python:flat:embed"\nembedding_id = "flat-4"\n'
        f'cache = "{tmp_path / "cache"}"\n' + retriever("slow", "sql", query=SLOW, table="public.docs", text_column="body"),
        encoding="utf-8")
    command = [sys.executable, "-m", "pytest", "--rag-eval", "--rag-db-url", reader, "-p", "no:cacheprovider"]
    run = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    stopped: list[Any] = []
    try:
        with psycopg.connect(owner, autocommit=True) as conn:
            guard = time.monotonic() + 120
            while not conn.execute("SELECT count(*) FROM pg_stat_activity WHERE usename = 'reader' "
                                   "AND state = 'active' AND query LIKE '%pg_sleep%'").fetchone()[0]:
                assert run.poll() is None and time.monotonic() < guard, run.communicate()[0]
                time.sleep(0.05)
        stopped = stop(postmaster)
        time.sleep(1)  # the run's threads now wait on a server that does not answer
        run.send_signal(signal.SIGTERM)
        out, _ = run.communicate(timeout=120)  # a guard against the hang, not a measure of speed
    finally:
        resume(stopped)
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert run.returncode != 0, out
    assert "rag: interrupted: no results, reports or baseline written" in out, out
    assert "Traceback" not in out, out
