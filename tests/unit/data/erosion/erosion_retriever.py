"""The erosion KB's retriever: chunks sharing more words with the query first, ties by chunk id."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any


def make(ctx: Any) -> Callable[[str, int], list[str]]:
    words = [(chunk.id, set(chunk.text.split())) for chunk in ctx.chunks]

    def retrieve(query: str, k: int) -> list[str]:
        asked = set(query.split())
        return [cid for _, cid in sorted((-len(asked & held), cid) for cid, held in words if asked & held)][:k]

    return retrieve
