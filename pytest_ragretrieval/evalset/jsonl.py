"""Readers for the chunks and eval-set JSON Lines files.

Every problem is a FixtureError naming `file:line`, raised before anything runs, so a bad
fixture never produces half a result or touches the baseline.
"""
from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import FixtureError
from ..paths import display
from .records import Chunk, Question

CHUNK_KEYS = frozenset({"id", "text", "doc", "metadata"})
QUESTION_KEYS = frozenset({"id", "query", "relevant", "relevant_text", "tags", "metadata"})


def _records(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield (`file:line`, object) for each non-blank line."""
    name = display(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FixtureError(f"{name}: file not found") from None
    except UnicodeDecodeError as exc:
        raise FixtureError(f"{name}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{name}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise FixtureError(f"{where}: invalid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(record, dict):
            raise FixtureError(f"{where}: expected a JSON object, got {type(record).__name__}")
        yield where, record


def _check_keys(where: str, record: Mapping[str, Any], allowed: frozenset[str]) -> None:
    unknown = sorted(set(record) - allowed)
    if unknown:
        raise FixtureError(
            f"{where}: unknown field {unknown[0]!r}; allowed fields: {', '.join(sorted(allowed))}"
        )


def _string(where: str, record: Mapping[str, Any], key: str, *, required: bool = True) -> str | None:
    if key not in record:
        if required:
            raise FixtureError(f"{where}: missing field {key!r}")
        return None
    value = record[key]
    if not isinstance(value, str) or not value.strip():
        raise FixtureError(f"{where}: field {key!r} must be a non-empty string")
    return value


def load_chunks(path: Path) -> tuple[Chunk, ...]:
    """Read the corpus; ids must be unique non-empty strings and texts non-empty."""
    chunks: list[Chunk] = []
    seen: dict[str, str] = {}
    for where, record in _records(path):
        _check_keys(where, record, CHUNK_KEYS)
        chunk_id = _string(where, record, "id")
        text = _string(where, record, "text")
        doc = _string(where, record, "doc", required=False)
        metadata = record.get("metadata", {})
        if not isinstance(metadata, dict):
            raise FixtureError(f"{where}: field 'metadata' must be an object")
        assert chunk_id is not None and text is not None
        if chunk_id in seen:
            raise FixtureError(f"{where}: duplicate chunk id {chunk_id!r} (first at {seen[chunk_id]})")
        seen[chunk_id] = where
        chunks.append(Chunk(id=chunk_id, text=text, doc=doc, metadata=metadata))
    if not chunks:
        raise FixtureError(f"{display(path)}: no chunks")
    return tuple(chunks)


def _relevance(where: str, value: Any, known: Mapping[str, Chunk]) -> dict[str, int]:
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
            if isinstance(grade, bool) or not isinstance(grade, int) or grade < 0:
                raise FixtureError(
                    f"{where}: grade of {chunk_id!r} must be an integer >= 0, got {json.dumps(grade)}"
                )
            grades[chunk_id] = grade
    else:
        raise FixtureError(
            f"{where}: 'relevant' must be a list of chunk ids or an object {{chunk_id: grade}}"
        )
    for chunk_id in grades:
        if chunk_id not in known:
            raise FixtureError(f"{where}: unknown chunk id {chunk_id!r} in 'relevant'")
    return grades


def _snippet_relevance(where: str, value: Any, chunks: Sequence[Chunk]) -> dict[str, int]:
    if not isinstance(value, list) or not all(isinstance(s, str) and s.strip() for s in value):
        raise FixtureError(f"{where}: 'relevant_text' must be a list of non-empty strings")
    grades: dict[str, int] = {}
    for snippet in value:
        matches = [chunk.id for chunk in chunks if snippet in chunk.text]
        if not matches:
            raise FixtureError(f"{where}: snippet {snippet!r} in 'relevant_text' matches no chunk")
        for chunk_id in matches:
            grades[chunk_id] = 1
    return grades


def load_evalset(path: Path, chunks: Sequence[Chunk]) -> tuple[Question, ...]:
    """Read the eval set against the loaded corpus, resolving `relevant_text` snippets."""
    known = {chunk.id: chunk for chunk in chunks}
    questions: list[Question] = []
    seen: dict[str, str] = {}
    for where, record in _records(path):
        _check_keys(where, record, QUESTION_KEYS)
        question_id = _string(where, record, "id")
        query = _string(where, record, "query")
        assert question_id is not None and query is not None
        if question_id in seen:
            raise FixtureError(f"{where}: duplicate question id {question_id!r} (first at {seen[question_id]})")
        seen[question_id] = where
        if "relevant" not in record and "relevant_text" not in record:
            raise FixtureError(f"{where}: missing field 'relevant' (use [] for a no-answer question)")
        grades = _relevance(where, record.get("relevant", []), known)
        if "relevant_text" in record:
            for chunk_id, grade in _snippet_relevance(where, record["relevant_text"], chunks).items():
                grades[chunk_id] = max(grade, grades.get(chunk_id, 0))
        tags = record.get("tags", [])
        if not isinstance(tags, list) or not all(isinstance(t, str) and t.strip() for t in tags):
            raise FixtureError(f"{where}: 'tags' must be a list of non-empty strings")
        if len(set(tags)) != len(tags):
            raise FixtureError(f"{where}: a tag is listed twice in 'tags'")
        questions.append(
            Question(id=question_id, query=query, relevance=grades, tags=tuple(tags))
        )
    if not questions:
        raise FixtureError(f"{display(path)}: no questions")
    if not any(question.answerable for question in questions):
        raise FixtureError(f"{display(path)}: every question is a no-answer question; nothing can be scored")
    return tuple(questions)
