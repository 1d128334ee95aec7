"""Which chunks can be in a query's exact top k: a bound that lets exact search read a few rows.

pgvector's exact search computes the cosine distance of every row. Here numpy computes all of
them at once for a batch of queries, and the SQL then ranks only the chunks that can possibly
be in pgvector's own top k, by pgvector's own `<=>`, `ORDER BY distance, id`: the ranking
is the one the full scan gives, ties included, at a fraction of the cost.

Why no chunk is missed: pgvector sums the float32 products and squares of `d` dimensions and
divides in double precision, so its cosine similarity is within 2·γ of the exact one, where
γ = d·u / (1 - d·u) and u = 2^-24 (the bound holds for any order of summation, SIMD and fused
multiply-adds included). numpy's float32 product is within γ as well, so the two distances
differ by at most m = 3·γ; we allow 4·γ. If t is the k-th smallest numpy distance, at least k
chunks have a pgvector distance of at most t + m, so pgvector's k-th is at most t + m, and
every chunk in pgvector's top k (ties at the cut included) has a numpy distance of at most
t + 2·m. Those are the candidates. A query or a chunk of length zero (a NaN distance in
pgvector) gets no bound: that query is searched in full.

The same bound decides some rankings with no SQL at all (`plan`). When exactly k chunks are
candidates, they are pgvector's top k; when their numpy distances are more than 2·m apart, pgvector's
order is numpy's (d_pg(a) <= d_np(a) + m < d_np(b) - m <= d_pg(b)), with no tie for the id to break.
And after a corpus edit (`Earlier`: a cached ranking of the same query vector, as deep as asked),
`ORDER BY distance, id` is a total order and the unchanged chunks keep their distances, so a query
whose cached top k holds no changed or removed chunk has as its new top k the best k of that top k
and the changed or added chunks; of those, a chunk whose numpy distance is above the cached k-th's
by more than 2·m cannot enter. With none left the cached ranking stands; else they are placed by
numpy where every pair is more than 2·m apart, or ranked by pgvector among those few.
"""
from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

UNIT = 2.0 ** -24
BLOCK = 64
"""Queries per matrix product: 64 x 1,000,000 float32 products is 256 MB; fewer would read the corpus more often."""


def margin(dimensions: int) -> float:
    gamma = dimensions * UNIT / (1 - dimensions * UNIT)
    return 4 * gamma + 1e-12


def vector_digests(matrix: np.ndarray) -> list[str]:
    """Each row as pgvector stores it (float32), digested: an unchanged digest is an unchanged distance."""
    rows = np.ascontiguousarray(matrix, dtype=np.float32).reshape(len(matrix), -1)
    data, width = memoryview(rows.tobytes()), rows.shape[1] * 4
    return [hashlib.sha1(data[i * width:(i + 1) * width], usedforsecurity=False).hexdigest()
            for i in range(len(rows))]


@dataclass(frozen=True)
class Earlier:
    """An earlier exact search of the same table's rows: its rankings at `depth`, by the digest of the
    query's vector, and the digest of every chunk's vector then, by id."""

    depth: int
    rankings: Mapping[str, Sequence[str]]
    chunks: Mapping[str, str]


@dataclass(frozen=True)
class Plan:
    """How one query's exact top k is found: `ranking`, decided here (no SQL); else pgvector ranks
    `among` (None: every row)."""

    ranking: tuple[str, ...] | None = None
    among: list[str] | None = None
    earlier: bool = False
    """Whether the query's earlier ranking decided it (`Earlier`)."""


class Candidates:
    """The corpus as seeded (float32 rows, in `ids` order) and its norms."""

    def __init__(self, ids: Sequence[str], matrix: np.ndarray) -> None:
        self.ids = np.asarray(ids, dtype=object)
        self.matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        self.norms = np.sqrt(np.einsum("ij,ij->i", self.matrix, self.matrix, dtype=np.float64))
        self.usable = bool(self.norms.all()) and self.matrix.shape[0] > 0
        self.margin = margin(self.matrix.shape[1]) if self.matrix.ndim == 2 else 0.0

    def find(self, queries: np.ndarray, k: int) -> list[list[str] | None]:
        """Per query, the chunk ids that can be in its exact top k, or None: search it in full."""
        return [None if plan is None else list(plan) for plan in self._bounded(queries, k, order=False)]

    def plan(self, queries: np.ndarray, k: int, earlier: Earlier | None = None, order: bool = True) -> list[Plan]:
        """Per query, its exact top k decided here, or the chunks pgvector ranks (module docstring).
        `order` False (a `min_score`, which reads pgvector's own distances) decides no order by numpy."""
        queries = np.asarray(queries, dtype=np.float32)
        plans: list[Plan | None] = [None] * len(queries)
        if earlier is not None:
            self._narrow(queries, k, earlier, order, plans)
        rest = [i for i, plan in enumerate(plans) if plan is None]
        for i, found in zip(rest, self._bounded(queries[rest], k, order), strict=True):
            plans[i] = Plan(among=None) if found is None else (
                Plan(ranking=found) if isinstance(found, tuple) else Plan(among=found))
        return [plan if plan is not None else Plan() for plan in plans]

    def _bounded(self, queries: np.ndarray, k: int, order: bool) -> list[list[str] | tuple[str, ...] | None]:
        """Per query its candidates (a list), or its ranking when numpy decides it (a tuple), or None."""
        queries = np.asarray(queries, dtype=np.float32)
        if not self.usable or k >= self.matrix.shape[0]:
            return [None] * len(queries)
        found: list[list[str] | tuple[str, ...] | None] = []
        for start in range(0, len(queries), BLOCK):
            block = queries[start:start + BLOCK]
            lengths = np.sqrt(np.einsum("ij,ij->i", block, block, dtype=np.float64))
            dots = block @ self.matrix.T
            for dot, length in zip(dots, lengths.tolist(), strict=True):
                # One query at a time in float64: a block's float64 distances at a million chunks would be 0.5 GB.
                with np.errstate(divide="ignore", invalid="ignore"):
                    row = 1.0 - dot.astype(np.float64) / (length * self.norms)
                if length == 0 or not np.isfinite(row).all():
                    found.append(None)
                    continue
                kth = np.partition(row, k - 1)[k - 1]
                chosen = np.flatnonzero(row <= kth + 2 * self.margin)
                ranked = self._ordered(row[chosen], chosen) if order and len(chosen) == k else None
                found.append(ranked if ranked is not None else self.ids[chosen].tolist())
        return found

    def _ordered(self, distances: np.ndarray, rows: np.ndarray) -> tuple[str, ...] | None:
        """`rows` in pgvector's order when their numpy `distances` are more than 2·m apart, else None."""
        order = np.argsort(distances, kind="stable")
        if len(order) > 1 and not bool((np.diff(distances[order]) > 2 * self.margin).all()):
            return None
        return tuple(self.ids[rows[order]].tolist())

    def _distances(self, query: np.ndarray, rows: np.ndarray) -> np.ndarray | None:
        """numpy's distances of `query` to `rows`, as `find` computes them; None for a query of length zero."""
        length = float(np.sqrt(np.dot(query.astype(np.float64), query.astype(np.float64))))
        if length == 0:
            return None
        with np.errstate(divide="ignore", invalid="ignore"):
            found = 1.0 - (self.matrix[rows] @ query).astype(np.float64) / (length * self.norms[rows])
        return found if bool(np.isfinite(found).all()) else None

    def _narrow(self, queries: np.ndarray, k: int, earlier: Earlier, order: bool, plans: list[Plan | None]) -> None:
        """The plans of the queries whose earlier ranking holds no changed or removed chunk (module docstring)."""
        if earlier.depth != k or not self.usable:
            return
        ids = self.ids.tolist()
        row_of = {chunk_id: i for i, chunk_id in enumerate(ids)}
        digests = vector_digests(self.matrix)
        changed = np.asarray([i for i, chunk_id in enumerate(ids) if earlier.chunks.get(chunk_id) != digests[i]],
                             dtype=np.intp)
        stale = {ids[i] for i in changed.tolist()} | (set(earlier.chunks) - set(row_of))
        for position, (query, digest) in enumerate(zip(queries, vector_digests(queries), strict=True)):
            ranking = earlier.rankings.get(digest)
            if ranking is None or len(ranking) < k or stale.intersection(ranking[:k]):
                continue
            top = np.asarray([row_of.get(chunk_id, -1) for chunk_id in ranking[:k]], dtype=np.intp)
            if (top < 0).any():
                continue
            mine, theirs = self._distances(query, top), self._distances(query, changed)
            if mine is None or theirs is None:
                continue
            near = changed[theirs <= mine[-1] + 2 * self.margin]
            if not len(near):
                plans[position] = Plan(ranking=tuple(ranking[:k]), earlier=True)
                continue
            close = theirs[theirs <= mine[-1] + 2 * self.margin]
            placed = self._merged(ranking[:k], mine, near, close) if order else None
            plans[position] = (Plan(ranking=placed[:k], earlier=True) if placed is not None
                               else Plan(among=[*ranking[:k], *self.ids[near].tolist()], earlier=True))

    def _merged(
        self, top: Sequence[str], mine: np.ndarray, near: np.ndarray, theirs: np.ndarray
    ) -> tuple[str, ...] | None:
        """The cached `top` (pgvector's order) and the `near` changed rows in one order, when numpy places
        each changed row: more than 2·m from every cached row and from every other changed one; else None."""
        gaps = np.abs(theirs[:, None] - mine[None, :])
        ordered = self._ordered(theirs, near)
        if not bool((gaps > 2 * self.margin).all()) or ordered is None:
            return None
        before = (mine[None, :] < theirs[:, None]).sum(axis=1)  # cached rows ahead of each changed one
        places = dict(zip(self.ids[near].tolist(), before.tolist(), strict=True))
        merged: list[str] = []
        for index, chunk_id in enumerate([*top, None]):
            merged.extend(changed_id for changed_id in ordered if places[changed_id] == index)
            if chunk_id is not None:
                merged.append(chunk_id)
        return tuple(merged)
