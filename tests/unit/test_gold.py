"""The gold chunks' texts in the baseline (labels/gold.py): recorded, read back, compared, named."""
from __future__ import annotations

from pathlib import Path

import pytest
from stages import document

from pytest_ragretrieval.baseline.fingerprint import gold_texts
from pytest_ragretrieval.baseline.format import dumps, parse
from pytest_ragretrieval.core.errors import BaselineError
from pytest_ragretrieval.evalset.records import Chunk, Question
from pytest_ragretrieval.gate.checks import Drop, drop_lines
from pytest_ragretrieval.labels.gold import by_question, edited_gold, recorded_gold, review_line

CHUNKS = [Chunk("b", "第二段\n两行"), Chunk("a", "第一段"), Chunk("c", "无人标注"), Chunk("d", "负例")]
QUESTIONS = [
    Question("q1", "x", {"a": 2, "d": 0}),
    Question("q2", "y", {"b": 1}, snippet_ids=frozenset({"b"})),
    Question("q3", "z", {"a": 1, "b": 3}),
]


def baseline_text(gold: object) -> str:
    return dumps(document(3, {"chunks": {"sha256": "0" * 64, "gold": gold}}, {}))


def test_gold_texts_hold_every_chunk_graded_1_or_more_in_id_order() -> None:
    found = gold_texts(CHUNKS, QUESTIONS)
    assert list(found) == ["a", "b"] and found["b"] == "第二段\n两行"


def test_a_gold_text_may_hold_line_breaks_where_other_strings_may_not(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    read = parse(path, baseline_text(gold_texts(CHUNKS, QUESTIONS)))
    assert recorded_gold(read) == {"a": "第一段", "b": "第二段\n两行"}
    with pytest.raises(BaselineError, match=r"fingerprint\.chunks\.sha256 holds a control character"):
        parse(path, dumps(document(3, {"chunks": {"sha256": "a\nb", "gold": {}}}, {})))


@pytest.mark.parametrize(("gold", "problem"), [
    (["a"], "fingerprint.chunks.gold must map chunk ids to texts, got an array"),
    ({"a": 1}, "fingerprint.chunks.gold.a holds a number, not the chunk's text"),
])
def test_a_damaged_record_is_one_line_naming_the_path(tmp_path: Path, gold: object, problem: str) -> None:
    with pytest.raises(BaselineError) as error:
        recorded_gold(parse(tmp_path / "b.json", baseline_text(gold)))
    assert str(error.value) == (f"{tmp_path / 'b.json'}: {problem}; fix it, or delete it and run "
                                "`pytest --rag-update-baseline` to record a new one")


def test_an_older_baseline_records_nothing_and_nothing_is_reported(tmp_path: Path) -> None:
    old = parse(tmp_path / "b.json", dumps(document(3, {"chunks": {"sha256": "0" * 64}}, {})))
    assert recorded_gold(old) is None and recorded_gold(None) is None
    assert edited_gold(None, gold_texts(CHUNKS, QUESTIONS), QUESTIONS) == ()


def test_an_edited_gold_text_names_the_questions_it_is_gold_of() -> None:
    recorded = {"a": "第一段（旧）", "b": "第二段\n两行", "gone": "..."}
    edited = edited_gold(recorded, gold_texts(CHUNKS, QUESTIONS), QUESTIONS)
    assert [(e.chunk, e.questions) for e in edited] == [("a", ("q1", "q3"))]
    assert review_line(edited) == "labels to review: q1, q3 (the text of gold chunk a was edited)"
    assert review_line(()) is None
    both = edited_gold({"a": "旧", "b": "旧"}, gold_texts(CHUNKS, QUESTIONS), QUESTIONS)
    assert review_line(both) == ("labels to review: q1, q3 (the text of gold chunk a was edited); "
                                 "q2, q3 (the text of gold chunk b was edited)")
    assert by_question(both) == {"q1": ("a",), "q2": ("b",), "q3": ("a", "b")}


def test_a_drop_on_edited_gold_is_named_and_counted_apart() -> None:
    drops = [Drop("q1", 1.0, 0.0), Drop("q2", 1.0, 0.5)]
    assert drop_lines(drops, {"q1": ("security-018",)}) == [
        "questions that dropped, worst first:",
        "  q1: 1.0000 -> 0.0000 (-1.0000) — its gold chunk security-018 was edited",
        "  q2: 1.0000 -> 0.5000 (-0.5000)",
        "1 of the 2 questions that dropped stand on gold text edited since the baseline (q1): review their labels "
        "before reading the drop as worse retrieval",
    ]
    assert drop_lines(drops)[1:] == ["  q1: 1.0000 -> 0.0000 (-1.0000)", "  q2: 1.0000 -> 0.5000 (-0.5000)"]
