"""Gold as text (documents mode): `relevant_spans` and `relevant_text` snippets placed in the documents, and
the one rule that turns a span into chunk-id labels for a chunking.

THE RULE (`holds`): a chunk is relevant at a span's grade when they overlap and either the chunk holds at
least half of the span, or the span is at least half of the chunk. The first half keeps a chunk that
carries most of an answer however long the chunk; the second keeps a small chunk lying inside a long
answer (each piece of an answer cut fine is gold, as a reader would say). A chunk that only grazes a
span (a few of the span's characters at its edge, a small share of a large chunk) is not. A snippet a
chunk boundary cuts is partial overlap: each side is judged by the rule, never an error. Where several
spans make a chunk relevant, the highest grade wins, as elsewhere.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.errors import FixtureError
from .documents import Document
from .lines import Unanchored
from .records import Chunk, Span

SPAN_KEYS = frozenset({"doc", "start", "end", "grade", "text"})
FUZZY = 95.0
"""rapidfuzz `partial_ratio` at or above which an edited span's text is taken as found (labels/anchor.py's
certain score)."""
LONG = 1000
"""Longer span texts are found exactly or whitespace-insensitively only (the fuzzy search grows fast)."""


def holds(start: int, end: int, span: Span) -> bool:
    """The rule (see the module): chunk [start, end) is relevant for `span` at its grade."""
    shared = min(end, span.end) - max(start, span.start)
    return shared > 0 and (2 * shared >= span.end - span.start or 2 * shared >= end - start)


def span_labels(spans: Sequence[Span], chunks: Sequence[Chunk] | Mapping[str, Sequence[Chunk]]) -> dict[str, int]:
    """Chunk id -> grade: every chunk the rule makes relevant for one of `spans`, at the highest grade.
    `chunks`: the corpus, or its chunks by document (`by_document`, built once for a whole eval set)."""
    by_doc = chunks if isinstance(chunks, Mapping) else by_document(chunks)
    grades: dict[str, int] = {}
    for span in spans:
        for chunk in by_doc.get(span.doc, ()):
            assert chunk.start is not None and chunk.end is not None
            if holds(chunk.start, chunk.end, span):
                grades[chunk.id] = max(span.grade, grades.get(chunk.id, 0))
    return grades


def by_document(chunks: Sequence[Chunk]) -> dict[str, list[Chunk]]:
    """The chunks that have a place, by document."""
    found: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        if chunk.doc is not None and chunk.start is not None:
            found.setdefault(chunk.doc, []).append(chunk)
    return found


def snippet_spans(where: str, snippets: Sequence[str], documents: Sequence[Document]) -> list[Span]:
    """Each `relevant_text` snippet at every place a document holds it, graded 1; one no document holds
    is an error naming it."""
    found: list[Span] = []
    for snippet in snippets:
        places = [Span(d.id, at, at + len(snippet)) for d in documents for at in _occurrences(d.text, snippet)]
        if not places:
            raise Unanchored(f"{where}: snippet {snippet!r} in 'relevant_text' matches no document")
        found.extend(places)
    return found


def _occurrences(text: str, snippet: str) -> list[int]:
    found, at = [], text.find(snippet)
    while at >= 0:
        found.append(at)
        at = text.find(snippet, at + 1)
    return found


def given_spans(where: str, value: Any, documents: Mapping[str, Document], most: int,
                unedited: bool = False) -> list[Span]:
    """`relevant_spans`: a list of {doc, start, end, grade?, text?}. In documents as the gold's author saw
    them (`unedited`: see `evalset.corpus.unedited`) a span must lie inside its document and hold its
    `text` at its offsets; in edited ones a span with `text` is found again (`refound`)."""
    if not isinstance(value, list) or not value:
        raise FixtureError(f"{where}: 'relevant_spans' must be a non-empty list of {{doc, start, end, grade, text}}")
    return [_given_span(f"{where}: relevant_spans[{number}]", entry, documents, most, unedited)
            for number, entry in enumerate(value)]


def _given_span(name: str, entry: Any, documents: Mapping[str, Document], most: int, unedited: bool) -> Span:
    """One entry of `relevant_spans`, checked and placed (see `given_spans`)."""
    if not isinstance(entry, dict) or not entry.keys() <= SPAN_KEYS or not {"doc", "start", "end"} <= entry.keys():
        raise FixtureError(f"{name} must be an object with doc, start, end and optionally grade, text")
    doc, start, end = entry["doc"], entry["start"], entry["end"]
    grade, text = entry.get("grade", 1), entry.get("text")
    if not isinstance(doc, str) or doc not in documents:
        raise Unanchored(f"{name}: unknown document {doc!r}")
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in (start, end, grade)) or not 0 <= start < end:
        raise FixtureError(f"{name}: start, end and grade must be integers with 0 <= start < end")
    if not 1 <= grade <= most:
        raise FixtureError(f"{name}: grade must be an integer from 1 to {most}, got {grade}")
    if text is not None and (not isinstance(text, str) or not text.strip()):
        raise FixtureError(f"{name}: 'text' must be the span's text, a string that is not empty or blank "
                           f"(whitespace only), got {text!r}")
    body = documents[doc].text
    if (text is None or unedited) and end > len(body):
        raise Unanchored(f"{name}: end {end} is past the end of {doc!r} ({len(body)} characters); "
                         "fix the span's offsets")
    if text is None:
        if not body[start:end].strip():
            raise FixtureError(f"{name}: {doc!r} holds only blank characters (whitespace) at {start}..{end}; "
                               "point the span at the answer's text")
        return Span(doc, start, end, grade)
    place = refound(body, start, end, text)
    if unedited and (start, end) != place:
        now = (f"; its text is at {place[0]}..{place[1]}: set start {place[0]} and end {place[1]}" if place
               else "; fix the offsets or the text")
        raise Unanchored(f"{name}: {doc!r} holds {_short(body[start:end])} at {start}..{end}, not its text "
                         f"{_short(text)}, in documents unedited since the baseline recorded them (or that no "
                         f"baseline recorded yet){now}")
    if place is None:
        raise Unanchored(f"{name}: its text {_short(text)} is no longer in {doc!r}; "
                         "fix the span or give its new text")
    return Span(doc, *place, grade)


def refound(body: str, start: int, end: int, text: str) -> tuple[int, int] | None:
    """Where `text`, recorded at [start, end), is in `body` today: there, if it still is; else the exact
    occurrence nearest `start`; else the nearest one that differs in whitespace only; else rapidfuzz's
    best alignment scoring FUZZY or more (the steps `relabel` takes, labels/anchor.py); None: gone."""
    if body[start:end] == text:
        return start, end
    exact = _occurrences(body, text)
    if exact:
        at = min(exact, key=lambda a: (abs(a - start), a))
        return at, at + len(text)
    letters = [re.escape(c) for c in text if not c.isspace()]
    loose = [(m.start(), m.end()) for m in re.finditer(r"\s*".join(letters), body)] if letters else []
    if loose:
        return min(loose, key=lambda p: (abs(p[0] - start), p[0]))
    if len(text) > LONG:
        return None
    from rapidfuzz import fuzz

    best = fuzz.partial_ratio_alignment(text, body, score_cutoff=FUZZY)
    if best is None:
        return None
    start, end = best.dest_start, best.dest_end
    while start < end and body[start].isspace():
        start += 1
    while end > start and body[end - 1].isspace():
        end -= 1
    return (start, end) if end > start else None


def _short(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:37] + "...")
