"""The candidates of exact search: they always hold the exact top k, as pgvector computes it; a ranking decided
without SQL, or from an earlier run after a corpus edit, is always pgvector's own top k."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_ragretrieval.retrievers.candidates import Candidates, Earlier, Plan, margin, vector_digests


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


def resolved(plan: Plan, matrix: np.ndarray, ids: list[str], query: np.ndarray, k: int) -> list[str]:
    """What the vector retriever returns for a plan: its ranking, or pgvector's top k among its chunks (all)."""
    if plan.ranking is not None:
        return list(plan.ranking)
    full = exact_top(matrix, ids, query, len(ids))
    return [c for c in full if plan.among is None or c in set(plan.among)][:k]


def earlier(matrix: np.ndarray, ids: list[str], queries: np.ndarray, k: int) -> Earlier:
    return Earlier(k, {digest: exact_top(matrix, ids, q, k) for q, digest in zip(queries, vector_digests(queries))},
                   dict(zip(ids, vector_digests(matrix), strict=True)))


@st.composite
def edits(draw: st.DrawFn) -> tuple[np.ndarray, list[str], np.ndarray, list[str], np.ndarray, int]:
    """A corpus with ties before and after an edit: rows changed (copies of others: exact ties), removed, added."""
    matrix, queries, k = draw(corpora())
    ids = [f"c{i:03d}" for i in range(len(matrix))]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    after, kept = matrix.copy(), list(ids)
    for i in rng.choice(len(ids), size=draw(st.integers(0, len(ids) // 2)), replace=False).tolist():
        kind = rng.integers(3)
        after[i] = after[rng.integers(len(ids))] if kind == 0 else (
            after[i] * np.float32(1.0001) if kind == 1 else rng.standard_normal(matrix.shape[1]).astype(np.float32))
    removed = set(rng.choice(len(ids), size=draw(st.integers(0, min(3, len(ids)))), replace=False).tolist())
    rows = [row for i, row in enumerate(after) if i not in removed]
    kept = [chunk_id for i, chunk_id in enumerate(kept) if i not in removed]
    for number in range(draw(st.integers(0, 3))):
        rows.append(matrix[rng.integers(len(matrix))].copy())
        kept.append(f"a{number}")
    if not rows:
        rows, kept = [matrix[0]], ["a9"]
    return matrix, ids, np.asarray(rows, dtype=np.float32), kept, queries, k


@settings(max_examples=100, deadline=None)
@given(corpora())
def test_a_ranking_numpy_decides_is_pgvectors(corpus: tuple[np.ndarray, np.ndarray, int]) -> None:
    matrix, queries, k = corpus
    ids = [f"c{i:03d}" for i in range(len(matrix))]
    for query, plan in zip(queries, Candidates(ids, matrix).plan(queries, k), strict=True):
        assert resolved(plan, matrix, ids, query, k) == exact_top(matrix, ids, query, k)


@settings(max_examples=150, deadline=None)
@given(edits(), st.booleans())
def test_after_an_edit_the_earlier_rankings_give_a_full_searchs_top_k(
    case: tuple[np.ndarray, list[str], np.ndarray, list[str], np.ndarray, int], order: bool,
) -> None:
    before, ids, after, kept, queries, k = case
    plans = Candidates(kept, after).plan(queries, k, earlier(before, ids, queries, k), order=order)
    for query, plan in zip(queries, plans, strict=True):
        assert resolved(plan, after, kept, query, k) == exact_top(after, kept, query, k)


def test_the_cases_by_hand() -> None:
    """Ties in distance, a removed chunk in a cached top k, an edited chunk that moves into and out of it."""
    rows = {"a": [1, 0], "b": [1, 0], "c": [0.9, 0.1], "d": [0.5, 0.5], "e": [0, 1], "f": [0.1, 0.9]}
    ids, matrix = list(rows), np.asarray(list(rows.values()), dtype=np.float32)
    query = np.asarray([[1, 0]], dtype=np.float32)
    was = earlier(matrix, ids, query, 2)
    assert was.rankings[vector_digests(query)[0]] == ["a", "b"]  # a tie, broken by id

    def after(changes: dict[str, list[float]], removed: tuple[str, ...] = ()) -> tuple[Plan, list[str]]:
        now = {key: changes.get(key, value) for key, value in rows.items() if key not in removed}
        now.update({key: value for key, value in changes.items() if key not in now})
        new_ids, new_matrix = list(now), np.asarray(list(now.values()), dtype=np.float32)
        plan = Candidates(new_ids, new_matrix).plan(query, 2, was)[0]
        assert resolved(plan, new_matrix, new_ids, query[0], 2) == exact_top(new_matrix, new_ids, query[0], 2)
        return plan, resolved(plan, new_matrix, new_ids, query[0], 2)

    assert after({"e": [0, 2]}) == (Plan(ranking=("a", "b"), earlier=True), ["a", "b"])  # far: the cached ranking
    assert after({"0": [1, 0]})[1] == ["0", "a"]  # added, tied at the top: in by id
    assert after({"f": [1, 0.001]})[1] == ["a", "b"]  # moves up to third: stays out
    into = after({"d": [1, -0.0001]})  # moves into the top 2 and within the margin of the tie: pgvector ranks
    assert into[0].among is not None and into[0].earlier and into[1] == ["a", "b"]
    assert after({"e": [1, 0]})[1] == ["a", "b"]  # an exact tie behind them by id
    out = after({"a": [0, 1]})  # an edited chunk of the cached top 2 moves out: searched without it
    assert not out[0].earlier and out[1] == ["b", "c"]
    gone = after({}, removed=("b",))  # a removed chunk of the cached top 2
    assert not gone[0].earlier and gone[1] == ["a", "c"]
