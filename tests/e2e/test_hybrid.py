"""Hybrid retrieval is Reciprocal Rank Fusion, exactly: by hand, in fuse() and through the plugin."""
from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import pytest
from projects import E2E_DEPTH, RUN, VECTOR_AND_BM25, rankings, read_results, retriever, write_e2e_project

from pytest_ragretrieval.retrievers.hybrid import fuse

DEPTH = 6
RRF_K = 0
RETRIEVERS = VECTOR_AND_BM25 + retriever("hybrid", "hybrid", sources=["vector", "bm25"], depth=DEPTH, rrf_k=RRF_K)


def rrf(rankings_: Sequence[Sequence[str]], rrf_k: int) -> list[str]:
    """The tutorial's formula written out again: sum of 1 / (rrf_k + rank), best first, ties by id."""
    totals: dict[str, Fraction] = {}
    for ranking in rankings_:
        for position, chunk_id in enumerate(ranking):
            totals[chunk_id] = totals.get(chunk_id, Fraction(0)) + Fraction(1, rrf_k + position + 1)
    return sorted(totals, key=lambda chunk_id: (-totals[chunk_id], chunk_id))


def test_fuse_a_chunk_in_two_lists_beats_the_top_of_one() -> None:
    # rrf_k = 1: y = 1/3 + 1/3 = 2/3; x = z = 1/2, a tie the smaller id wins; w = 1/4.
    assert fuse([["x", "y", "w"], ["z", "y"]], rrf_k=1) == ["y", "x", "z", "w"]


def test_fuse_ties_exactly_where_float_sums_differ() -> None:
    # rrf_k = 2: alpha, beta and gamma each hold ranks 1, 2 and 3, so each scores 1/3 + 1/4 + 1/5
    # = 47/60, a three-way tie by id; summed in list order as floats, alpha's total comes out one
    # unit in the last place below the others'. delta scores 1/6.
    lists = [["alpha", "gamma", "beta", "delta"], ["beta", "alpha", "gamma"], ["gamma", "beta", "alpha"]]
    assert 1 / 3 + 1 / 4 + 1 / 5 != 1 / 5 + 1 / 3 + 1 / 4
    assert fuse(lists, rrf_k=2) == ["alpha", "beta", "gamma", "delta"]


def test_fuse_of_nothing_is_nothing() -> None:
    assert fuse([[], []], rrf_k=60) == []


def test_hybrid_through_the_plugin_is_rrf_of_its_sources_at_its_depth(pytester: pytest.Pytester, minilm: Any) -> None:
    """The last two checks are premises: on this corpus both the depth and rrf_k change the result."""
    write_e2e_project(pytester.path, RETRIEVERS, "cache")
    result = pytester.runpytest("--rag-update-baseline", "--rag-json", "results.json", *RUN)
    result.assert_outcomes(passed=6)
    results = read_results(pytester.path / "results.json")
    vector, bm25, hybrid = (rankings(results, name) for name in ("vector", "bm25", "hybrid"))
    expected = {qid: rrf([vector[qid][:DEPTH], bm25[qid][:DEPTH]], RRF_K)[:E2E_DEPTH] for qid in hybrid}
    assert hybrid == expected
    assert any(len(hybrid[qid]) < len(set(vector[qid]) | set(bm25[qid])) for qid in hybrid)
    assert any(rrf([vector[qid][:DEPTH], bm25[qid][:DEPTH]], 60)[:E2E_DEPTH] != expected[qid] for qid in hybrid)
    assert results["fingerprint"]["retrievers"]["hybrid"]["reads"]["vector"]["type"] == "vector"
