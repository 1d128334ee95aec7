"""Gold as text: the one rule at its boundaries, a `relevant_text` snippet cut by a chunk boundary on each side
of it, `relevant_spans` found again after an edit elsewhere in their document, and the eval set read in
documents mode."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_ragretrieval.core.errors import FixtureError
from pytest_ragretrieval.evalset.chunkers import Chunker, chunk_documents
from pytest_ragretrieval.evalset.documents import Document
from pytest_ragretrieval.evalset.gold_text import holds, refound, span_labels
from pytest_ragretrieval.evalset.jsonl import Unanchored, load_evalset
from pytest_ragretrieval.evalset.records import Chunk, Span

SPAN = Span("d", 100, 120)  # 20 characters


@pytest.mark.parametrize(("start", "end", "relevant"), [
    (110, 200, True),    # holds 10 of the span's 20: exactly half of the span
    (111, 200, False),   # holds 9 of 20, and 9 is far below half of the 89-character chunk
    (0, 110, True),      # holds 10 of 20 at the span's start: half of the span again
    (0, 109, False),     # holds 9 of 20, a sliver of the 109-character chunk
    (118, 122, True),    # holds 2 of 20, but those 2 are half of the 4-character chunk
    (119, 122, False),   # holds 1 of 20, a third of the 3-character chunk
    (103, 117, True),    # a small chunk inside a long answer
    (120, 130, False),   # touches the span's end: no overlap
    (0, 1000, True),     # a large chunk holding the whole span
])
def test_the_rule_at_its_boundaries(start: int, end: int, relevant: bool) -> None:
    """Half of the span or half of the chunk, nothing between."""
    assert holds(start, end, SPAN) is relevant


def test_the_rule_grades_at_the_spans_grade_and_the_highest_wins() -> None:
    chunks = [Chunk("d#0", "x" * 110, "d", start=0, end=110), Chunk("d#1", "x" * 90, "d", start=110, end=200),
              Chunk("e#0", "x" * 200, "e", start=0, end=200)]
    spans = [Span("d", 100, 120, grade=2), Span("d", 150, 160, grade=3)]
    assert span_labels(spans, chunks) == {"d#0": 2, "d#1": 3}
    assert span_labels([Span("d", 100, 120, 2), Span("d", 105, 200, 3)], chunks) == {"d#0": 2, "d#1": 3}


DOCUMENT = Document("kb", "Refunds are paid back within three working days after approval. Hotels cost 600.")


def write(folder: Path, *questions: dict[str, Any]) -> Path:
    path = folder / "evalset.jsonl"
    path.write_text("\n".join(json.dumps(q, ensure_ascii=False) for q in questions), encoding="utf-8")
    return path


def cut_at(at: int) -> tuple[Chunk, ...]:
    text = DOCUMENT.text
    return (Chunk("kb#0", text[:at], "kb", start=0, end=at), Chunk("kb#1", text[at:], "kb", start=at, end=len(text)))


@pytest.mark.parametrize(("at", "relevant"), [
    (23, ["kb#1"]), (24, ["kb#0", "kb#1"]), (29, ["kb#0", "kb#1"]), (30, ["kb#0"]),
])
def test_a_snippet_cut_by_a_boundary_resolves_under_the_rule(tmp_path: Path, at: int, relevant: list[str]) -> None:
    """The snippet 'paid back within three working days' (35 characters, [12, 47)) cut at `at`: kb#0 = [0, at)
    holds at - 12 of it, relevant from at = 24 (12 of a 24-character chunk: half the chunk), not at 23 (11 of
    23); kb#1 = [at, 81) holds 47 - at, relevant up to at = 29 (18 of 35: over half the snippet), not at 30
    (17 of 35, and of a 51-character chunk). With a chunks file the cut snippet matches no chunk: an error."""
    snippet = "paid back within three working days"
    path = write(tmp_path, {"id": "q1", "query": "refund", "relevant_text": [snippet]})
    (question,) = load_evalset(path, cut_at(at), documents=[DOCUMENT])
    assert sorted(question.relevance) == relevant
    assert question.spans == (Span("kb", 12, 47),)
    with pytest.raises(Unanchored, match="matches no chunk"):
        load_evalset(path, cut_at(at))


def test_relevant_spans_survive_an_edit_elsewhere_in_their_document(tmp_path: Path) -> None:
    text = "three working days"
    start = DOCUMENT.text.index(text)
    line = {"id": "q1", "query": "refund", "relevant_spans": [
        {"doc": "kb", "start": start, "end": start + len(text), "grade": 2, "text": text}]}
    path = write(tmp_path, line)
    edited = Document("kb", "NOTE: policy updated in 2024.\n" + DOCUMENT.text.replace("Hotels", "Rooms"))
    chunks = chunk_documents([edited], Chunker("sentences", size=1), tmp_path)
    (question,) = load_evalset(path, chunks, documents=[edited])
    (span,) = question.spans
    assert edited.text[span.start:span.end] == text and span.grade == 2
    assert question.relevance == {"kb#1": 2}
    rewrapped = Document("kb", DOCUMENT.text.replace("working days", "working\n  days"))
    assert refound(rewrapped.text, start, start + len(text), text) == (start, start + len(text) + 2)
    gone = Document("kb", "Nothing about refunds here.")
    with pytest.raises(Unanchored, match=r"relevant_spans\[0\]: its text 'three working days' is no longer in 'kb'"):
        load_evalset(path, chunk_documents([gone], Chunker("sentences", size=1), tmp_path), documents=[gone])


def test_a_typo_in_an_edited_span_is_found_by_the_fuzzy_step() -> None:
    text = "paid back within three working days after approval"
    body = "Refunds are paid back withn three working days after approval."
    start, end = refound(body, 0, len(text), text) or (0, 0)
    assert "withn three working days after approv" in body[start:end] and body[start] == "p"


def test_relevant_spans_need_documents_and_valid_fields(tmp_path: Path) -> None:
    span = {"doc": "kb", "start": 0, "end": 7}
    path = write(tmp_path, {"id": "q1", "query": "x", "relevant_spans": [span]})
    with pytest.raises(FixtureError, match="evalset.jsonl:1: 'relevant_spans' needs documents; set documents"):
        load_evalset(path, cut_at(20))
    (question,) = load_evalset(path, cut_at(20), documents=[DOCUMENT])
    assert question.relevance == {"kb#0": 1} and question.spans == (Span("kb", 0, 7),)
    for bad, message in [({**span, "doc": "other"}, "unknown document 'other'"),
                         ({**span, "start": 7}, "0 <= start < end"),
                         ({**span, "grade": 0}, "grade must be an integer from 1 to 100"),
                         ({**span, "end": 500}, "end 500 is past the end of 'kb'"),
                         ({**span, "where": 1}, "must be an object with doc, start, end")]:
        write(tmp_path, {"id": "q1", "query": "x", "relevant_spans": [bad]})
        with pytest.raises(FixtureError, match=rf"evalset.jsonl:1: relevant_spans\[0\].*{message}"):
            load_evalset(path, cut_at(20), documents=[DOCUMENT])


def test_a_chunk_both_rejected_and_made_relevant_by_a_span_is_an_error(tmp_path: Path) -> None:
    """`not_relevant` once silently overrode what a span made relevant; it is one line, as for snippets."""
    path = write(tmp_path, {"id": "q1", "query": "x", "not_relevant": ["kb#0"],
                            "relevant_spans": [{"doc": "kb", "start": 0, "end": 7}]})
    with pytest.raises(FixtureError, match="chunk id 'kb#0' is in 'not_relevant' but a 'relevant_spans' span makes it "
                                           "relevant; keep one"):
        load_evalset(path, cut_at(20), documents=[DOCUMENT])
    write(tmp_path, {"id": "q1", "query": "x", "not_relevant": ["kb#1"], "relevant_spans": [{"doc": "kb", "start": 0,
                                                                                            "end": 7}]})
    (question,) = load_evalset(path, cut_at(20), documents=[DOCUMENT])
    assert question.relevance == {"kb#0": 1, "kb#1": 0}
