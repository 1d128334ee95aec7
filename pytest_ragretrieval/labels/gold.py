"""The gold chunks' texts as they were when the baseline was recorded: the labels' provenance.

A label says "this chunk answers this question" about a text. The baseline keeps, under
`fingerprint.chunks.gold`, the text of every gold chunk (graded 1 or more in `relevant`, or matched
by a `relevant_text` snippet; `baseline.fingerprint.gold_texts` records them), so that a later run
can tell which labels stand on a text that was edited since (`edited_gold`) and where the text of a
gold id that left the corpus went (`relabel`). Gold chunks are a small share of a corpus, so the
record stays small. Older baselines hold no such record: nothing is reported and nothing can be
re-anchored.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..baseline.format import Baseline
from ..core.values import listed
from ..evalset.records import Question
from ..files.jsontext import unstorable
from ..record.checks import damaged

LISTED = 10
"""Question ids listed per edited gold chunk; the rest are counted."""


def recorded_gold(baseline: Baseline | None) -> dict[str, str] | None:
    """The baseline's gold texts, checked; None when it records none (no baseline, or one older than the record)."""
    if baseline is None:
        return None
    corpus = baseline.fingerprint.get("chunks", {})
    if not isinstance(corpus, Mapping) or "gold" not in corpus:
        return None
    found: Any = corpus["gold"]
    if not isinstance(found, dict):
        raise damaged(baseline.path, "fingerprint.chunks.gold must map chunk ids to texts")
    for chunk_id, text in found.items():
        if not isinstance(text, str):
            raise damaged(baseline.path, f"fingerprint.chunks.gold.{chunk_id} must be a string (the chunk's text)")
        problem = unstorable(text)
        if problem is not None:
            raise damaged(baseline.path, f"fingerprint.chunks.gold.{chunk_id} holds {problem}")
    return dict(found)


def recorded_digests(baseline: Baseline | None) -> dict[str, Any]:
    """The baseline's short digest of each chunk (`fingerprint.chunks.digests`: text, document and metadata),
    which the recorded gold texts are checked against; empty when it holds none."""
    corpus = baseline.fingerprint.get("chunks", {}) if baseline is not None else {}
    found = corpus.get("digests", {}) if isinstance(corpus, Mapping) else {}
    return dict(found) if isinstance(found, dict) else {}


@dataclass(frozen=True)
class EditedGold:
    """A gold chunk whose text changed since the baseline (its id kept), and the questions it is gold of."""

    chunk: str
    questions: tuple[str, ...]

    def __str__(self) -> str:
        return f"{listed(self.questions, limit=LISTED)} (the text of gold chunk {self.chunk} was edited)"


def edited_gold(
    recorded: Mapping[str, str] | None, today: Mapping[str, str], questions: Sequence[Question]
) -> tuple[EditedGold, ...]:
    """Today's gold chunks (`today`: id -> text, as `baseline.fingerprint.gold_texts` gives them) whose
    text differs from the recorded one, by chunk id, each with the questions (in eval-set order) that grade
    it 1 or more today."""
    if not recorded:
        return ()
    found = []
    for chunk_id in sorted(today):
        if chunk_id not in recorded or recorded[chunk_id] == today[chunk_id]:
            continue
        labelled = tuple(q.id for q in questions if chunk_id in q.relevant_ids)
        if labelled:
            found.append(EditedGold(chunk_id, labelled))
    return tuple(found)


def review_line(edited: Sequence[EditedGold]) -> str | None:
    """`labels to review: q12, q17 (the text of gold chunk security-018 was edited)`, or None."""
    if not edited:
        return None
    return "labels to review: " + listed(edited, "; ")


def by_question(edited: Sequence[EditedGold]) -> dict[str, tuple[str, ...]]:
    """Question id -> its gold chunks whose text was edited, in chunk id order."""
    found: dict[str, list[str]] = {}
    for entry in edited:
        for qid in entry.questions:
            found.setdefault(qid, []).append(entry.chunk)
    return {qid: tuple(chunks) for qid, chunks in found.items()}
