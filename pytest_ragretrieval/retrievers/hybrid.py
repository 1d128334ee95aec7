"""Reciprocal Rank Fusion of named sources, the tutorial's hybrid: sum of 1 / (rrf_k + rank)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from ..config.toml import Table
from .protocol import Context, Retriever, Setup


def parse(table: Table) -> dict[str, Any]:
    sources_ = table.texts("sources", ["vector", "bm25"])
    if len(sources_) < 2:
        raise table.error("sources", "must name at least two retrievers to fuse")
    return {
        "sources": sources_,
        "depth": table.integer("depth", 10, minimum=1),
        "rrf_k": table.integer("rrf_k", 60, minimum=0),
    }


def sources(params: Mapping[str, Any]) -> list[str]:
    return list(params["sources"])


def source_depth(params: Mapping[str, Any]) -> int:
    """Each source is read to `depth`: its rankings are computed that deep once, for everyone."""
    return int(params["depth"])


def fuse(rankings: Sequence[Sequence[str]], rrf_k: int) -> list[str]:
    """RRF with exact arithmetic, so that equal sums tie exactly and ties go to the smaller id."""
    scores: dict[str, Fraction] = {}
    for ranking in rankings:
        for rank, chunk_id in enumerate(ranking, start=1):
            scores[chunk_id] = scores.get(chunk_id, Fraction(0)) + Fraction(1, rrf_k + rank)
    return sorted(scores, key=lambda chunk_id: (-scores[chunk_id], chunk_id))


class HybridRetriever:
    def __init__(self, inputs: Sequence[Retriever], depth: int, rrf_k: int) -> None:
        self.inputs = list(inputs)
        self.depth = depth
        self.rrf_k = rrf_k

    def __call__(self, query: str, k: int) -> list[str]:
        return fuse([list(source(query, self.depth)) for source in self.inputs], self.rrf_k)[:k]


def build(params: Mapping[str, Any], ctx: Context) -> HybridRetriever:
    return HybridRetriever([ctx.retriever(name) for name in params["sources"]], params["depth"], params["rrf_k"])


def fingerprint(params: Mapping[str, Any], setup: Setup) -> dict[str, Any]:
    return {}


def details(params: Mapping[str, Any]) -> dict[str, str]:
    return {}
