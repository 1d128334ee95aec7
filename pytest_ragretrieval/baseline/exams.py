"""The bar as approved rankings, and the two exams they are scored under (the Verdicts page, "The bar").

A baseline keeps, per retriever, the rankings the team last approved (`Recorded.approved_rankings`) and,
in its fingerprint, the labels it was recorded under: the base's exam. A run scores the approved
rankings and today's under today's eval set and, where the labels changed, under the base's too, so a
label change can neither read as a regression (both sides sit the same exam) nor hide one (the base's
exam still sees it). Pure: labels and rankings in, questions and digests out.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..core.digest import digest as _digest
from ..evalset.records import Question, Span
from ..record.exam import digest_problem, exam_value, keeps_labels


class Approving(Protocol):
    """A baseline entry (`format.Recorded`), as far as an approval's digest reads it."""

    def approved_rankings(self) -> Mapping[str, Sequence[str]]: ...

TODAY = "today"
BASE = "base"
EXAM_NAMES = {TODAY: "today's exam", BASE: "the base's exam (the labels the baseline was recorded under)"}


LOCAL = ("the base's exam is the labels the work tree's baseline keeps (in a pull request's CI the gate reads "
         "them from the base revision)")


@dataclass(frozen=True)
class KeptExam:
    """Where a run reads the base's exam when not from its own baseline: the base revision's baseline
    fingerprint (None: the base revision keeps no labels, or no baseline) and the header's line saying so."""

    fingerprint: Mapping[str, Any] | None = field(hash=False)
    line: str
    revision: str = ""
    """The base revision it was read from (`origin/main`)."""


KEEPS_LABELS = 4
"""The first format whose baseline keeps the exam it was recorded under."""


def kept_exam_problem(fingerprint: Mapping[str, Any], version: int) -> str | None:
    """Why a file's kept exam cannot be trusted, else None: a format-4 (or later) file without its labels,
    or a question whose kept labels and spans do not give the gold digest the same run recorded
    (`record/exam.py`, `digest_problem`)."""
    section, chunks = fingerprint.get("questions", {}), fingerprint.get("chunks", {})
    documents = isinstance(chunks, Mapping) and "documents" in chunks
    return digest_problem(section, version, KEEPS_LABELS, documents) if isinstance(section, Mapping) else None


def same_labels(one: Question, other: Question) -> bool:
    """Both questions grade the same chunks alike (grade 0 included) and hold the same gold spans."""
    return dict(one.relevance) == dict(other.relevance) and sorted(one.spans, key=_span_key) == sorted(
        other.spans, key=_span_key)


def _span_key(span: Span) -> tuple[str, int, int, int]:
    return (span.doc, span.start, span.end, span.grade)


def approved_digest(entries: Mapping[str, Approving]) -> str:
    """What an approval approved, as one digest: every retriever's approved rankings, question by question."""
    return _digest({name: {qid: list(ranking) for qid, ranking in sorted(entry.approved_rankings().items())}
                    for name, entry in sorted(entries.items())})


def labels_digest(fingerprint: Mapping[str, Any]) -> str:
    """The exam an approval was given under, as one digest: the file's labels and gold spans (its questions'
    digest for a file that keeps no labels)."""
    section = fingerprint.get("questions", {})
    if not isinstance(section, Mapping):
        return _digest(None)
    if not keeps_labels(section):
        return _digest(section.get("sha256"))
    return _digest(exam_value(section))
