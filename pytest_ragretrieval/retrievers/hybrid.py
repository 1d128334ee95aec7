"""Reciprocal Rank Fusion of named sources, the tutorial's hybrid: sum of weight / (rrf_k + rank)."""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from ..files.tables import Table, finite, shown
from .protocol import Context, Query, Retriever, Setup, ask


def parse(table: Table) -> dict[str, Any]:
    sources_ = table.texts("sources", ["vector", "bm25"])
    if len(sources_) < 2:
        raise table.error("sources", "must name at least two retrievers to fuse")
    params: dict[str, Any] = {
        "sources": sources_,
        "depth": table.integer("depth", 10, minimum=1),
        "rrf_k": table.integer("rrf_k", 60, minimum=0),
    }
    weights = table.raw("weights", None)
    if weights is not None:
        wanted = f"must be {len(sources_)} numbers > 0, one per source in `sources`' order"
        if not isinstance(weights, list) or len(weights) != len(sources_):
            raise table.error("weights", f"{wanted}, got {shown(weights)}")
        for number, weight in enumerate(weights):
            if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 < weight < math.inf:
                raise table.error("weights", f"{wanted}; weights[{number}] is {shown(weight)}")
            if finite(weight) is None:
                raise table.error("weights", f"{wanted}; weights[{number}] is {shown(weight)}, too large for a float")
        if len(set(weights)) > 1:
            # Equal weights rank exactly like none, so they leave the fingerprint (and baselines) as they were.
            params["weights"] = [float(w) for w in weights]
    return params


def sources(params: Mapping[str, Any]) -> list[str]:
    return list(params["sources"])


def source_depth(params: Mapping[str, Any]) -> int:
    """Each source is read to `depth`: its rankings are computed that deep once, for everyone."""
    return int(params["depth"])


def fuse(rankings: Sequence[Sequence[str]], rrf_k: int, weights: Sequence[float] | None = None) -> list[str]:
    """Weighted RRF in exact arithmetic, so that equal sums tie exactly and ties go to the smaller id.
    Weights are read as the decimals written (Fraction(str(w))): 0.1 is 1/10, not the nearest double.
    Every term is scaled by one common multiple of all denominators, so the sums are integers:
    the same order as summing the fractions, several times faster.
    """
    factors = [Fraction(str(w)) for w in weights] if weights is not None else [Fraction(1)] * len(rankings)
    longest = max((len(ranking) for ranking in rankings), default=0)
    scale = math.lcm(*range(rrf_k + 1, rrf_k + longest + 1)) * math.lcm(*(f.denominator for f in factors))
    scores: dict[str, int] = {}
    for factor, ranking in zip(factors, rankings, strict=True):
        step = scale // factor.denominator * factor.numerator
        for rank, chunk_id in enumerate(ranking, start=1):
            scores[chunk_id] = scores.get(chunk_id, 0) + step // (rrf_k + rank)
    return sorted(scores, key=lambda chunk_id: (-scores[chunk_id], chunk_id))


class HybridRetriever:
    def __init__(
        self, inputs: Sequence[Retriever], depth: int, rrf_k: int, weights: Sequence[float] | None = None
    ) -> None:
        self.inputs = list(inputs)
        self.depth = depth
        self.rrf_k = rrf_k
        self.weights = weights

    def _fused(self, fetch: Callable[[Retriever], Sequence[str]], k: int) -> list[str]:
        return fuse([list(fetch(source)) for source in self.inputs], self.rrf_k, self.weights)[:k]

    def __call__(self, query: str, k: int) -> list[str]:
        return self._fused(lambda source: source(query, self.depth), k)

    def ask(self, query: Query, k: int) -> list[str]:
        return self._fused(lambda source: ask(source, query, self.depth), k)


def build(params: Mapping[str, Any], ctx: Context) -> HybridRetriever:
    return HybridRetriever(
        [ctx.retriever(name) for name in params["sources"]], params["depth"], params["rrf_k"], params.get("weights")
    )


def fingerprint(params: Mapping[str, Any], setup: Setup) -> dict[str, Any]:
    return {}


def details(params: Mapping[str, Any]) -> dict[str, str]:
    return {}
