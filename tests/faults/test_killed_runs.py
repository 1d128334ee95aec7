"""Runs ended by signals: SIGTERM is handled like Ctrl-C, and what SIGKILL leaves the next run reclaims.

Each run gets its own TMPDIR, so the embedded servers it starts (`rag-eval-pg-*`) are found
there and nowhere else. A retriever of the test's own blocks on its first question, after the
database is seeded, and says so through a file: that is when the signal is sent.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from projects import RUN, retriever, write_project

from pytest_ragretrieval.database.leftovers import reclaim

GUARD = 60
"""Seconds before a run counts as hung: a guard, not a measure of speed."""
MEASURED = ("--rag-no-reuse",)
"""Every run searches: these tests are about the servers a run starts, which a reused run starts none of."""
HASH_EMBEDDER = '''
import hashlib


def embed(texts):
    return [[b / 255.0 + 0.01 for b in hashlib.sha256(t.encode("utf-8")).digest()[:8]] for t in texts]
'''
BLOCKING = '''
import os
import time
from pathlib import Path


def make(ctx):
    ctx.connect().close()

    def retrieve(query, k):
        Path(os.environ["RAG_TEST_RUNNING"]).write_text("running", encoding="utf-8")
        time.sleep(120)
        return []

    return retrieve
'''
BM25 = retriever("bm25", "bm25")
RETRIEVERS = BM25 + retriever("blocking", "python", factory="blocking:make")
SETTINGS = 'db = "embedded"\ncache = "cache"\nembedding = "python:hash_embedder:embed"\nembedding_id = "test:hash"'
TEMPORARY = SETTINGS + "\nkeep_database = false"
"""A temporary server per run (`rag-eval-pg-*` in TMPDIR), not the kept one (database/kept.py)."""


def make_project(tmp_path: Path, retrievers: str, settings: str) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    write_project(folder, retrievers=retrievers, settings=settings)
    (folder / "hash_embedder.py").write_text(HASH_EMBEDDER, encoding="utf-8")
    (folder / "blocking.py").write_text(BLOCKING, encoding="utf-8")
    # TMPDIR holds the servers' folders and their sockets: keep it short (a unix socket path has
    # at most 107 bytes, and pytest-xdist's temporary paths are long).
    short = Path(tempfile.mkdtemp(prefix="rag-k-"))
    (folder / ".servers-tmp").write_text(str(short), encoding="utf-8")
    return folder


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path, RETRIEVERS, TEMPORARY)


@pytest.fixture
def kept_project(tmp_path: Path) -> Path:
    """Seeded once (by vector, which does not block): later runs reuse its kept database."""
    folder = make_project(tmp_path, retriever("vector", "vector") + RETRIEVERS, SETTINGS)
    first = run_gate(folder, "--rag-update-baseline", "-k", "not blocking")
    assert "rag: seeded " in first.stdout and len(kept(folder)) == 1, first.stdout[-3000:]
    return folder


def kept(project: Path) -> list[Path]:
    return sorted((project / "cache" / "databases").glob("*/data"))


def server_tmp(project: Path) -> Path:
    return Path((project / ".servers-tmp").read_text(encoding="utf-8"))


def environment(project: Path) -> dict[str, str]:
    return dict(os.environ, TMPDIR=str(server_tmp(project)), RAG_TEST_RUNNING=str(project / "running"))


def servers(project: Path) -> list[Path]:
    return sorted(server_tmp(project).glob("rag-eval-pg-*"))


def stopped(project: Path) -> Iterator[list[subprocess.Popen[str]]]:
    """Runs started by a test; whatever a failed test leaves running is killed and its server reclaimed."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
            process.communicate()
    reclaim(server_tmp(project))
    shutil.rmtree(server_tmp(project), ignore_errors=True)


@pytest.fixture
def runs(project: Path) -> Iterator[list[subprocess.Popen[str]]]:
    yield from stopped(project)


@pytest.fixture
def kept_runs(kept_project: Path) -> Iterator[list[subprocess.Popen[str]]]:
    yield from stopped(kept_project)


def start_blocked(project: Path, runs: list[subprocess.Popen[str]], *flags: str) -> tuple[subprocess.Popen[str], int]:
    """A gate run waiting in its blocking retriever, with the pid of its embedded postmaster (temporary or kept)."""
    (project / "running").unlink(missing_ok=True)
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", *flags, *RUN, *MEASURED], cwd=project, env=environment(project),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    runs.append(process)
    deadline = time.monotonic() + GUARD
    while not (project / "running").exists():
        assert process.poll() is None, process.communicate()[0]
        assert time.monotonic() < deadline, "the run never reached its blocking retriever"
        time.sleep(0.1)
    datas = [path / "data" for path in servers(project)] + kept(project)
    (data,) = [path for path in datas if (path / "postmaster.pid").exists()]
    postmaster = int((data / "postmaster.pid").read_text(encoding="utf-8").split()[0])
    assert psutil.pid_exists(postmaster)
    return process, postmaster


def gone(pid: int) -> bool:
    """Exited, or a zombie nobody reaps (pid 1 in a container may not): either way no server."""
    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True


def run_gate(project: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", *flags, *RUN, *MEASURED], cwd=project, env=environment(project),
        capture_output=True, text=True, timeout=GUARD,
    )


def test_sigterm_is_handled_like_ctrl_c(project: Path, runs: list[subprocess.Popen[str]]) -> None:
    flags = ("--rag-update-baseline", "--rag-json", "out.json", "--rag-report", "report.md")
    process, postmaster = start_blocked(project, runs, *flags)
    process.send_signal(signal.SIGTERM)
    output = process.communicate(timeout=GUARD)[0]
    assert process.returncode == pytest.ExitCode.INTERRUPTED, output
    assert "rag: interrupted: no results, reports or baseline written" in output
    assert "Traceback" not in output and "INTERNALERROR" not in output
    assert gone(postmaster) and servers(project) == []
    assert not (project / "out.json").exists() and not (project / "report.md").exists()
    assert not (project / "baselines").exists()


def test_what_sigkill_leaves_the_next_run_reclaims_and_a_live_run_is_never_touched(
    project: Path, runs: list[subprocess.Popen[str]]
) -> None:
    process, postmaster = start_blocked(project, runs, "--rag-eval")
    (live,) = servers(project)
    beside = run_gate(project, "--rag-eval", "-k", "bm25")
    assert "reclaimed" not in beside.stdout and servers(project) == [live] and not gone(postmaster)

    process.kill()
    process.communicate(timeout=GUARD)
    assert not gone(postmaster) and servers(project) == [live]

    after = run_gate(project, "--rag-eval", "-k", "bm25")
    assert f"rag: reclaimed 1 embedded Postgres server left by killed runs ({live.name})" in after.stdout
    assert gone(postmaster) and servers(project) == []
    assert not [p for p in psutil.process_iter(["cmdline"]) if str(live) in " ".join(p.info["cmdline"] or [])]


def test_sigterm_on_a_kept_database_stops_it_and_leaves_it_usable(
    kept_project: Path, kept_runs: list[subprocess.Popen[str]]
) -> None:
    process, postmaster = start_blocked(kept_project, kept_runs, "--rag-eval")
    assert servers(kept_project) == [], "the kept database was reused, no temporary one started"
    process.send_signal(signal.SIGTERM)
    output = process.communicate(timeout=GUARD)[0]
    assert process.returncode == pytest.ExitCode.INTERRUPTED, output
    assert "rag: reused the seeded database kept in " in output
    (data,) = kept(kept_project)
    assert gone(postmaster) and not (data / "postmaster.pid").exists() and not (data.parent / "in-use").exists()
    again = run_gate(kept_project, "--rag-eval", "-k", "vector")
    assert "rag: reused the seeded database kept in " in again.stdout, again.stdout[-3000:]


def test_what_sigkill_leaves_on_a_kept_database_the_next_run_stops_and_seeds_again(
    kept_project: Path, kept_runs: list[subprocess.Popen[str]]
) -> None:
    """The killed run might have written to it: its Postgres is stopped and the folder seeded afresh."""
    process, postmaster = start_blocked(kept_project, kept_runs, "--rag-eval")
    process.kill()
    process.communicate(timeout=GUARD)
    (data,) = kept(kept_project)
    assert not gone(postmaster) and (data.parent / "in-use").exists()
    after = run_gate(kept_project, "--rag-eval", "-k", "vector")
    assert "rag: seeded " in after.stdout and "rag: reused" not in after.stdout, after.stdout[-3000:]
    assert gone(postmaster) and not (data.parent / "in-use").exists() and (data.parent / "seeded.json").exists()


FAKE_SENTENCE_TRANSFORMERS = '''
import os
import signal
import time

os.kill(os.getpid(), signal.{name})
time.sleep(30)


class CrossEncoder:
    def __init__(self, *args, **kwargs):
        raise AssertionError("the signal should have ended the load")
'''


@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM"])
def test_a_signal_during_the_cross_encoder_load_ends_the_run(pytester: pytest.Pytester, name: str) -> None:
    """Reported as swallowed: that run was a background job of a script, where SIGINT is ignored from the start."""
    write_project(pytester.path, retrievers=BM25 + retriever("reranked", "rerank", source="bm25", model="reranker"))
    (pytester.path / "reranker").mkdir()
    (pytester.path / "sentence_transformers.py").write_text(FAKE_SENTENCE_TRANSFORMERS.format(name=name))
    result = pytester.runpytest_subprocess("--rag-eval", "--rag-json", "out.json", *RUN, timeout=GUARD)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["rag: interrupted: no results, reports or baseline written"])
    assert "skipped" not in result.stdout.str() and not (pytester.path / "out.json").exists()
