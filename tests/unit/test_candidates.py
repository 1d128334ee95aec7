"""The candidates of exact search: they always hold the exact top k, as pgvector computes it."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_ragretrieval.retrievers.candidates import Candidates, margin


def pgvector_distances(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """pgvector 0.6's cosine_distance: float32 sums, one dimension after the other, then double."""
    dot = np.zeros(len(matrix), dtype=np.float32)
    norm = np.zeros(len(matrix), dtype=np.float32)
    length = np.float32(0)
    for i in range(matrix.shape[1]):
        dot += matrix[:, i] * query[i]
        norm += matrix[:, i] * matrix[:, i]
        length += query[i] * query[i]
    similarity = dot.astype(np.float64) / np.sqrt(norm.astype(np.float64) * float(length))
    return 1.0 - np.clip(similarity, -1.0, 1.0)


def exact_top(matrix: np.ndarray, ids: list[str], query: np.ndarray, k: int) -> list[str]:
    distances = pgvector_distances(matrix, query)
    return [ids[i] for i in sorted(range(len(ids)), key=lambda i: (distances[i], ids[i]))[:k]]


@st.composite
def corpora(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int]:
    """Vectors with many exact and near ties: copies, rescaled copies, copies nudged in the last bits."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dimensions = draw(st.sampled_from([2, 3, 16, 384]))
    base = rng.standard_normal((draw(st.integers(1, 6)), dimensions)).astype(np.float32)
    rows = []
    for _ in range(draw(st.integers(2, 40))):
        row = base[rng.integers(len(base))].copy()
        kind = rng.integers(4)
        if kind == 1:
            row *= np.float32(rng.uniform(0.1, 10))
        elif kind == 2:
            row = np.nextafter(row, np.float32(np.inf) * np.sign(rng.standard_normal(dimensions))).astype(np.float32)
        elif kind == 3:
            row = rng.standard_normal(dimensions).astype(np.float32)
        rows.append(row)
    matrix = np.asarray(rows, dtype=np.float32)
    queries = np.concatenate([base, rng.standard_normal((3, dimensions)).astype(np.float32)])
    return matrix, queries, draw(st.integers(1, 12))


@settings(max_examples=300, deadline=None)
@given(corpora())
def test_candidates_hold_the_exact_top_k_ties_included(corpus: tuple[np.ndarray, np.ndarray, int]) -> None:
    matrix, queries, k = corpus
    ids = [f"c{i:03d}" for i in range(len(matrix))]
    found = Candidates(ids, matrix).find(queries, k)
    for query, candidates in zip(queries, found, strict=True):
        if candidates is None:
            assert k >= len(ids)
            continue
        distances = pgvector_distances(matrix, query)
        kth = sorted(distances)[k - 1]
        tied_or_better = {ids[i] for i in range(len(ids)) if distances[i] <= kth}
        assert tied_or_better <= set(candidates)
        chosen = [c for c in exact_top(matrix, ids, query, len(ids)) if c in set(candidates)][:k]
        assert chosen == exact_top(matrix, ids, query, k)


def test_a_zero_vector_means_a_full_search() -> None:
    matrix = np.asarray([[1, 0], [0, 1], [1, 1]], dtype=np.float32)
    assert Candidates(["a", "b", "c"], matrix).find(np.asarray([[0, 0], [1, 0]], dtype=np.float32), 1) == [None, ["a"]]
    with_zero = np.asarray([[1, 0], [0, 0], [1, 1]], dtype=np.float32)
    assert Candidates(["a", "b", "c"], with_zero).find(np.asarray([[1, 0]], dtype=np.float32), 1) == [None]


def test_the_margin_grows_with_the_dimension() -> None:
    assert 6e-5 < margin(256) < 7e-5
    assert margin(16_000) > 50 * margin(256)
