"""Plain records shared by every layer: chunks and questions as loaded from the fixtures."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Side = Literal["tune", "gate"]
"""Which questions a question serves: `gate` ones are judged and recorded, `tune` ones only tuned on."""
SIDES: tuple[Side, ...] = ("tune", "gate")


@dataclass(frozen=True)
class Chunk:
    """One retrievable unit of the corpus."""

    id: str
    text: str
    doc: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    start: int | None = None
    """Where the chunk starts in its document (code points), when a chunker cut it from `documents`."""
    end: int | None = None
    """Where it ends: the chunk's text is the document's text[start:end]."""


@dataclass(frozen=True)
class Question:
    """One eval-set question with its judged chunks.

    `relevance` maps chunk id to grade; a chunk counts as relevant when its grade is >= 1,
    so a question whose map holds no such grade is a no-answer question.
    """

    id: str
    query: str
    relevance: Mapping[str, int] = field(hash=False)
    tags: tuple[str, ...] = ()
    snippet_ids: frozenset[str] = frozenset()
    """The chunks its `relevant_text` snippets matched: the baseline records them, so a chunk edited
    until a snippet no longer matches it can be named."""
    machine_labels: frozenset[str] = frozenset()
    """The chunks whose judgment an LLM judge made (`machine_labels` on the line, written by
    `ragretrieval pool --apply --accept-machine-labels`): the baseline counts them."""
    spans: tuple[Span, ...] = ()
    """Its gold as text (documents mode): `relevant_spans` and the places of its `relevant_text` snippets."""
    cluster: str | None = None
    """The cluster it belongs to (`cluster` on the line: questions about one document, or written from one
    template, move together). Kept with the exam (format 5); no verdict reads it yet."""
    side: Side | None = None
    """`side` on its line: `tune` or `gate`, whatever the config's `[split]` would draw (evalset/split.py)."""
    metadata: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    """`metadata` on its line: the config's `segments` name its keys (evalset/segments.py); in no digest."""

    @property
    def answerable(self) -> bool:
        return any(grade >= 1 for grade in self.relevance.values())

    @property
    def relevant_ids(self) -> frozenset[str]:
        return frozenset(cid for cid, grade in self.relevance.items() if grade >= 1)


@dataclass(frozen=True)
class Span:
    """A stretch of one document: a chunk's place in it, or a piece of a question's answer.

    Offsets are Python string offsets (code points), `end` exclusive, so the text is
    `doc_text[start:end]`; `grade` is a gold span's grade (a chunk's span leaves it at 1).
    """

    doc: str
    start: int
    end: int
    grade: int = 1
