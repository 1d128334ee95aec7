"""Corpus tokens through the cache: a warm run tokenizes nothing (forked processes: test_fork.py)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pytest_ragretrieval.cache.store import Cache, Mode, Namespace
from pytest_ragretrieval.retrievers import corpus_tokens as module
from pytest_ragretrieval.retrievers.bm25_index import BM25Index
from pytest_ragretrieval.retrievers.corpus_tokens import cached_tokens, tokenizer_id
from pytest_ragretrieval.retrievers.tokens import tokenizer

TEXTS = ["一线城市住宿标准为每晚600元", "出差结束后提交报销单并附发票", "ORDER-2024 表示订单已超时关闭", "一线城市", "一线城市"]


def namespace(folder: Path, mode: Mode = "readwrite") -> Namespace:
    return Cache(folder, mode).namespace("tokens", tokenizer_id("jieba"), dtype="<i4")


def words(found: tuple[list[str], list[np.ndarray]]) -> list[list[str]]:
    vocabulary, rows = found
    return [[vocabulary[i] for i in row] for row in rows]


def test_cold_and_warm_give_the_tokenizers_tokens_and_warm_tokenizes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = [tokenizer("jieba")(text) for text in TEXTS]
    assert words(cached_tokens(TEXTS, "jieba", namespace(tmp_path), workers=1)) == expected
    assert len(list(namespace(tmp_path).folder.glob("*.pack"))) == 1

    def refuse(name: str, texts: list[str]) -> None:
        raise AssertionError("a warm run must not tokenize")

    monkeypatch.setattr(module, "tokenize_batch", refuse)
    warm = cached_tokens(TEXTS, "jieba", namespace(tmp_path), workers=1)
    assert words(warm) == expected
    fresh = BM25Index.from_tokens(expected)
    assert np.array_equal(BM25Index(warm[1], warm[0]).scores(["一线", "城市"]), fresh.scores(["一线", "城市"]))


def test_new_texts_are_added_beside_the_cached_ones(tmp_path: Path) -> None:
    cached_tokens(TEXTS[:2], "jieba", namespace(tmp_path), workers=1)
    found = cached_tokens(TEXTS, "jieba", namespace(tmp_path), workers=1)
    assert words(found) == [tokenizer("jieba")(text) for text in TEXTS]
    assert len(list(namespace(tmp_path).folder.glob("*.pack"))) == 2


def test_a_readonly_cache_without_the_tokens_tokenizes_and_writes_nothing(tmp_path: Path) -> None:
    found = cached_tokens(TEXTS, "jieba", namespace(tmp_path, "readonly"), workers=1)
    assert words(found) == [tokenizer("jieba")(text) for text in TEXTS]
    assert not (tmp_path / "tokens").exists()
