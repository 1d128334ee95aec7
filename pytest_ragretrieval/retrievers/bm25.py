"""BM25 with rank-bm25's BM25Okapi scores, exactly, from a sparse index over cached corpus tokens."""
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
    corpus file's order nor dict order can change a ranking. Scores are rank-bm25's to the bit
    (`bm25_index.py`); the top k is a partial sort, so a query costs milliseconds at 100,000 chunks.
    """

    def __init__(
        self, chunks: Sequence[Chunk], tokenize: Callable[[str], list[str]], k1: float, b: float, epsilon: float,
        min_score: float, tokens: tuple[Sequence[str], Sequence[Any]] | None = None,
    ) -> None:
        """`tokens`: (vocabulary, token ids per chunk in id order), as the cache gives them; else tokenized here."""
        from .bm25_index import BM25Index

        ordered = sorted(chunks, key=lambda chunk: chunk.id)
        self.ids = [chunk.id for chunk in ordered]
        self.tokenize = tokenize
        self.min_score = min_score
        if tokens is None:
            self.index = BM25Index.from_tokens([tokenize(chunk.text) for chunk in ordered], k1, b, epsilon)
        else:
            self.index = BM25Index(tokens[1], tokens[0], k1, b, epsilon)

    def scores(self, query: str) -> list[tuple[str, float]]:
        """(chunk id, score) for every chunk scoring above 0 and at least `min_score`, best first."""
        tokens = self.tokenize(query)
        return [(self.ids[i], score) for i, score in self.index.top(tokens, self.index.size, self.min_score)]

    def __call__(self, query: str, k: int) -> list[str]:
        tokens = self.tokenize(query)
        if not tokens:
            return []
        return [self.ids[position] for position, _ in self.index.top(tokens, k, self.min_score)]


def build(params: Mapping[str, Any], ctx: Context) -> BM25Retriever:
    """Corpus tokens come through the cache: read, or tokenized on `workers` processes."""
    return BM25Retriever(ctx.chunks, ctx.tokenize, **params, tokens=ctx.corpus_tokens())


def sources(params: Mapping[str, Any]) -> list[str]:
    return []


def fingerprint(params: Mapping[str, Any], setup: Setup) -> dict[str, Any]:
    return {}


def details(params: Mapping[str, Any]) -> dict[str, str]:
    return {}
