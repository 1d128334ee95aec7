"""BM25 over jieba tokens: zero scores dropped, ties by id, independent of load order."""
from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_ragretrieval.evalset.records import Chunk
from pytest_ragretrieval.retrievers.bm25 import BM25Retriever
from pytest_ragretrieval.retrievers.tokens import describe, tokenizer

CHUNKS = [
    Chunk("t-1", "一线城市住宿标准为每晚600元"),
    Chunk("t-2", "出差结束后提交报销单并附发票"),
    Chunk("e-1", "ORDER-2024 表示订单已超时关闭"),
    Chunk("e-2", "PAY-3001 表示支付渠道不可用"),
    Chunk("s-1", "客服工作时间为周一至周五"),
]


def bm25(
    chunks: list[Chunk], k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25, min_score: float = 0.0
) -> BM25Retriever:
    return BM25Retriever(chunks, tokenizer("jieba"), k1=k1, b=b, epsilon=epsilon, min_score=min_score)


def test_jieba_tokens_are_lower_cased_without_blanks() -> None:
    tokens = tokenizer("jieba")("ORDER-2024 是 什么  错误")
    assert "order" in tokens and all(t.strip() for t in tokens) and all(t == t.lower() for t in tokens)
    assert describe("jieba").startswith("jieba 0.")


def test_chunks_scoring_zero_are_not_returned() -> None:
    retriever = bm25(CHUNKS)
    assert retriever("ORDER-2024", 5)[0] == "e-1"
    assert retriever("量子计算", 5) == []
    assert retriever("   ", 5) == []


def test_min_score_drops_weak_matches() -> None:
    scores = dict(bm25(CHUNKS).scores("订单超时 支付"))
    assert len(scores) == 2
    cut = max(scores.values())
    assert bm25(CHUNKS, min_score=cut)("订单超时 支付", 5) == [max(scores, key=scores.__getitem__)]


def test_ties_are_broken_by_chunk_id() -> None:
    twins = [Chunk("b", "同样的文本"), Chunk("a", "同样的文本"), Chunk("c", "同样的文本"), *CHUNKS]
    assert bm25(twins)("文本", 3) == ["a", "b", "c"]


@settings(max_examples=30, deadline=None)
@given(st.randoms(use_true_random=False), st.sampled_from(["住宿 发票", "订单", "客服 时间", "表示 不可用"]))
def test_results_do_not_depend_on_load_order(rng: random.Random, query: str) -> None:
    shuffled = list(CHUNKS)
    rng.shuffle(shuffled)
    assert bm25(shuffled).scores(query) == bm25(CHUNKS).scores(query)


def test_many_queries_at_once_rank_as_one_by_one() -> None:
    tokenize = tokenizer("jieba")
    calls: list[list[str]] = []

    def cached(texts):  # type: ignore[no-untyped-def]
        calls.append(list(texts))
        vocabulary: dict[str, int] = {}
        rows = [np.asarray([vocabulary.setdefault(t, len(vocabulary)) for t in tokenize(text)]) for text in texts]
        return list(vocabulary), rows

    retriever = BM25Retriever(CHUNKS, tokenize, 1.5, 0.75, 0.25, 0.0, cached=cached)
    queries = ["订单超时 支付", "量子计算", "   ", "住宿 发票", "订单超时 支付"]
    ticks: list[int] = []
    found = retriever.search_many(queries, 3, ticks.append)
    assert [list(ranking) for ranking, _ in found] == [retriever(query, 3) for query in queries]
    assert calls == [queries] and sum(ticks) == len(queries)
