"""BM25Okapi with scores equal to rank-bm25's, from a term-by-chunk sparse matrix (scipy.sparse).

rank-bm25 loops in Python over every chunk for every query token. Here each (term, chunk)
weight, idf times the k1/b-normalised term frequency, is computed once when the index is
built, so a query touches only the chunks holding its terms. Every float operation is
rank-bm25's own, in its order (idf over terms in first-seen order, the epsilon floor, the
weights, then one addition per query token in query order), so scores are equal to the last
bit and ties stay ties (tests/unit/test_bm25_index.py checks it against rank-bm25).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from scipy import sparse

Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]


class BM25Index:
    """The index of a tokenized corpus; chunk `i` is row `i` of the corpus.

    Terms are numbered in order of first appearance (rank-bm25's idf order); the chunks
    holding term `t` are `docs[starts[t]:starts[t + 1]]`, ascending (a CSR matrix of terms by
    chunks), and `weights` holds their weights at the same positions.
    """

    def __init__(
        self, rows: Sequence[npt.ArrayLike], vocabulary: Sequence[str], k1: float = 1.5, b: float = 0.75,
        epsilon: float = 0.25,
    ) -> None:
        """`rows[i]` holds chunk i's tokens as ids into `vocabulary`, numbered in any order."""
        self.size = len(rows)
        arrays = [np.asarray(row, dtype=np.int64) for row in rows]
        lengths = np.asarray([row.size for row in arrays], dtype=np.int64)
        flat = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)
        first = np.full(len(vocabulary), flat.size, dtype=np.int64)
        np.minimum.at(first, flat, np.arange(flat.size))
        seen = np.flatnonzero(first < flat.size)
        order = seen[np.argsort(first[seen], kind="stable")]
        renumber = np.zeros(len(vocabulary), dtype=np.int64)
        renumber[order] = np.arange(order.size)
        chunks = np.repeat(np.arange(self.size, dtype=np.int64), lengths)
        matrix = sparse.csr_matrix(
            (np.ones(flat.size, dtype=np.int64), (renumber[flat], chunks)), shape=(order.size, self.size)
        )
        matrix.sum_duplicates()
        self.docs = matrix.indices.astype(np.int64)
        self.starts: Ints = matrix.indptr.astype(np.int64)
        self.vocabulary = {vocabulary[term]: number for number, term in enumerate(order.tolist())}
        self.idf = _idf(np.diff(self.starts), self.size, epsilon)
        terms = np.repeat(np.arange(order.size, dtype=np.int64), np.diff(self.starts))
        self.weights = self._weights(matrix.data, terms, lengths, k1, b)
        self.zero_norm = self._zero_norm(lengths, k1, b)

    @classmethod
    def from_tokens(
        cls, corpus: Sequence[Sequence[str]], k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25
    ) -> BM25Index:
        """The index of token lists, as rank-bm25's `BM25Okapi(corpus, k1, b, epsilon)` sees them."""
        vocabulary: dict[str, int] = {}
        rows = [
            np.fromiter((vocabulary.setdefault(t, len(vocabulary)) for t in tokens), dtype=np.int64, count=len(tokens))
            for tokens in corpus
        ]
        return cls(rows, list(vocabulary), k1, b, epsilon)

    def _weights(self, tf: Ints, terms: Ints, lengths: Ints, k1: float, b: float) -> Floats:
        """rank-bm25's `idf * (tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)))`, per (term, chunk)."""
        if tf.size == 0:
            return np.zeros(0, dtype=np.float64)
        avgdl = int(lengths.sum()) / self.size
        norm = k1 * (1 - b + b * lengths / avgdl)
        weights: Floats = self.idf[terms] * (tf * (k1 + 1) / (tf + norm[self.docs]))
        return weights

    def _zero_norm(self, lengths: Ints, k1: float, b: float) -> npt.NDArray[np.bool_]:
        """Chunks whose `k1 * (1 - b + b * dl / avgdl)` is 0: k1 = 0, or a k1 so small the product underflows."""
        if k1 == 0 or int(lengths.sum()) == 0:
            return np.full(self.size, k1 == 0)
        zero: npt.NDArray[np.bool_] = k1 * (1 - b + b * lengths / (int(lengths.sum()) / self.size)) == 0
        return zero

    def scores(self, tokens: Sequence[str]) -> Floats:
        """rank-bm25's `get_scores(tokens)`; NaN where it gives NaN (a zero norm and a query term missing)."""
        score = np.zeros(self.size, dtype=np.float64)
        found = [self.vocabulary.get(token) for token in tokens]
        for term in found:
            if term is not None:
                start, end = self.starts[term], self.starts[term + 1]
                score[self.docs[start:end]] += self.weights[start:end]
        if self.zero_norm.any():
            score[self.zero_norm & ~self._holding_all(found)] = np.nan
        return score

    def _holding_all(self, found: Sequence[int | None]) -> npt.NDArray[np.bool_]:
        """Where the norm is 0 rank-bm25 divides 0 by 0 for every query token a chunk lacks."""
        if None in found:
            return np.zeros(self.size, dtype=bool)
        distinct = {term for term in found if term is not None}
        count = np.zeros(self.size, dtype=np.int64)
        for term in distinct:
            count[self.docs[self.starts[term]:self.starts[term + 1]]] += 1
        held: npt.NDArray[np.bool_] = count == len(distinct)
        return held

    def top(self, tokens: Sequence[str], k: int, min_score: float = 0.0) -> list[tuple[int, float]]:
        """(position, score) of the best `k` chunks scoring above 0 and at least `min_score`, by
        score descending, then position: a partial sort, exact at the cut (every chunk tied
        with the k-th is considered before the cut by position)."""
        if k <= 0 or self.size == 0:
            return []
        score = self.scores(tokens)
        keep = np.flatnonzero((score > 0) & (score >= min_score))
        if keep.size > k:
            kept = score[keep]
            kth = np.partition(kept, kept.size - k)[kept.size - k]
            keep = keep[kept >= kth]
        order = np.lexsort((keep, -score[keep]))[:k]
        return [(int(position), float(score[position])) for position in keep[order]]


def _idf(frequencies: Ints, size: int, epsilon: float) -> Floats:
    """rank-bm25's idf: `log(N - n + 0.5) - log(n + 0.5)`, negatives floored at epsilon * mean idf.

    Summed in a Python loop in term order, as rank-bm25 does, so the mean is bit-identical.
    """
    idf = [math.log(size - n + 0.5) - math.log(n + 0.5) for n in frequencies.tolist()]
    if not idf:
        return np.zeros(0, dtype=np.float64)
    total = 0.0
    for value in idf:
        total += value
    floor = epsilon * (total / len(idf))
    return np.asarray([floor if value < 0 else value for value in idf], dtype=np.float64)
