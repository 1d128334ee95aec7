"""Segments: the questions grouped by a key of their `metadata` (`segments = ["lang"]` in the config), each
value (`lang:de`) judged as items of its own (the Verdicts page, "Segments").

A question belongs to a value where today's eval set or the base's exam (which keeps each question's segment
values, `record/exam.py`) puts it there: a retag moves no question out of a segment the base judged it in.
Pure: questions in, membership out."""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import FixtureError
from ..files.paths import display
from .records import Question

NAME = re.compile(r"[\w.+/\[\]-]+")
"""What a segment key or value may hold: what -k can name in a node id (`rag::NAME::segment::lang:de::recall@5`),
less ':' (which separates the parts: `-k "lang:de"` selects a value's items)."""


@dataclass(frozen=True, order=True)
class Segment:
    """One value of one segment key: the questions whose `metadata.KEY` is `value`."""

    key: str
    value: str

    @property
    def name(self) -> str:
        return f"{self.key}:{self.value}"

    @classmethod
    def parse(cls, name: str) -> Segment:
        key, _, value = name.partition(":")
        return cls(key, value)


def name_problem(text: object) -> str | None:
    """Why `text` cannot be a segment key or value, else None."""
    if not isinstance(text, str) or NAME.fullmatch(text) is None:
        return "must be a non-empty string of letters, digits and _ . + / [ ] - (it becomes part of a node id)"
    return None


def segments_of(question: Question, keys: Iterable[str]) -> dict[str, str]:
    """The question's value of each of `keys` its metadata names (checked by `check_values`)."""
    return {key: question.metadata[key] for key in keys if isinstance(question.metadata.get(key), str)}


def check_values(questions: Sequence[Question], keys: Sequence[str], evalset: Path) -> list[str]:
    """Every value a question's metadata gives a segment key is a name (`NAME`); one line otherwise. Returns a
    warning per key no question names (a misspelt key would judge nothing, silently)."""
    for question in questions:
        for key in keys:
            if key in question.metadata and name_problem(question.metadata[key]) is not None:
                raise FixtureError(
                    f"{display(evalset)}: question {question.id!r}: metadata.{key} = {question.metadata[key]!r} "
                    f"is a segment (the config's `segments` lists {key!r}) and {name_problem(question.metadata[key])}"
                    "; rename it, or leave the key out for a question in no segment")
    return [f"warning: segments lists {key!r}, which no question of {display(evalset)} names in its metadata: "
            "it adds no items; check its spelling" for key in keys
            if not any(key in question.metadata for question in questions)]


def members(keys: Sequence[str], *exams: Iterable[Question]) -> dict[Segment, frozenset[str]]:
    """Each segment value's questions, by id, in key then value order: a question is in every value some
    exam (today's, the base's) gives it."""
    found: dict[Segment, set[str]] = {}
    for exam in exams:
        for question in exam:
            for key, value in segments_of(question, keys).items():
                found.setdefault(Segment(key, value), set()).add(question.id)
    order = {key: index for index, key in enumerate(keys)}
    return {segment: frozenset(found[segment])
            for segment in sorted(found, key=lambda s: (order[s.key], s.value))}


Change = tuple[str, str, str, str]
"""A setting changed: (setting, subject, old, new)."""


def setting_changes(old: Sequence[str], new: Sequence[str], old_min: int, new_min: int
                    ) -> tuple[list[Change], list[Change]]:
    """(loosened, tightened) between two configs' `segments` and `min_questions`: a key removed is loosened (its
    values' items are gone), one added tightened; `min_questions` raised while segments are judged is loosened
    (more values are shown, not judged), lowered tightened."""
    loosened: list[Change] = [("segments", key, "judged", "removed") for key in old if key not in new]
    tightened: list[Change] = [("segments", key, "none", "judged") for key in new if key not in old]
    if (old or new) and old_min != new_min:
        (loosened if new_min > old_min else tightened).append(("min_questions", "", str(old_min), str(new_min)))
    return loosened, tightened
