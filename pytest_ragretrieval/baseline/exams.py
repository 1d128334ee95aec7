"""The bar as approved rankings, and the two exams they are scored under (the Verdicts page, "The bar").

A baseline keeps, per retriever, the rankings the team last approved (`Recorded.approved_rankings`) and,
in its fingerprint, the labels it was recorded under: the base's exam. A run scores the approved
rankings and today's under today's eval set and, where the labels changed, under the base's too, so a
label change can neither read as a regression (both sides sit the same exam) nor hide one (the base's
exam still sees it). Pure: labels and rankings in, questions and digests out.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..evalset.records import Question, Span
from .fingerprint import _digest
from .format import Recorded

TODAY = "today"
BASE = "base"
EXAM_NAMES = {TODAY: "today's exam", BASE: "the base's exam (the labels the baseline was recorded under)"}


def recorded_exam(fingerprint: Mapping[str, Any]) -> dict[str, Question] | None:
    """The base's exam: each question the file was recorded under, with its graded chunks (grade 0
    included) and gold spans; None for a file that keeps no labels (format 3 and older). Queries are not
    kept, only their digests: an exam needs the judgments, not the words."""
    section = fingerprint.get("questions", {})
    labels = section.get("labels") if isinstance(section, Mapping) else None
    if not isinstance(labels, Mapping):
        return None
    digests = section.get("digests", {})
    spans = section.get("spans", {})
    ids = sorted(set(digests) | set(labels))
    return {qid: Question(qid, "", {chunk_id: int(grade) for chunk_id, grade in labels.get(qid, {}).items()},
                          spans=tuple(Span(doc, int(start), int(end), int(grade))
                                      for doc, start, end, grade in spans.get(qid, ()))) for qid in ids}


def same_labels(one: Question, other: Question) -> bool:
    """Both questions grade the same chunks alike (grade 0 included) and hold the same gold spans."""
    return dict(one.relevance) == dict(other.relevance) and sorted(one.spans, key=_span_key) == sorted(
        other.spans, key=_span_key)


def _span_key(span: Span) -> tuple[str, int, int, int]:
    return (span.doc, span.start, span.end, span.grade)


def approved_digest(entries: Mapping[str, Recorded]) -> str:
    """What an approval approved, as one digest: every retriever's approved rankings, question by question."""
    return _digest({name: {qid: list(ranking) for qid, ranking in sorted(entry.approved_rankings().items())}
                    for name, entry in sorted(entries.items())})


def labels_digest(fingerprint: Mapping[str, Any]) -> str:
    """The exam an approval was given under, as one digest: the file's labels and gold spans (its questions'
    digest for a file that keeps no labels)."""
    section = fingerprint.get("questions", {})
    if not isinstance(section, Mapping):
        return _digest(None)
    if "labels" not in section:
        return _digest(section.get("sha256"))
    return _digest([section.get("labels"), section.get("spans", {})])
