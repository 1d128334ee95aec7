"""Readers for the chunks and eval-set JSON Lines files.

Every problem is a FixtureError naming `file:line`, raised before anything runs, so a bad
fixture never produces half a result or touches the baseline.
"""
from __future__ import annotations

import codecs
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from ..core.errors import FixtureError
from ..files.jsontext import control_character, may_nest
from ..files.paths import Unreadable, display, input_lines
from .documents import Document
from .gold_text import by_document, given_spans, snippet_spans, span_labels
from .lines import Unanchored as Unanchored  # read from here by the gate and relabel
from .lines import records as records
from .records import SIDES, Chunk, Question, Side, Span

CHUNK_KEYS = frozenset({"id", "text", "doc", "metadata"})
QUESTION_KEYS = frozenset({"id", "query", "relevant", "not_relevant", "relevant_text", "relevant_spans", "tags",
                           "metadata", "machine_labels", "cluster", "side"})
JUDGE_KEYS = ("model", "prompt_sha256", "date")
"""What `machine_labels` records of each machine-made judgment: who judged, with which prompt, when."""
MAX_GRADE = 100
"""Grades are integers from 0 to this: enough for any judging scale, small enough for every float sum."""
GRADING_VERSION = 1
"""The grading rules' version, part of the baseline's yardstick: bumped whenever what this module
decides about grades changes (MAX_GRADE, a list's ids graded 1, a `relevant_text` snippet grading
every chunk that contains it 1, the higher grade winning where both name a chunk), because values
graded by other rules cannot be compared (pitfall 3). `not_relevant` added no rule: its ids are
graded 0, as `{"id": 0}` in `relevant` always was."""
QUESTION_ID = re.compile(r"[\w.+/\[\]:-]+")
"""What a -k expression can name (pytest's identifier characters, less the backslash)."""


def _check_keys(where: str, record: Mapping[str, Any], allowed: frozenset[str]) -> None:
    if record.keys() <= allowed:
        return
    unknown = sorted(set(record) - allowed)
    if unknown:
        raise FixtureError(
            f"{where}: unknown field {unknown[0]!r}; allowed fields: {', '.join(sorted(allowed))}"
        )


def _string(
    where: str, record: Mapping[str, Any], key: str, *, required: bool = True, empty: bool = False
) -> str | None:
    if key not in record:
        if required:
            raise FixtureError(f"{where}: missing field {key!r}")
        return None
    value = record[key]
    if not isinstance(value, str) or not (empty or value.strip()):
        raise FixtureError(f"{where}: field {key!r} must be a{'' if empty else ' non-empty'} string")
    return value


def _one_line(where: str, what: str, text: str) -> None:
    """Ids and tags are printed in reports and verdicts: a line break in one could forge a line."""
    found = control_character(text)
    if found is not None:
        raise FixtureError(f"{where}: {what} {text!r} holds a control character ({found}); remove it")


def _question_id(where: str, text: str) -> None:
    """A question id becomes part of a node id (`rag::NAME::question::ID`) that -k must be able to select."""
    _one_line(where, "question id", text)
    if QUESTION_ID.fullmatch(text) is None or "::" in text:
        bad = "::" if "::" in text else next(char for char in text if QUESTION_ID.fullmatch(char) is None)
        raise FixtureError(
            f"{where}: question id {text!r} holds {bad!r}, which pytest node ids and -k cannot carry; "
            "use letters, digits and _ . - / + [ ] : (not '::')"
        )


class _ChunkLine(msgspec.Struct, forbid_unknown_fields=True):
    """A chunks line as the fast path decodes it, its types checked in C."""

    id: str
    text: str
    doc: str | msgspec.UnsetType = msgspec.UNSET
    metadata: dict[str, Any] = {}


_CHUNK_LINE = msgspec.json.Decoder(_ChunkLine)


def load_chunks(path: Path) -> tuple[Chunk, ...]:
    """Read the corpus; ids must be unique non-empty one-line strings; texts may be empty.

    Most corpora are plain: every line one chunk object of the right types, no escape sequence
    `\\u`, nesting well within the limit. Those are decoded a line per C call (`_plain_chunks`); any
    other file is read again by the careful reader, which accepts what the fast one could not take
    and names the first problem (`file:line`) as it always did.
    """
    plain = _plain_chunks(path)
    return plain if plain is not None else _careful_chunks(path)


def _plain_chunks(path: Path) -> tuple[Chunk, ...] | None:
    """The corpus when every line is plain (see load_chunks) and every chunk passes the careful reader's
    checks; None when any line is not, or the file cannot be read: the careful reader then decides."""
    chunks: list[Chunk] = []
    seen: set[str] = set()
    try:
        for number, raw in enumerate(input_lines(path), 1):
            if number == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8):]
            if not raw.strip():
                continue
            if b"\\u" in raw or may_nest(raw):
                return None
            line = _CHUNK_LINE.decode(raw)
            doc = None if line.doc is msgspec.UNSET else line.doc
            if (not line.id.strip() or line.id in seen or control_character(line.id) is not None
                    or (doc is not None and not doc.strip())):
                return None
            seen.add(line.id)
            chunks.append(Chunk(id=line.id, text=line.text, doc=doc, metadata=line.metadata))
    except (Unreadable, msgspec.DecodeError):
        return None
    return tuple(chunks) if chunks else None


def _careful_chunks(path: Path) -> tuple[Chunk, ...]:
    chunks: list[Chunk] = []
    seen: dict[str, str] = {}
    for where, record in records(path):
        _check_keys(where, record, CHUNK_KEYS)
        chunk_id = _string(where, record, "id")
        text = _string(where, record, "text", empty=True)
        doc = _string(where, record, "doc", required=False)
        metadata = record.get("metadata", {})
        if not isinstance(metadata, dict):
            raise FixtureError(f"{where}: field 'metadata' must be an object")
        assert chunk_id is not None and text is not None
        _one_line(where, "chunk id", chunk_id)
        if chunk_id in seen:
            raise FixtureError(f"{where}: duplicate chunk id {chunk_id!r} (first at {seen[chunk_id]})")
        seen[chunk_id] = where
        chunks.append(Chunk(id=chunk_id, text=text, doc=doc, metadata=metadata))
    if not chunks:
        raise FixtureError(f"{display(path)}: no chunks")
    return tuple(chunks)


def _relevance(where: str, value: Any, known: Mapping[str, Chunk], source: str | None) -> dict[str, int]:
    grades: dict[str, int] = {}
    if isinstance(value, list):
        for chunk_id in value:
            if not isinstance(chunk_id, str):
                raise FixtureError(f"{where}: 'relevant' entries must be chunk id strings")
            if chunk_id in grades:
                raise FixtureError(f"{where}: chunk id {chunk_id!r} listed twice in 'relevant'")
            grades[chunk_id] = 1
    elif isinstance(value, dict):
        for chunk_id, grade in value.items():
            if isinstance(grade, bool) or not isinstance(grade, int) or not 0 <= grade <= MAX_GRADE:
                shown = json.dumps(grade, ensure_ascii=False)
                raise FixtureError(
                    f"{where}: grade of {chunk_id!r} must be an integer from 0 to {MAX_GRADE}, "
                    f"got {shown if len(shown) <= 40 else shown[:37] + '...'}"
                )
            grades[chunk_id] = grade
    else:
        raise FixtureError(
            f"{where}: 'relevant' must be a list of chunk ids or an object {{chunk_id: grade}}"
        )
    for chunk_id in grades:
        if chunk_id not in known:
            lacks = f" ({source} has no row with that id)" if source else ""
            raise Unanchored(f"{where}: unknown chunk id {chunk_id!r} in 'relevant'{lacks}")
    return grades


def _snippet_relevance(where: str, value: Any, chunks: Sequence[Chunk]) -> dict[str, int]:
    if not isinstance(value, list) or not all(isinstance(s, str) and s.strip() for s in value):
        raise FixtureError(f"{where}: 'relevant_text' must be a list of strings, none empty or blank "
                           "(whitespace only)")
    grades: dict[str, int] = {}
    for snippet in value:
        matches = [chunk.id for chunk in chunks if snippet in chunk.text]
        if not matches:
            raise Unanchored(f"{where}: snippet {snippet!r} in 'relevant_text' matches no chunk")
        for chunk_id in matches:
            grades[chunk_id] = 1
    return grades


def _not_relevant(where: str, value: Any, grades: Mapping[str, int], known: Mapping[str, Chunk]) -> list[str]:
    """`not_relevant`: sugar for grade 0, so a chunk judged not relevant counts as judged (judged@k)."""
    if not isinstance(value, list) or not all(isinstance(chunk_id, str) for chunk_id in value):
        raise FixtureError(f"{where}: 'not_relevant' must be a list of chunk id strings")
    for number, chunk_id in enumerate(value):
        if chunk_id in value[:number]:
            raise FixtureError(f"{where}: chunk id {chunk_id!r} listed twice in 'not_relevant'")
        if chunk_id not in known:
            raise Unanchored(f"{where}: unknown chunk id {chunk_id!r} in 'not_relevant'")
        if chunk_id in grades:
            raise FixtureError(
                f"{where}: chunk id {chunk_id!r} is both in 'relevant' and in 'not_relevant'; keep one"
            )
    return list(value)


def _machine_labels(where: str, value: Any, grades: Mapping[str, int]) -> frozenset[str]:
    """`machine_labels`: {chunk id: {model, prompt_sha256, date}} for judgments an LLM judge made."""
    if not isinstance(value, dict):
        raise FixtureError(f"{where}: 'machine_labels' must be an object {{chunk_id: {{model, prompt_sha256, date}}}}")
    for chunk_id, provenance in value.items():
        if chunk_id not in grades:
            raise FixtureError(f"{where}: 'machine_labels' names {chunk_id!r}, which this line does not judge; "
                               "remove it or judge the chunk")
        if (not isinstance(provenance, dict) or sorted(provenance) != sorted(JUDGE_KEYS)
                or not all(isinstance(provenance[key], str) and provenance[key] for key in JUDGE_KEYS)):
            raise FixtureError(f"{where}: 'machine_labels.{chunk_id}' must be an object of non-empty strings "
                               f"{', '.join(JUDGE_KEYS)}")
    return frozenset(value)


def _tags(where: str, value: Any) -> tuple[str, ...]:
    """`tags`: distinct one-line names, since each becomes a report row and a pytest item id."""
    if not isinstance(value, list) or not all(isinstance(t, str) and t.strip() for t in value):
        raise FixtureError(f"{where}: 'tags' must be a list of non-empty strings")
    if len(set(value)) != len(value):
        raise FixtureError(f"{where}: a tag is listed twice in 'tags'")
    for tag in value:
        _one_line(where, "tag", tag)
    return tuple(value)


def _cluster(where: str, record: Mapping[str, Any]) -> str | None:
    """`cluster` (a one-line name), optional: plain data the exam keeps."""
    cluster = record.get("cluster")
    if cluster is not None and not (isinstance(cluster, str) and cluster.strip()):
        raise FixtureError(f"{where}: 'cluster' must be a non-empty string (the name of the question's cluster)")
    if cluster is not None:
        _one_line(where, "cluster", cluster)
    return cluster


def _text_gold(
    where: str, record: Mapping[str, Any], chunks: Sequence[Chunk], documents: Mapping[str, Document] | None,
    unedited: bool = False, places: Mapping[str, Sequence[Chunk]] | None = None,
) -> tuple[dict[str, int], dict[str, int], tuple[Span, ...]]:
    """The chunks the `relevant_text` snippets make relevant, those `relevant_spans` make relevant (with
    their grades), and every gold span: in documents mode, placed in the documents and labelled by the
    rule of evalset/gold_text.py; with a chunks file, snippets are matched in the chunks, as always."""
    if documents is None:
        if "relevant_spans" in record:
            raise FixtureError(f"{where}: 'relevant_spans' needs documents; set documents = \"PATH\" in the config "
                               "instead of chunks, or give 'relevant' chunk ids")
        return (_snippet_relevance(where, record["relevant_text"], chunks) if "relevant_text" in record else {}), {}, ()
    snippets: list[Span] = []
    if "relevant_text" in record:
        value = record["relevant_text"]
        if not isinstance(value, list) or not all(isinstance(s, str) and s.strip() for s in value):
            raise FixtureError(f"{where}: 'relevant_text' must be a list of strings, none empty or blank "
                               "(whitespace only)")
        snippets = snippet_spans(where, value, list(documents.values()))
    given = (given_spans(where, record["relevant_spans"], documents, MAX_GRADE, unedited)
             if "relevant_spans" in record else [])
    placed = by_document(chunks) if places is None else places
    return span_labels(snippets, placed), span_labels(given, placed), (*given, *snippets)


def _side(where: str, record: Mapping[str, Any]) -> Side | None:
    """`side`: "tune" or "gate" (evalset/split.py); left out, the config's `[split]` draws it."""
    value = record.get("side")
    if value is None:
        return None
    for side in SIDES:
        if value == side:
            return side
    raise FixtureError(f"{where}: field 'side' must be \"tune\" or \"gate\" (or left out), got {value!r}")


def load_evalset(
    path: Path, chunks: Sequence[Chunk], source: str | None = None, documents: Sequence[Document] | None = None,
    unedited: bool = False,
) -> tuple[Question, ...]:
    """Read the eval set against the loaded corpus, resolving `relevant_text` snippets; `source`
    names where the chunks came from when it is not a chunks file (the team's table); with `documents`
    (documents mode), snippets and `relevant_spans` are placed in the documents and labelled by the rule
    of evalset/gold_text.py, and where they are `unedited` a span must hold its text at its offsets."""
    known = {chunk.id: chunk for chunk in chunks}
    by_id = None if documents is None else {document.id: document for document in documents}
    places = None if documents is None else by_document(chunks)  # once: labelling each question reads it
    questions: list[Question] = []
    seen: dict[str, str] = {}
    for where, record in records(path):
        _check_keys(where, record, QUESTION_KEYS)
        question_id = _string(where, record, "id")
        query = _string(where, record, "query")
        assert question_id is not None and query is not None
        _question_id(where, question_id)
        if question_id in seen:
            raise FixtureError(f"{where}: duplicate question id {question_id!r} (first at {seen[question_id]})")
        seen[question_id] = where
        if not record.keys() & {"relevant", "relevant_text", "relevant_spans"}:
            raise FixtureError(f"{where}: missing field 'relevant' (use [] for a no-answer question)")
        grades = _relevance(where, record.get("relevant", []), known, source)
        rejected = _not_relevant(where, record.get("not_relevant", []), grades, known)
        matched, placed, spans = _text_gold(where, record, chunks, by_id, unedited, places)
        for chunk_id, grade in (*placed.items(), *matched.items()):
            grades[chunk_id] = max(grade, grades.get(chunk_id, 0))
        if not isinstance(record.get("metadata", {}), dict):
            raise FixtureError(f"{where}: field 'metadata' must be an object (or left out)")
        for chunk_id in rejected:
            if chunk_id in matched or chunk_id in placed:
                source = "a 'relevant_text' snippet matches it" if chunk_id in matched else \
                    "a 'relevant_spans' span makes it relevant"
                raise FixtureError(f"{where}: chunk id {chunk_id!r} is in 'not_relevant' but {source}; keep one")
            grades[chunk_id] = 0
        machine = _machine_labels(where, record["machine_labels"], grades) if "machine_labels" in record \
            else frozenset()
        tags = _tags(where, record.get("tags", []))
        cluster = _cluster(where, record)
        questions.append(
            Question(id=question_id, query=query, relevance=grades, tags=tags, snippet_ids=frozenset(matched),
                     machine_labels=machine, spans=spans, cluster=cluster, side=_side(where, record),
                     metadata=record.get("metadata", {}))
        )
    if not questions:
        raise FixtureError(f"{display(path)}: no questions")
    if not any(question.answerable for question in questions):
        raise FixtureError(f"{display(path)}: every question is a no-answer question; nothing can be scored")
    return tuple(questions)
