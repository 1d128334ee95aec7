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
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

UNIT = 2.0 ** -24
BLOCK = 64
"""Queries per matrix product: 64 x 1,000,000 float32 products is 256 MB; fewer would read the corpus more often."""


def margin(dimensions: int) -> float:
    gamma = dimensions * UNIT / (1 - dimensions * UNIT)
    return 4 * gamma + 1e-12


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
        queries = np.asarray(queries, dtype=np.float32)
        if not self.usable or k >= self.matrix.shape[0]:
            return [None] * len(queries)
        found: list[list[str] | None] = []
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
                found.append(self.ids[row <= kth + 2 * self.margin].tolist())
        return found
