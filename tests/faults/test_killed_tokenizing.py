"""A gate killed while it tokenizes the corpus ahead (core/fork.py) leaves no process behind: not the
process tokenizing ahead, and not the processes that one forked to share the work (issue 41, item 6).

The run is cold: the corpus is embedded by an embedder of the test's own that blocks, so the gate
waits in "embedding corpus" while the process forked before it tokenizes. The project's conftest.py
makes that process fork one more (as it does where an idle core measured makes it pay), which
says so through a file and then takes its time: that is when the signal is sent, to the gate alone.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from projects import CHUNKS, RUN, retriever, write_project

GUARD = 60
"""Seconds before a run counts as hung or a process as left behind: a guard, not a measure of speed
(a left process sleeps 120 s)."""
BLOCKING_EMBEDDER = '''
import os
import time
from pathlib import Path


def embed(texts):
    Path(os.environ["RAG_TEST_EMBEDDING"]).write_text("embedding", encoding="utf-8")
    time.sleep(120)
    return [[1.0, 0.0] for _ in texts]
'''
CONFTEST = '''
import os
import time
from pathlib import Path

from pytest_ragretrieval.retrievers import corpus_tokens

corpus_tokens.PROBE_SECONDS = 0.0
corpus_tokens.processes = lambda workers, measured: workers
real = corpus_tokens._flat


def _flat(name, texts):
    Path(os.environ["RAG_TEST_FORKED"], str(os.getpid())).write_text("", encoding="utf-8")
    time.sleep(120)
    return real(name, texts)


corpus_tokens._flat = _flat
'''
SETTINGS = 'db = "embedded"\ncache = "cache"\nembedding = "python:blocking_embedder:embed"\nembedding_id = "test:block"\nworkers = 3'
MORE = [{"id": f"extra-{i:03d}", "doc": "extra.md", "text": f"第{i}条补充说明：报销单据需在月底前提交。"} for i in range(120)]


@pytest.fixture
def left() -> Iterator[list[psutil.Process]]:
    """The gate's descendants seen before the kill; whatever a failed test leaves running is killed."""
    found: list[psutil.Process] = []
    yield found
    for process in found:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass


def alive(process: psutil.Process) -> bool:
    try:
        return bool(process.is_running() and process.status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGKILL])
def test_a_gate_killed_while_tokenizing_ahead_leaves_no_process(
    tmp_path: Path, left: list[psutil.Process], number: signal.Signals
) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    retrievers = retriever("vector", "vector") + retriever("bm25", "bm25")  # vector first: embedding
    write_project(folder, retrievers=retrievers, settings=SETTINGS, chunks=[*CHUNKS, *MORE])
    (folder / "blocking_embedder.py").write_text(BLOCKING_EMBEDDER, encoding="utf-8")
    (folder / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    forked = tmp_path / "forked"
    forked.mkdir()
    env = dict(os.environ, RAG_TEST_FORKED=str(forked), RAG_TEST_EMBEDDING=str(tmp_path / "embedding"))
    run = subprocess.Popen([sys.executable, "-m", "pytest", "--rag-eval", *RUN], cwd=folder, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + GUARD
        while not ((tmp_path / "embedding").exists() and any(forked.iterdir())):
            assert run.poll() is None, run.communicate()[0][-3000:]
            assert time.monotonic() < deadline, "the run never tokenized ahead on two processes while embedding"
            time.sleep(0.05)
        left.extend(psutil.Process(run.pid).children(recursive=True))
        assert {int(path.name) for path in forked.iterdir()} < {process.pid for process in left}
        os.kill(run.pid, number)  # the gate alone, as a CI timeout's kill or an OOM kill reaches it
        run.communicate(timeout=GUARD)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.communicate()
    deadline = time.monotonic() + GUARD
    while any(alive(process) for process in left) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [process.pid for process in left if alive(process)] == [], "processes outlived the killed run"
