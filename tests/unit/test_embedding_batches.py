"""A batch that is out (a slow model, a hanging server): what came before it is kept on disk while
it waits, a line says which batch and for how long, and SIGTERM does not wait for it to return
(issue 21, items 9 and 10, and the SIGTERM half of item 4)."""
from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from pytest_ragretrieval.cache.store import Cache
from pytest_ragretrieval.core.progress import PlainOutput, Progress
from pytest_ragretrieval.embedding.cached import CachedEmbedder
from pytest_ragretrieval.embedding.prompts import Prompts

GUARD = 30.0
"""Seconds a test waits for what must happen before it counts as never happening: a guard, not a measure."""


class Held:
    """Answers batch 1 at once; holds batch 2 until `release()` says so (or the guard runs out)."""

    def __init__(self, release: Callable[[], bool]) -> None:
        self.id = "test:held"
        self.prompts = Prompts()
        self.release = release
        self.released = threading.Event()
        self.calls = 0

    def embed(self, texts: list[str], side: str = "passage") -> np.ndarray:
        self.calls += 1
        if self.calls == 2:
            deadline = time.monotonic() + GUARD
            while not self.release() and time.monotonic() < deadline:
                time.sleep(0.005)
            self.released.set()
        return np.array([[float(len(t)), 1.0] for t in texts], dtype=np.float32)


def packs(cache: Path) -> list[Path]:
    return sorted(cache.rglob("*.pack"))


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(CachedEmbedder, "tick", 0.01)
    monkeypatch.setattr(CachedEmbedder, "write_seconds", 0.05)
    monkeypatch.setattr(Progress, "every", 0.0)


def test_the_batches_before_a_hanging_one_are_on_disk_while_it_hangs(tmp_path: Path, quick: None) -> None:
    """As SIGKILL would find them: written while the next batch is still out, not at the end."""
    model = Held(release=lambda: bool(packs(tmp_path)))
    vectors = CachedEmbedder(model, Cache(tmp_path), batch_size=2).embed(["a", "bb", "ccc", "dddd"], None)
    assert model.released.is_set() and vectors.shape == (4, 2)
    fresh = CachedEmbedder(Held(release=lambda: True), Cache(tmp_path), batch_size=2)
    fresh.embed(["a", "bb"], None)
    assert fresh.stats.hits == 2


def test_a_hanging_batch_gets_a_heartbeat_naming_it(tmp_path: Path, quick: None) -> None:
    out = PlainOutput()
    model = Held(release=lambda: sum("waiting for the embedder" in line for line in out.lines) >= 2)
    CachedEmbedder(model, Cache(tmp_path), out=out, batch_size=2).embed(["a", "bb", "ccc", "dddd", "e"], "embedding corpus")
    beats = [line for line in out.lines if "waiting" in line]
    assert len(beats) >= 2
    assert beats[0].startswith("rag: embedding corpus with test:held: 2/5, batch 2 of 3: waiting for the embedder, ")
    assert beats[0].endswith("s")


def test_a_hanging_batch_on_a_terminal_shows_in_the_bar(tmp_path: Path, quick: None) -> None:
    redrawn: list[str] = []

    class Terminal(PlainOutput):
        def rewrite(self, text: str) -> None:
            redrawn.append(text)

    model = Held(release=lambda: any("waiting" in text for text in redrawn))
    CachedEmbedder(model, Cache(tmp_path), out=Terminal(isatty=True), batch_size=2).embed(["a", "bb", "ccc"], "embedding")
    assert any(text.startswith("rag: embedding with test:held 2/3 (batch 2 of 2: waiting for the embedder, ") for text in redrawn)


def test_sigterm_does_not_wait_for_the_batch_to_return(tmp_path: Path, quick: None) -> None:
    """The signal handler raises in this thread while the model still computes in its own."""
    release = threading.Event()
    sent: list[bool] = []

    def held() -> bool:
        if not sent:  # batch 2 has started: SIGTERM arrives now, as from `timeout` or a CI cancel
            sent.append(True)
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGTERM)
        return release.is_set()

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt("received SIGTERM")

    model = Held(release=held)
    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        with pytest.raises(KeyboardInterrupt):
            CachedEmbedder(model, Cache(tmp_path), batch_size=2).embed(["a", "bb", "ccc"], None)
        assert sent and not model.released.is_set()  # the batch was still out when the run stopped
    finally:
        signal.signal(signal.SIGTERM, previous)
        release.set()
    assert len(packs(tmp_path)) == 1  # batch 1 was kept on the way out
