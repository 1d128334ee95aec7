"""Query and passage prompts: what each side of an asymmetric embedder is told.

Retrieval models such as e5 and bge were trained with a prefix on the query (e5 also on the
passage); leaving it out costs recall silently. Prompts change every vector, so they join the
embedder's id (fingerprint and cache folder) when set; the side joins the cache key whenever
the two sides differ, so a text embedded as a query never answers for the same text as a passage.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Side = Literal["query", "passage"]

E5_QUERY = "query: "
E5_PASSAGE = "passage: "
BGE_EN_QUERY = "Represent this sentence for searching relevant passages: "
BGE_ZH_QUERY = "为这个句子生成表示以用于检索相关文章："


@dataclass(frozen=True)
class Prompts:
    """Text put before each side's input, and the `input_type` sent per side to servers that take one."""

    query: str = ""
    passage: str = ""
    query_input_type: str | None = None
    passage_input_type: str | None = None

    def prompt(self, side: Side) -> str:
        return self.query if side == "query" else self.passage

    def input_type(self, side: Side) -> str | None:
        return self.query_input_type if side == "query" else self.passage_input_type

    def apply(self, texts: list[str], side: Side) -> list[str]:
        prompt = self.prompt(side)
        return [prompt + text for text in texts] if prompt else list(texts)

    @property
    def symmetric(self) -> bool:
        """Both sides reach the model identically, so one vector serves both."""
        return self.query == self.passage and self.query_input_type == self.passage_input_type

    def key(self, text: str, side: Side) -> str:
        """The cache key of `text` on `side`: the text itself when the sides agree, so such caches stay valid."""
        return text if self.symmetric else f"{side}\0{text}"

    def full_id(self, base: str) -> str:
        """`base` plus each prompt or input type that is set; unchanged without any."""
        parts = [
            f"{name}={value!r}"
            for name, value in (
                ("query_prompt", self.query),
                ("passage_prompt", self.passage),
                ("query_input_type", self.query_input_type),
                ("passage_input_type", self.passage_input_type),
            )
            if value
        ]
        return " ".join([base, *parts])


E5_PROMPTS = Prompts(E5_QUERY, E5_PASSAGE)

KNOWN: tuple[tuple[re.Pattern[str], Prompts], ...] = (
    (re.compile(r"^(multilingual-)?e5-(small|base|large)(-v2)?$"), E5_PROMPTS),
    (re.compile(r"^bge-(small|base|large)-en(-v1\.5)?$"), Prompts(BGE_EN_QUERY, "")),
    (re.compile(r"^bge-(small|base|large)-zh(-v1\.5)?$"), Prompts(BGE_ZH_QUERY, "")),
)
"""Model name (after the last '/', lower-cased) -> the prompts its model card prescribes. No guess
for bge-m3 (needs none) nor for instruction models (e5-*-instruct, gte-Qwen: they need a task)."""


def known_prompts(model: str) -> Prompts:
    """The model card's prompts for a known family, else none (symmetric models such as MiniLM)."""
    name = model.rstrip("/").rsplit("/", 1)[-1].lower()
    for pattern, prompts in KNOWN:
        if pattern.match(name):
            return prompts
    return Prompts()


def resolve(
    query: str | None,
    passage: str | None,
    query_input_type: str | None = None,
    passage_input_type: str | None = None,
    known: Prompts | None = None,
) -> Prompts:
    """Configured prompts win key by key (`""` switches a known default off); absent keys take `known`."""
    known = known or Prompts()
    return Prompts(
        query=known.query if query is None else query,
        passage=known.passage if passage is None else passage,
        query_input_type=query_input_type,
        passage_input_type=passage_input_type,
    )
