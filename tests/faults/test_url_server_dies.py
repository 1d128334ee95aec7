"""A `url` server that dies mid-run: the run ends with its verdicts and one line naming the schema
left behind (never a traceback from pytest_unconfigure), and the next run on the restarted server
reclaims that schema (issue 21, item 8)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from projects import write_project

psycopg = pytest.importorskip("psycopg")
pytest.importorskip("pgserver")

from pytest_ragretrieval.database.schemas import RUN_SCHEMA  # noqa: E402

EMBEDDER = '''
import hashlib

import numpy


def embed(texts):
    rows = [numpy.frombuffer(hashlib.sha256(text.encode()).digest()[:8], dtype=numpy.uint8) for text in texts]
    return numpy.array(rows, dtype=numpy.float32) + 1.0
'''
WAITING = '''
import time
from pathlib import Path


def make(ctx):
    def retrieve(query, k):
        Path("started").write_text("yes")
        deadline = time.monotonic() + 120
        while not Path("go").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        return ctx.retriever("vector")(query + " again", k)
    return retrieve
'''
RETRIEVERS = """
[tool.ragretrieval.retrievers.vector]
type = "vector"

[tool.ragretrieval.retrievers.waiting]
type = "python"
factory = "waiting_retriever:make"
sources = ["vector"]
"""


SERVER = """
import sys, warnings
warnings.simplefilter("ignore")
import pgserver
server = pgserver.get_server(sys.argv[1], cleanup_mode=sys.argv[2] or None)
info = server.get_postmaster_info()
print(info.socket_dir, info.pid)
"""


def server(data: Path, cleanup: str = "") -> tuple[str, int]:
    """Start (or, with cleanup="stop", stop at exit) the server in its own process: pgserver keeps
    one handle per folder and process, which would not see that its server was killed."""
    done = subprocess.run([sys.executable, "-c", SERVER, str(data), cleanup], capture_output=True, text=True,
                          timeout=120, check=True)
    socket_dir, pid = done.stdout.split()
    return f"postgresql://postgres@/postgres?host={socket_dir}", int(pid)


def wait_dead(data: Path, pid: int) -> None:
    """Wait until the killed postmaster is gone. Where PID 1 reaps no orphans (some sandboxes), it
    stays a zombie that Postgres's own stale-lock checks (kill(pid, 0)) take for alive, so its lock
    files (`postmaster.pid`, the socket's `.lock`) are removed as an administrator restarting after a
    crash would."""
    psutil = pytest.importorskip("psutil")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                for lock in [data / "postmaster.pid", *data.glob(".s.PGSQL.*.lock")]:
                    lock.unlink(missing_ok=True)
                return
        except psutil.NoSuchProcess:
            return
        time.sleep(0.05)
    raise AssertionError(f"the postmaster {pid} did not die within 60 s")


def gate(folder: Path, dsn: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "pytest", "--rag-eval", "--rag-db-url", dsn, "-p", "no:cacheprovider"]
    return subprocess.Popen(command, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def schemas(dsn: str) -> list[str]:
    with psycopg.connect(dsn) as conn:
        return [name for (name,) in conn.execute("SELECT nspname FROM pg_namespace ORDER BY 1") if RUN_SCHEMA.fullmatch(name)]


def test_a_server_that_dies_mid_run_is_one_line_naming_the_schema_and_the_next_run_reclaims_it(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    write_project(folder, retrievers=RETRIEVERS, settings='embedding = "python:hashed:embed"\nembedding_id = "h8"\ndb = "url"')
    (folder / "hashed.py").write_text(EMBEDDER, encoding="utf-8")
    (folder / "waiting_retriever.py").write_text(WAITING, encoding="utf-8")
    dsn, postmaster = server(tmp_path / "data")
    try:
        run = gate(folder, dsn)
        deadline = time.monotonic() + 120
        while not (folder / "started").exists():
            assert run.poll() is None and time.monotonic() < deadline, run.communicate()[0]
            time.sleep(0.05)
        os.kill(postmaster, signal.SIGKILL)  # the server dies while the run holds its schema
        (folder / "go").write_text("")
        out, _ = run.communicate(timeout=300)
        wait_dead(tmp_path / "data", postmaster)
        assert "Traceback" not in out and "INTERNALERROR" not in out, out
        last = out.splitlines()[-1]
        assert last.startswith("rag: error: schema rag_eval_") and " was left on postgresql://" in last, out
        assert "the next run on this server drops it (no run holds its lock any more), or drop it by hand" in last
        left = last.split()[3]
        assert RUN_SCHEMA.fullmatch(left), last

        dsn, _ = server(tmp_path / "data")  # restarted: the schema is still there
        assert left in schemas(dsn)
        again = gate(folder, dsn)
        out, _ = again.communicate(timeout=300)
        assert again.returncode in (0, 1), out
        assert schemas(dsn) == []
    finally:
        server(tmp_path / "data", cleanup="stop")
