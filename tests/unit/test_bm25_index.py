"""The sparse BM25 index against rank-bm25, the reference: equal scores (to the bit) and equal rankings."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi

from pytest_ragretrieval.retrievers.bm25_index import BM25Index

WORDS = [f"w{i}" for i in range(12)]
corpora = st.lists(st.lists(st.sampled_from(WORDS), max_size=12), min_size=1, max_size=30)
queries = st.lists(st.sampled_from([*WORDS, "unseen"]), min_size=1, max_size=6)
k1s = st.one_of(st.just(0.0), st.just(1.5), st.floats(0.0, 3.0))
bs = st.one_of(st.just(0.0), st.just(1.0), st.floats(0.0, 1.0))
epsilons = st.one_of(st.just(0.25), st.floats(0.0, 1.0))


def reference_top(scores: np.ndarray, k: int, min_score: float) -> list[tuple[int, float]]:
    """The retriever's rule over rank-bm25's scores, by full sort: above 0, at least min_score, (-score, position)."""
    kept = [(i, float(s)) for i, s in enumerate(scores) if s > 0 and s >= min_score]
    return sorted(kept, key=lambda item: (-item[1], item[0]))[:k]


@settings(max_examples=400, deadline=None)
@given(corpora, queries, k1s, bs, epsilons, st.integers(1, 10), st.sampled_from([0.0, 0.3, 1.0]))
def test_scores_and_rankings_equal_rank_bm25(
    corpus: list[list[str]], query: list[str], k1: float, b: float, epsilon: float, k: int, min_score: float
) -> None:
    index = BM25Index.from_tokens(corpus, k1=k1, b=b, epsilon=epsilon)
    if not any(corpus):  # rank-bm25 cannot index a corpus without a token (it divides by zero)
        assert index.top(query, k, min_score) == []
        return
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = BM25Okapi(corpus, k1=k1, b=b, epsilon=epsilon).get_scores(query)
    found = index.scores(query)
    # rank-bm25 gives NaN for empty chunks when b = 1 (0 / 0); such chunks never rank either way.
    empty = np.asarray([len(doc) == 0 for doc in corpus])
    assert np.array_equal(np.isnan(found[~empty]), np.isnan(expected[~empty]))
    finite = ~np.isnan(expected) & ~empty
    assert np.allclose(found[finite], expected[finite], rtol=0, atol=1e-9)
    assert np.array_equal(found[finite], expected[finite])  # bit for bit, in fact
    assert index.top(query, k, min_score) == reference_top(expected, k, min_score)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 40), queries, st.integers(1, 5))
def test_ties_at_the_cut_go_to_the_smaller_position(copies: int, query: list[str], k: int) -> None:
    corpus = [["w1", "w2"]] * copies + [["w3"]]
    found = BM25Index.from_tokens(corpus).top(query, k)
    assert found == reference_top(BM25Okapi(corpus).get_scores(query), k, 0.0)


def test_duplicated_query_tokens_count_each_time() -> None:
    corpus = [["a", "b"], ["b", "c"], ["c"], ["d"]]
    index = BM25Index.from_tokens(corpus)
    assert np.array_equal(index.scores(["a", "a"]), BM25Okapi(corpus).get_scores(["a", "a"]))
    assert index.scores(["a", "a"])[0] == 2 * index.scores(["a"])[0]


def test_token_ids_in_any_numbering_give_the_same_index() -> None:
    """Cached tokens come numbered by their packs' vocabularies, not by first appearance."""
    corpus = [["b", "a", "c"], ["c", "c"], ["a"]]
    vocabulary = ["c", "z", "a", "b"]
    rows = [[vocabulary.index(token) for token in doc] for doc in corpus]
    fresh, cached = BM25Index.from_tokens(corpus), BM25Index(rows, vocabulary)
    assert np.array_equal(cached.scores(["a", "c", "z"]), fresh.scores(["a", "c", "z"]))
