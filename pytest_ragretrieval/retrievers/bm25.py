"""BM25 with rank-bm25's BM25Okapi scores, exactly, from a sparse index over cached corpus tokens."""
from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core.errors import RetrieverError
from ..evalset.records import Chunk
from ..files.paths import absolute
from ..files.tables import Table
from .protocol import Context, Query, Setup
from .tokens import JIEBA, TOKENIZERS, describe, tokenizer, tokenizer_key
from .user_dict import read_user_dict


def parse(table: Table) -> dict[str, Any]:
    """`tokenizer` and `user_dict` join the parameters only when given, so a table without them
    keeps the fingerprint it had (the global `tokenizer` is recorded on its own)."""
    params: dict[str, Any] = {
        "k1": table.number("k1", 1.5, minimum=0),
        "b": table.number("b", 0.75, minimum=0, maximum=1),
        "epsilon": table.number("epsilon", 0.25, minimum=0),
        "min_score": table.number("min_score", 0.0, minimum=0),
    }
    name = table.text("tokenizer", None, choices=TOKENIZERS)
    if name is not None:
        params["tokenizer"] = name
    path = table.text("user_dict", None)
    if path is not None:
        if name is not None and name not in JIEBA:
            raise table.error("user_dict", f"is a jieba user dictionary, which tokenizer {name!r} does not take; "
                              f"set tokenizer = \"jieba\", \"jieba-search\" or \"jieba-rs\", or remove user_dict")
        try:
            found = read_user_dict(absolute(table.root / path))
        except ValueError as exc:
            raise table.error("user_dict", str(exc)) from None
        params["user_dict"] = path
        params["user_dict_sha256"] = found.sha256
    return params


def inputs(params: Mapping[str, Any], root: Path) -> dict[str, Path]:
    """The user dictionary, which the run reads: no output may replace it."""
    return {"user_dict": absolute(root / params["user_dict"])} if "user_dict" in params else {}


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
        load: Callable[[Sequence[str] | None], Mapping[str, float]] | None = None,
    ) -> None:
        """`tokens`: (vocabulary, token ids per chunk in id order), as the cache gives them; else tokenized here.
        `cached`: the tokens of many queries at once, through the cache (`ctx.tokens`); `load`: the tokenizer
        loaded when those queries' tokens would load it (`ctx.load_tokenizer`)."""
        from .bm25_index import BM25Index

        ordered = sorted(chunks, key=lambda chunk: chunk.id)
        self.ids = [chunk.id for chunk in ordered]
        self.tokenize = tokenize
        self.cached = cached
        self.load = load
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

    def preload(self, queries: Sequence[Query], batched: bool) -> Mapping[str, float]:
        """The tokenizer, loaded before the first question is timed, so its one-time load (jieba's dictionary:
        about 0.4 s) is no question's latency: for `search_many` when the queries' tokens are not all cached
        (a warm run loads nothing), for calls always (a call tokenizes its query itself)."""
        if self.load is None:
            return {}
        return self.load([query.query for query in queries] if batched else None)

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
    name = params.get("tokenizer", ctx.tokenizer)
    if "user_dict" in params and name not in JIEBA:
        raise RetrieverError(
            f"retriever {ctx.name!r}: user_dict is a jieba user dictionary, which the global tokenizer {name!r} "
            "does not take; set tokenizer = \"jieba\", \"jieba-search\" or \"jieba-rs\" in its table"
        )
    key = tokenizer_for(params, ctx.tokenizer, ctx.root)
    own = {param: value for param, value in params.items() if param in ("k1", "b", "epsilon", "min_score")}
    return BM25Retriever(
        ctx.chunks, lambda text: tokenizer(key)(text), **own, tokens=ctx.corpus_tokens(key),
        cached=lambda texts: ctx.tokens(texts, key), load=lambda texts: ctx.load_tokenizer(texts, key),
    )


def corpus_tokenizers(params: Mapping[str, Any], default: str, root: Path) -> list[str]:
    """The tokenizer whose corpus tokens `build` reads: a cold run tokenizes the corpus with it ahead,
    while the corpus is embedded."""
    return [tokenizer_for(params, default, root)]


def tokenizer_for(params: Mapping[str, Any], default: str, root: Path) -> str:
    """The key of the tokenizer a bm25 retriever of `params` uses; `default` is the global tokenizer."""
    path = absolute(root / params["user_dict"]) if "user_dict" in params else None
    return tokenizer_key(params.get("tokenizer", default), path, params.get("user_dict_sha256"))


def sources(params: Mapping[str, Any]) -> list[str]:
    return []


def fingerprint(params: Mapping[str, Any], setup: Setup) -> dict[str, Any]:
    """A tokenizer of its own is recorded with its version, as the global one is."""
    return {"tokenizer": describe(params["tokenizer"])} if "tokenizer" in params else {}


def details(params: Mapping[str, Any]) -> dict[str, str]:
    return {}
