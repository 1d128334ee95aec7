"""The labelling KB's retrievers (tests/unit/data/labelling, its make.py says how the ranks were chosen):
word overlap, ties by chunk id, one factory configured three ways by the table's `options`.

A chunk's score counts the query's content words it holds: `exact` weighs the words held as written,
`stem` the words held up to a plural `s` ("relays" answers "relay"). `norm = "length"` subtracts 0.01
a content word of the chunk (bm25's preference for short chunks, as a tie-break), `norm = "cosine"`
divides by the root of their count (a dense retriever's). `weights` gives a word a weight other than 1
(a team's term weights; below 0 the word counts against a chunk): each question asks about words of
its own, so this is what the tests turn to move one question's gold. Chunks scoring 0 or less are not
returned.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

STOP = frozenset(
    "a about affect and as can check described do does examples explains first for here how i in notes on page "
    "say set the together using what when where with work".split()
)
"""The glue of the generated questions and chunks: only the topic words are content."""

KEYS = frozenset({"exact", "stem", "norm", "weights"})


def words(text: str) -> frozenset[str]:
    return frozenset(word for word in re.findall(r"[a-z0-9]+", text.lower()) if word not in STOP)


def stem(word: str) -> str:
    return word[:-1] if word.endswith("s") else word


def checked(options: Mapping[str, object]) -> tuple[float, float, str, dict[str, float]]:
    """(exact, stem, norm, weights) from a retriever table's options; a bad one is a one-line error."""
    unknown = sorted(set(options) - KEYS)
    if unknown:
        raise ValueError(f"labelling_retriever: unknown option {unknown[0]!r}; known: {', '.join(sorted(KEYS))}")
    exact, stems, norm, weights = options.get("exact", 1.0), options.get("stem", 0.0), options.get("norm", "none"), \
        options.get("weights", {})
    if not isinstance(exact, (int, float)) or not isinstance(stems, (int, float)) or not exact + stems > 0:
        raise ValueError("labelling_retriever: options 'exact' and 'stem' must be numbers, not both 0")
    if norm not in ("none", "length", "cosine") or not isinstance(weights, Mapping):
        raise ValueError("labelling_retriever: 'norm' is none, length or cosine; 'weights' a table of word = weight")
    return float(exact), float(stems), str(norm), {str(word): float(weight) for word, weight in weights.items()}


def rank(chunks: Sequence[tuple[str, str]], query: str, options: Mapping[str, object], k: int) -> list[str]:
    """The top `k` chunk ids of (id, text) pairs for `query`, best first, ties by chunk id."""
    exact, stems, norm, weights = checked(options)
    asked = words(query)
    asked_stems = {stem(word) for word in asked}
    scored = []
    for cid, text in chunks:
        held = words(text)
        shared = sum(weights.get(word, 1.0) for word in asked & held)
        similar = sum(weights.get(word, 1.0) for word in asked_stems & {stem(word) for word in held})
        score = exact * shared + stems * similar
        if score <= 0:
            continue
        if norm == "length":
            score -= 0.01 * len(held)
        elif norm == "cosine":
            score /= math.sqrt(len(held))
        scored.append((-round(score, 9), cid))
    return [cid for _, cid in sorted(scored)[:k]]


def make(ctx: Any) -> Callable[[str, int], list[str]]:
    chunks = [(chunk.id, chunk.text) for chunk in ctx.chunks]
    options = dict(ctx.options)
    checked(options)

    def retrieve(query: str, k: int) -> list[str]:
        return rank(chunks, query, options, k)

    return retrieve
