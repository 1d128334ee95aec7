"""BM25 with rank-bm25's BM25Okapi scores, exactly, from a sparse index over cached corpus tokens."""
from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..evalset.records import Chunk
from ..toml import Table
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
        cached: Callable[[Sequence[str]], tuple[list[str], list[Any]]] | None = None,
    ) -> None:
        """`tokens`: (vocabulary, token ids per chunk in id order), as the cache gives them; else tokenized here.
        `cached`: the tokens of many queries at once, through the cache (`ctx.tokens`)."""
        from .bm25_index import BM25Index

        ordered = sorted(chunks, key=lambda chunk: chunk.id)
        self.ids = [chunk.id for chunk in ordered]
        self.tokenize = tokenize
        self.cached = cached
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
        return self._top(self.tokenize(query), k)

    def _top(self, tokens: Sequence[str], k: int) -> list[str]:
        if not tokens:
            return []
        return [self.ids[position] for position, _ in self.index.top(tokens, k, self.min_score)]

    def search_many(
        self, queries: Sequence[str], k: int, tick: Callable[[int], None]
    ) -> list[tuple[Sequence[str], float]]:
        """Every query's ranking and latency; the queries' tokens come from the cache in one call,
        so a warm run never loads the tokenizer."""
        if self.cached is None:
            return [(self(query, k), 0.0) for query in queries]
        started = time.perf_counter()
        vocabulary, rows = self.cached(queries)
        share = (time.perf_counter() - started) * 1000.0 / max(1, len(queries))
        found: list[tuple[Sequence[str], float]] = []
        for row in rows:
            began = time.perf_counter()
            ranking = self._top([vocabulary[i] for i in row.tolist()], k)
            found.append((ranking, (time.perf_counter() - began) * 1000.0 + share))
            tick(1)
        return found


def build(params: Mapping[str, Any], ctx: Context) -> BM25Retriever:
    """Corpus tokens come through the cache: read, or tokenized on `workers` processes. The
    tokenizer itself is loaded only if a query misses the cache."""
    return BM25Retriever(
        ctx.chunks, lambda text: ctx.tokenize(text), **params, tokens=ctx.corpus_tokens(), cached=ctx.tokens
    )


def sources(params: Mapping[str, Any]) -> list[str]:
    return []


def fingerprint(params: Mapping[str, Any], setup: Setup) -> dict[str, Any]:
    return {}


def details(params: Mapping[str, Any]) -> dict[str, str]:
    return {}
