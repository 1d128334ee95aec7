"""Each embedder reads only so much of a text (`bound`); the cache keys what was read, so two texts
that differ only beyond it share one entry, and texts within it are never touched."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from pytest_ragretrieval.cache.store import Cache
from pytest_ragretrieval.embedding.base import Bounded, FailOnce
from pytest_ragretrieval.embedding.cached import CachedEmbedder
from pytest_ragretrieval.embedding.prompts import Prompts
from pytest_ragretrieval.embedding.sentence_transformers import CHARACTERS, SentenceTransformerEmbedder


class ReadsTen:
    """Reads the first 10 characters of a query, all of a passage; records what reached it."""

    def __init__(self) -> None:
        self.id = "test:ten"
        self.prompts = Prompts()
        self.seen: list[str] = []

    def bound(self, texts: list[str], side: str) -> list[str]:
        return [text[:10] for text in texts] if side == "query" else list(texts)

    def embed(self, texts: list[str], side: str = "passage") -> np.ndarray:
        self.seen.extend(texts)
        return np.array([[float(len(text)), float(sum(map(ord, text)) % 97)] for text in texts], dtype=np.float32)


def test_the_cache_keys_the_text_as_read(tmp_path: Path) -> None:
    model = ReadsTen()
    cached = CachedEmbedder(model, Cache(tmp_path))
    first = cached.embed(["0123456789 and then more", "short"], None, side="query")
    again = cached.embed(["0123456789 something else entirely"], None, side="query")
    assert model.seen == ["0123456789", "short"]
    assert cached.stats.hits == 1 and np.array_equal(again[0], first[0])
    cached.embed(["0123456789 and then more"], None, side="passage")
    assert model.seen[-1] == "0123456789 and then more"  # passages are read whole by this model


def test_a_wrapped_embedder_keeps_its_bound() -> None:
    assert isinstance(FailOnce(ReadsTen()), Bounded)
    class ReadsAll:
        id = "test:all"
        prompts = Prompts()

        def embed(self, texts: list[str], side: str = "passage") -> np.ndarray:
            return np.zeros((len(texts), 2), dtype=np.float32)

    assert not isinstance(FailOnce(ReadsAll()), Bounded)


def test_sentence_transformers_cut_at_a_fixed_length_without_loading_the_model() -> None:
    embedder = SentenceTransformerEmbedder()
    text = "word " * 30_000
    assert embedder.bound([text, "short"], "query") == [text[:CHARACTERS], "short"]
    assert not embedder.loaded
