"""The span metrics against Chroma's own function (the oracle of issue 43).

`data/chroma_oracle/values.json` holds what `_scores_from_dataset_and_retrievals` of
brandonstarxel/chunking_evaluation, at the commit below, gave on the hand-made documents, gold spans
and top-5 retrievals of `inputs.json`, in a chunking without overlap and one with (512/64
characters); its README says how they were produced.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_ragretrieval.evalset.records import Span
from pytest_ragretrieval.scoring.spans import char_iou, char_precision, char_recall

CHROMA_COMMIT = "d451fc4cf56e417b755994b4ca5212fd5057c0d2"
DATA = Path(__file__).parent / "data" / "chroma_oracle"
INPUTS: dict[str, Any] = json.loads((DATA / "inputs.json").read_text(encoding="utf-8"))
ORACLE: dict[str, Any] = json.loads((DATA / "values.json").read_text(encoding="utf-8"))
DOCUMENTS: dict[str, str] = json.loads((DATA / "documents.json").read_text(encoding="utf-8"))
CASES = [(chunking, question) for chunking, values in ORACLE["values"].items() for question in values]


def gold(question: str) -> list[Span]:
    return [Span(g["doc"], g["start"], g["end"]) for g in INPUTS["questions"][question]]


def retrieved(chunking: str, question: str) -> list[Span]:
    chunks = INPUTS["chunks"][chunking]
    return [Span(*chunks[chunk_id]) for chunk_id in INPUTS["retrievals"][chunking][question]]


def set_iou(chunks: list[Span], answer: list[Span]) -> float:
    """|R∩G| / |R∪G| over character positions, the set-based IoU Chroma's sums differ from."""
    def positions(spans: list[Span]) -> set[tuple[str, int]]:
        return {(span.doc, i) for span in spans for i in range(span.start, span.end)}
    r, g = positions(chunks), positions(answer)
    return len(r & g) / len(r | g)


def test_the_oracle_is_their_function_at_the_named_commit_on_both_chunkings() -> None:
    assert ORACLE["source"]["commit"] == CHROMA_COMMIT
    assert ORACLE["source"]["function"].endswith("_scores_from_dataset_and_retrievals")
    assert ORACLE["k"] == INPUTS["k"] == 5
    assert set(ORACLE["values"]) == {"flat", "overlap"} and len(CASES) == 22
    for chunking, ranked in INPUTS["retrievals"].items():
        assert all(len(top) == 5 for top in ranked.values()), chunking
    for question, spans in INPUTS["questions"].items():
        assert all(DOCUMENTS[s["doc"]][s["start"]:s["end"]] == s["text"] for s in spans), question


@pytest.mark.parametrize(("chunking", "question"), CASES)
def test_char_recall_precision_and_iou_equal_chromas(chunking: str, question: str) -> None:
    expected = ORACLE["values"][chunking][question]
    chunks, answer = retrieved(chunking, question), gold(question)
    assert char_recall(chunks, answer) == pytest.approx(expected["char_recall"], abs=1e-12, rel=0)
    assert char_precision(chunks, answer) == pytest.approx(expected["char_precision"], abs=1e-12, rel=0)
    assert char_iou(chunks, answer) == pytest.approx(expected["char_iou"], abs=1e-12, rel=0)


def test_iou_is_the_set_based_iou_only_where_the_retrieved_chunks_do_not_overlap() -> None:
    """Sums in the denominator: two retrieved chunks sharing 64 characters count them twice, so
    Chroma's IoU falls below |R∩G|/|R∪G| exactly on the questions whose top 5 holds such a pair."""
    for question in INPUTS["questions"]:
        chunks, answer = retrieved("flat", question), gold(question)
        assert char_iou(chunks, answer) == pytest.approx(set_iou(chunks, answer), abs=1e-12, rel=0), question
    lower = []
    for question in INPUTS["questions"]:
        chunks, answer = retrieved("overlap", question), gold(question)
        ours, plain = char_iou(chunks, answer), set_iou(chunks, answer)
        overlapping = any(a.doc == b.doc and a.start < b.end and b.start < a.end
                          for i, a in enumerate(chunks) for b in chunks[i + 1:])
        found = char_recall(chunks, answer) > 0
        assert ours <= plain + 1e-12
        if overlapping and found:
            lower.append(question)
            assert ours < plain - 1e-6, question
        else:
            assert ours == pytest.approx(plain, abs=1e-12, rel=0), question
    assert len(lower) >= 3, lower
