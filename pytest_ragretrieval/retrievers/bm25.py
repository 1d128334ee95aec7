"""BM25 (rank-bm25's BM25Okapi) over the configured tokenizer."""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..config.toml import Table
from ..evalset.records import Chunk
from .protocol import Context, Setup


def parse(table: Table) -> dict[str, Any]:
    return {
        "k1": table.number("k1", 1.5, minimum=0),
        "b": table.number("b", 0.75, minimum=0, maximum=1),
        "epsilon": table.number("epsilon", 0.25, minimum=0),
        "min_score": table.number("min_score", 0.0, minimum=0),
    }


class BM25Retriever:
    """Scores every chunk; ids scoring 0 or below `min_score` are never returned.

    The index is built over chunks sorted by id and ties are broken by id, so neither the
    corpus file's order nor dict order can change a ranking.
    """

    def __init__(
        self, chunks: Sequence[Chunk], tokenize: Callable[[str], list[str]], k1: float, b: float, epsilon: float,
        min_score: float,
    ) -> None:
        from rank_bm25 import BM25Okapi

        ordered = sorted(chunks, key=lambda chunk: chunk.id)
        self.ids = [chunk.id for chunk in ordered]
        self.tokenize = tokenize
        self.min_score = min_score
        corpus = [tokenize(chunk.text) for chunk in ordered]
        self.index = BM25Okapi(corpus, k1=k1, b=b, epsilon=epsilon)

    def scores(self, query: str) -> list[tuple[str, float]]:
        """(chunk id, score) for every chunk scoring above 0 and at least `min_score`, best first."""
        tokens = self.tokenize(query)
        if not tokens:
            return []
        raw = self.index.get_scores(tokens)
        scored = [(cid, float(s)) for cid, s in zip(self.ids, raw, strict=True) if s > 0 and s >= self.min_score]
        scored.sort(key=lambda item: (-item[1], item[0]))
        return scored

    def __call__(self, query: str, k: int) -> list[str]:
        return [chunk_id for chunk_id, _ in self.scores(query)[:k]]


def build(params: Mapping[str, Any], ctx: Context) -> BM25Retriever:
    return BM25Retriever(ctx.chunks, ctx.tokenize, **params)


def sources(params: Mapping[str, Any]) -> list[str]:
    return []


def fingerprint(params: Mapping[str, Any], setup: Setup) -> dict[str, Any]:
    return {}


def details(params: Mapping[str, Any]) -> dict[str, str]:
    return {}
