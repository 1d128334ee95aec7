"""The exam as a baseline keeps it: `fingerprint.questions.labels` (question id -> chunk id -> grade, grade 0
included) and `.spans` (question id -> its gold spans [doc, start, end, grade]), the labels the file was
recorded under (the base's exam). The one module that knows those keys: written here (`exam_section`), read
here (`kept_questions`: the exam a file keeps, as questions, which `bar/exam.py` makes a value of), their
shape checked here and described here for the JSON Schema, so nothing else reads labels out of a fingerprint
(`tests/unit/test_layout.py`)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core.digest import SHORT, digest
from ..evalset.records import SIDES as SIDE_NAMES
from ..evalset.records import Question, Side, Span
from ..evalset.segments import NAME, name_problem, segments_of
from .checks import json_type, shown

LABELS, SPANS = "labels", "spans"
CLUSTERS, SIDES = "clusters", "sides"
"""Format 5: each question's cluster and its side (`tune` or `gate`), where the eval set names them."""
SEGMENTS = "segments"
"""Format 5: each question's values of the config's `segments` keys (evalset/segments.py), where it has any:
the base's membership, which a retag cannot take a question out of."""


def spans_of(question: Question) -> list[list[Any]]:
    """A question's gold spans (documents mode), sorted, as the file keeps them."""
    return sorted([span.doc, span.start, span.end, span.grade] for span in question.spans)


def exam_section(questions: Sequence[Question], segments: Sequence[str] = ()) -> dict[str, Any]:
    """The exam's part of `fingerprint.questions`: every labelled question's graded chunks, the gold spans
    of those that have any (documents mode), and their values of the `segments` keys."""
    found: dict[str, Any] = {LABELS: {question.id: dict(sorted(question.relevance.items()))
                                      for question in questions if question.relevance}}
    spans = {question.id: spans_of(question) for question in questions if question.spans}
    if spans:
        found[SPANS] = spans
    clusters = {question.id: question.cluster for question in questions if question.cluster is not None}
    sides = {question.id: question.side for question in questions if question.side is not None}
    found.update({CLUSTERS: clusters} if clusters else {})
    found.update({SIDES: sides} if sides else {})
    values = {question.id: found_values for question in questions if (found_values := segments_of(question, segments))}
    found.update({SEGMENTS: values} if values else {})
    return found


def keeps_labels(section: Mapping[str, Any]) -> bool:
    """Whether a `fingerprint.questions` section keeps an exam (format 4 on)."""
    return isinstance(section.get(LABELS), Mapping)


def kept_questions(section: Mapping[str, Any]) -> dict[str, Question] | None:
    """The exam a `fingerprint.questions` section keeps: each question it was recorded under, with its graded
    chunks (grade 0 included), gold spans, cluster and side; None for a file that keeps no labels (format 3 and
    older). Queries are not kept, only their digests: an exam needs the judgments, not the words."""
    if not keeps_labels(section):
        return None
    labels, spans = kept_labels(section), kept_spans(section)
    clusters, sides, segments = kept_clusters(section), kept_sides(section), kept_segments(section)
    ids = sorted(set(section.get("digests", {})) | set(labels))
    return {qid: Question(qid, "", {chunk_id: int(grade) for chunk_id, grade in labels.get(qid, {}).items()},
                          spans=tuple(Span(doc, int(start), int(end), int(grade))
                                      for doc, start, end, grade in spans.get(qid, ())),
                          cluster=clusters.get(qid), side=sides.get(qid), metadata=dict(segments.get(qid, {})))
            for qid in ids}


def gate_ids(fingerprint: Mapping[str, Any]) -> frozenset[str]:
    """The questions the base's exam judged: every question the file records, but one its kept sides put on
    `tune` (a file records its gate questions only; format 4 and older keep no sides: every one was the gate's)."""
    section = fingerprint.get("questions", {})
    if not isinstance(section, Mapping):
        return frozenset()
    digests = section.get("digests", {})
    recorded = {*(digests if isinstance(digests, Mapping) else ()), *kept_labels(section)}
    tune = {qid for qid, side in kept_sides(section).items() if side == "tune"}
    return frozenset(recorded - tune)


def kept_labels(section: Mapping[str, Any]) -> Mapping[str, Mapping[str, int]]:
    found = section.get(LABELS, {})
    return found if isinstance(found, Mapping) else {}


def kept_spans(section: Mapping[str, Any]) -> Mapping[str, Sequence[Sequence[Any]]]:
    found = section.get(SPANS, {})
    return found if isinstance(found, Mapping) else {}


def kept_clusters(section: Mapping[str, Any]) -> Mapping[str, str]:
    found = section.get(CLUSTERS, {})
    return found if isinstance(found, Mapping) else {}


def kept_sides(section: Mapping[str, Any]) -> Mapping[str, Side]:
    found = section.get(SIDES, {})
    return {qid: side for qid, value in found.items() for side in SIDE_NAMES if value == side} \
        if isinstance(found, Mapping) else {}


def kept_segments(section: Mapping[str, Any]) -> Mapping[str, Mapping[str, str]]:
    found = section.get(SEGMENTS, {})
    return found if isinstance(found, Mapping) else {}


def exam_value(section: Mapping[str, Any]) -> list[Any]:
    """The exam as one JSON value, for the digest an approval binds (clusters and sides where kept, so a file
    without them binds what it always did)."""
    kept = [section.get(CLUSTERS, {}), section.get(SIDES, {})]
    return [section.get(LABELS), section.get(SPANS, {}), *(kept if any(kept) else [])]


def gold_digest(relevance: Mapping[str, int], spans: Sequence[Sequence[Any]]) -> str:
    """A question's graded gold as its short digest: the positive grades (every judgment where none is
    positive) and, in documents mode, its sorted gold spans. The kept labels must reproduce it."""
    positive = {chunk_id: grade for chunk_id, grade in relevance.items() if grade > 0}
    graded = dict(sorted((positive or relevance).items()))
    return digest([graded, sorted(list(span) for span in spans)] if spans else graded, SHORT)


def shape_problem(section: Mapping[str, object]) -> str | None:
    """Why the kept exam's shape is wrong, else None. Damaged, it would judge today's rankings under labels
    nobody wrote."""
    labels, spans = section.get(LABELS, {}), section.get(SPANS, {})
    if not isinstance(labels, dict):
        return f"fingerprint.questions.labels must map question ids to objects, got {json_type(labels)}"
    for qid, graded in labels.items():
        if not isinstance(graded, dict):
            return f"fingerprint.questions.labels.{qid} must map chunk ids to grades"
        for chunk_id, grade in graded.items():
            if isinstance(grade, bool) or not isinstance(grade, (int, float)) or not (
                    float(grade).is_integer() and 0 <= grade < 2**31):
                return (f"fingerprint.questions.labels.{qid}.{chunk_id} = {shown(grade)} is not a grade "
                        "(an integer >= 0)")
    if not isinstance(spans, dict):
        return f"fingerprint.questions.spans must map question ids to lists, got {json_type(spans)}"
    for qid, listed in spans.items():
        good = isinstance(listed, list) and all(
            isinstance(span, list) and len(span) == 4 and isinstance(span[0], str)
            and all(_whole(n) for n in span[1:]) for span in listed)
        if not good:
            return (f"fingerprint.questions.spans.{qid} must list [doc, start, end, grade] spans "
                    "(start < end, integers >= 0)")
        backwards = next((index for index, span in enumerate(listed) if span[1] >= span[2]), None)
        if backwards is not None:  # what no schema can say: two items of one array compared
            return (f"fingerprint.questions.spans.{qid}[{backwards}]: its start {shown(listed[backwards][1])} "
                    f"is not before its end {shown(listed[backwards][2])}")
    return _membership_problem(section)


def _whole(value: object) -> bool:
    """An integer >= 0 as JSON Schema reads one: a whole float too (`5.0`), never a boolean."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and float(value).is_integer() \
        and value >= 0


def _membership_problem(section: Mapping[str, object]) -> str | None:
    """`clusters` map question ids to non-empty names, `sides` to `tune` or `gate` (format 5)."""
    for key, allowed in ((CLUSTERS, None), (SIDES, SIDE_NAMES)):
        found = section.get(key, {})
        if not isinstance(found, dict):
            return f"fingerprint.questions.{key} must map question ids to strings, got {json_type(found)}"
        for qid, value in found.items():
            if not (isinstance(value, str) and value) or (allowed is not None and value not in allowed):
                wanted = "tune or gate" if allowed is not None else "a non-empty string"
                return f"fingerprint.questions.{key}.{qid} = {shown(value)} is not {wanted}"
    return _segments_problem(section.get(SEGMENTS, {}))


def _segments_problem(found: object) -> str | None:
    """`segments` map question ids to objects of segment keys to values, each a name (evalset/segments.py)."""
    if not isinstance(found, dict):
        return f"fingerprint.questions.{SEGMENTS} must map question ids to objects, got {json_type(found)}"
    for qid, values in found.items():
        if not isinstance(values, dict):
            return f"fingerprint.questions.{SEGMENTS}.{qid} must map segment keys to values, got {json_type(values)}"
        for key, value in values.items():
            problem = name_problem(key) or name_problem(value)
            if problem is not None:
                return (f"fingerprint.questions.{SEGMENTS}.{qid}.{key} = {shown(value)}: a segment key and value "
                        f"{problem}")
    return None


def digest_problem(section: Mapping[str, Any], version: int, keeps_from: int, documents: bool = False) -> str | None:
    """Why a file's kept exam cannot be trusted, else None: a file of format `keeps_from` or later without its
    labels, or a question whose kept labels and spans do not give the gold digest the same run recorded
    (labels or spans edited or deleted by hand; a `documents`-mode file without its spans is named as
    such). Either would let a pull request lower the bar it is judged by."""
    digests = section.get("digests")
    if version < keeps_from or not isinstance(digests, Mapping):
        return None
    if not keeps_labels(section):
        return (f"fingerprint.questions.labels is missing: a format-{version} baseline keeps the labels it was "
                "recorded under (the base's exam)")
    labels, spans = kept_labels(section), kept_spans(section)
    for qid, entry in sorted(digests.items()):
        gold = entry.get("gold") if isinstance(entry, Mapping) else None
        graded = {chunk_id: int(grade) for chunk_id, grade in labels.get(qid, {}).items()}
        if gold is not None and gold != gold_digest(graded, spans.get(qid, ())):
            if documents and SPANS not in section:
                return (f"fingerprint.questions.spans is missing: a format-{version} baseline in documents mode keeps "
                        f"the gold spans it was recorded under (fingerprint.questions.digests.{qid}.gold needs them)")
            return (f"fingerprint.questions.labels.{qid} (with its spans) does not give "
                    f"fingerprint.questions.digests.{qid}.gold: the kept exam was edited by hand")
    return None


def exam_schema() -> dict[str, Any]:
    """The JSON Schema of the exam's part of `fingerprint.questions`."""
    return {
        LABELS: {"type": "object", "description": "question id -> chunk id -> grade: the base's exam",
                 "additionalProperties": {"type": "object", "additionalProperties": {
                     "type": "integer", "minimum": 0, "maximum": 2**31 - 1}}},
        SPANS: {"type": "object", "description": "question id -> its gold spans [doc, start, end, grade]",
                "additionalProperties": {"type": "array", "items": {
                    "type": "array", "prefixItems": [{"type": "string"}, *[
                        {"type": "integer", "minimum": 0}] * 3], "minItems": 4, "maxItems": 4}}},
        CLUSTERS: {"type": "object", "description": "question id -> its cluster (format 5)",
                   "additionalProperties": {"type": "string", "minLength": 1}},
        SIDES: {"type": "object", "description": "question id -> tune or gate (format 5)",
                "additionalProperties": {"enum": list(SIDE_NAMES)}},
        SEGMENTS: {"type": "object", "description": "question id -> segment key -> its value (format 5)",
                   "additionalProperties": {"type": "object", "additionalProperties": {
                       "type": "string", "pattern": f"^{NAME.pattern}$"}}},
    }
