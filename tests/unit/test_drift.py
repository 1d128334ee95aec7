"""Model drift against the cache: an in-process model that runs anyway embeds one cached text again and
warns when this CPU computes it differently by more than float noise (issue 21, item 3)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from pytest_ragretrieval.cache.store import Cache
from pytest_ragretrieval.core.progress import PlainOutput
from pytest_ragretrieval.embedding.cached import DRIFT, CachedEmbedder
from pytest_ragretrieval.embedding.prompts import Prompts


class Here:
    """An in-process model whose arithmetic is off by `noise` in every component (another CPU)."""

    computes_here = True

    def __init__(self, noise: float = 0.0) -> None:
        self.id = "test:here"
        self.prompts = Prompts()
        self.noise = noise
        self.calls: list[list[str]] = []

    def embed(self, texts: list[str], side: str = "passage") -> np.ndarray:
        self.calls.append(list(texts))
        return np.array([vector(t) + self.noise * SIGNS for t in texts], dtype=np.float32)


SIGNS = np.array([1.0, -1.0, 1.0, -1.0])


def vector(text: str) -> np.ndarray:
    """Components of the size a 384-d unit vector has (about 0.05)."""
    return np.array([0.05 * len(text), 0.1, 0.05 * (text.count("a") + 1), 0.02])


class Server(Here):
    """A model behind a server: its vectors are the server's; checking them would cost a request."""

    computes_here = False


def filled(tmp_path: Path) -> Cache:
    cache = Cache(tmp_path)
    CachedEmbedder(Here(), cache).embed(["a", "bb"])
    return cache


def test_the_same_arithmetic_passes_the_probe_silently(tmp_path: Path) -> None:
    cache, out, model = filled(tmp_path), PlainOutput(), Here()
    embedder = CachedEmbedder(model, cache, out)
    embedder.embed(["a", "bb", "ccc"])
    assert model.calls == [["ccc"], ["a"]]  # the miss, then the first cached text again
    assert embedder.drift is None and not [line for line in out.lines if "warning" in line]


def test_another_cpus_arithmetic_is_named_once(tmp_path: Path) -> None:
    """Every component off by 1e-3 (the simulated other CPU): 'a' was cached as [0.05, 0.1, 0.1, 0.02] and
    comes back as [0.051, 0.099, 0.101, 0.019]: cosine 0.02293 / sqrt(0.0229 * 0.022964) = 0.9999138, distance
    8.6e-05 (the real case on AVX-512 was at most 5e-5), far above float noise."""
    cache, out, model = filled(tmp_path), PlainOutput(), Here(noise=1e-3)
    embedder = CachedEmbedder(model, cache, out)
    embedder.embed(["a", "bb", "dddd"])
    cached = np.array([0.05, 0.1, 0.1, 0.02], dtype=np.float32).astype(np.float64)
    again = np.array([0.051, 0.099, 0.101, 0.019], dtype=np.float32).astype(np.float64)
    distance = 1 - again @ cached / (np.linalg.norm(again) * np.linalg.norm(cached))
    assert f"{distance:.1e}" == "8.6e-05" and distance > DRIFT
    assert [line for line in out.lines if "warning" in line] == [
        f"rag: warning: embedder 'test:here' computes vectors here that differ from the cached ones by more than "
        f"float noise (a cached text embedded again: cosine distance {distance:.1e}, largest difference 1.0e-03): "
        "the cache was filled on a CPU whose arithmetic differs, so this run mixes both; values may move by such "
        "noise, which `significance` keeps from failing items"
    ]
    embedder.embed(["a", "eeeee"])
    assert model.calls == [["dddd"], ["a"], ["eeeee"]], "probed once per session"


def test_no_probe_without_a_miss_for_a_server_or_with_the_cache_off(tmp_path: Path) -> None:
    cache = filled(tmp_path)
    hits = Here(noise=1e-3)
    CachedEmbedder(hits, cache).embed(["a", "bb"])
    assert hits.calls == [], "every text hit the cache: the model is not even asked"
    server = Server(noise=1e-3)
    remote = CachedEmbedder(server, cache)
    remote.embed(["a", "ffffff"])
    assert server.calls == [["ffffff"]] and remote.drift is None
    off = Here(noise=1e-3)
    CachedEmbedder(off, Cache(tmp_path, "off")).embed(["a", "bb"])
    assert off.calls == [["a", "bb"]], "the cache off reads nothing, so nothing is compared"
