"""The packaged MiniLM embedder, loaded for real: offline, deterministic, and skipped when cached."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_ragretrieval.cache.store import Cache
from pytest_ragretrieval.core.errors import RagError
from pytest_ragretrieval.embedding.cached import CachedEmbedder, EmbedStats
from pytest_ragretrieval.embedding.sentence_transformers import SentenceTransformerEmbedder

pytest.importorskip("sentence_transformers", reason="needs sentence-transformers and torch, which the test extras bring: .venv/bin/pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0 && .venv/bin/pip install -e \".[dev]\"")

TEXTS = [
    "The cat sat on the mat.",
    "A cat was sitting on the rug.",
    "Quarterly revenue grew by twelve percent.",
]


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_minilm_shape_dtype_and_determinism(minilm: SentenceTransformerEmbedder) -> None:
    vectors = minilm.embed(TEXTS)
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    again = minilm.embed([TEXTS[2], TEXTS[0]])
    np.testing.assert_allclose(again, vectors[[2, 0]], rtol=1e-5, atol=1e-6)


def test_the_packaged_model_loads_offline_and_leaves_the_hub_switch_alone() -> None:
    """Local files only, with the hub unreachable; HF_HUB_OFFLINE stays unset for a later reranker."""
    script = (
        "import os; from pytest_ragretrieval.embedding.sentence_transformers import SentenceTransformerEmbedder\n"
        "print(SentenceTransformerEmbedder().embed(['hi']).shape)\n"
        "import huggingface_hub.constants as c; print(os.environ.get('HF_HUB_OFFLINE', 'unset'), c.HF_HUB_OFFLINE)\n"
    )
    env = {key: value for key, value in os.environ.items() if key not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env["HF_ENDPOINT"] = "http://127.0.0.1:9"
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["(1,", "384)", "unset", "False"]


def test_minilm_paraphrases_are_closer_than_unrelated_text(minilm: SentenceTransformerEmbedder) -> None:
    cat, rug, revenue = minilm.embed(TEXTS)
    assert cosine(cat, rug) > cosine(cat, revenue) + 0.2


def test_fully_cached_run_never_loads_the_model(
    minilm: SentenceTransformerEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = Cache(tmp_path / ".rag-cache")
    first = CachedEmbedder(minilm, cache)
    recorded = first.embed(TEXTS)
    assert first.stats == EmbedStats(hits=0, embedded=3, total_hits=0, total_embedded=3)
    assert first.dimension == 384

    def never(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("SentenceTransformer was constructed")

    import sentence_transformers

    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", never)
    cold = SentenceTransformerEmbedder()
    for mode in ("readwrite", "readonly"):
        second = CachedEmbedder(cold, Cache(tmp_path / ".rag-cache", mode))
        np.testing.assert_array_equal(second.embed(TEXTS), recorded)
        assert second.stats.embedded == 0 and second.stats.hits == 3
        assert second.dimension == 384
    assert not cold.loaded


def test_an_unavailable_hub_model_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    embedder = SentenceTransformerEmbedder("no-such-org/no-such-model")
    with pytest.raises(RagError) as caught:
        embedder.embed(["x"])
    message = str(caught.value)
    assert "cannot load model 'no-such-org/no-such-model'" in message
    assert "must be available offline" in message and "downloadable" in message
    assert "\n" not in message
