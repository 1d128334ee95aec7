"""A gate killed (SIGKILL: a CI timeout or cancel) while an embeddings request hangs keeps every batch
answered before it, and the next run sends only the rest; while it hangs, a CI log (no terminal)
gets a line naming the batch and the seconds waited (issue 21, items 9 and 10).

No database: a python retriever embeds the corpus through `ctx.embed`, in batches of 2, against the
local stand-in server, which counts what it is sent.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from openai_server import FakeOpenAI, Reply
from projects import CHUNKS, cache_keys, write_project

GUARD = 120
"""Seconds before a run counts as hung: a guard, not a measure of speed."""
EMBEDS = '''
def make(ctx):
    """Embeds the whole corpus once, as the vector retriever's seeding does."""
    ctx.embed([chunk.text for chunk in ctx.chunks], side="passage")
    return lambda query, k: []
'''
RETRIEVERS = '[tool.ragretrieval.retrievers.embeds]\ntype = "python"\nfactory = "embeds:make"\n'


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with FakeOpenAI() as found:
        yield found


def project(folder: Path, server: FakeOpenAI, timeout: int) -> Path:
    settings = "\n".join([
        'cache = "cache"', 'embedding = "openai:test-model"', f'embedding_base_url = "{server.url}"',
        "embedding_batch_size = 2", f"embedding_timeout = {timeout}", "embedding_retries = 0",
    ])
    write_project(folder, retrievers=RETRIEVERS, settings=settings)
    (folder / "embeds.py").write_text(EMBEDS, encoding="utf-8")
    return folder


def gate(folder: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "pytest", "--rag-eval", "-p", "no:cacheprovider"], cwd=folder,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def sent(server: FakeOpenAI) -> list[str]:
    return [text for request in server.requests for text in request.inputs]


def test_a_killed_gate_keeps_the_batches_answered_and_the_rerun_sends_only_the_rest(
    tmp_path: Path, server: FakeOpenAI
) -> None:
    folder = project(tmp_path, server, timeout=GUARD)
    server.script(Reply(), Reply(), Reply(fault="hang"))  # batches 1 and 2 answered, batch 3 never
    run = gate(folder)
    deadline = time.monotonic() + GUARD
    # Batch 2 may arrive within a second of batch 1's write, and then waits for batch 3's first
    # second out: the kill comes once both are on disk, as the design promises, never before.
    while not (len(server.requests) == 3 and len(cache_keys(folder / "cache", "embeddings")) == 4):
        assert run.poll() is None, run.communicate()[0]
        assert time.monotonic() < deadline, "batches 1 and 2 were never kept while batch 3 hung"
        time.sleep(0.02)
    os.killpg(run.pid, signal.SIGKILL)
    run.communicate(timeout=GUARD)
    answered = set(sent(server)[:4])
    server.reset()
    again = gate(folder)
    out, _ = again.communicate(timeout=GUARD)
    assert again.returncode in (0, 1), out
    resent = sent(server)
    corpus = {chunk["text"] for chunk in CHUNKS}
    assert len(answered) == 4 and answered < corpus
    assert sorted(resent) == sorted(corpus - answered), "the rerun sent again what the killed run had kept"


def test_a_hanging_request_writes_a_heartbeat_to_a_log_without_terminal(tmp_path: Path, server: FakeOpenAI) -> None:
    """The request times out after 7 s; every 5 s of it a line names the batch and the wait."""
    folder = project(tmp_path, server, timeout=7)
    server.script(Reply(), Reply(fault="hang"))
    run = gate(folder)
    out, _ = run.communicate(timeout=GUARD)
    beats = [line for line in out.splitlines() if "waiting for the embedder" in line]
    assert beats, out
    assert re.fullmatch(
        rf"rag: embedding with openai:test-model@{re.escape(server.url)}: 2/8, batch 2 of 4: waiting for the embedder, \d+s",
        beats[0],
    ), beats
    assert "batch 2 of 4: timeout (7s per request) after 1 attempts" in out
