"""Reading chunks and eval sets: formats, resolution of snippets and one-line errors."""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_ragretrieval.core.errors import FixtureError
from pytest_ragretrieval.evalset.jsonl import load_chunks, load_evalset
from pytest_ragretrieval.evalset.records import Chunk


def write(path: Path, *rows: object) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows), encoding="utf-8")
    return path


CORPUS = (
    Chunk("a-1", "一线城市住宿标准每晚600元"),
    Chunk("a-2", "二线城市住宿标准每晚450元"),
    Chunk("b-1", "ORDER-2024 表示订单超时"),
)


def test_chunks_keep_doc_and_metadata(tmp_path: Path) -> None:
    path = write(tmp_path / "c.jsonl", {"id": "x", "text": "t", "doc": "d.md", "metadata": {"section": "s"}}, "", {"id": "y", "text": "u"})
    chunks = load_chunks(path)
    assert [c.id for c in chunks] == ["x", "y"]
    assert chunks[0].doc == "d.md" and chunks[0].metadata == {"section": "s"}
    assert chunks[1].doc is None and chunks[1].metadata == {}


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ('{"id": "x", "text": ', "c.jsonl:2: invalid JSON"),
        ('["x"]', "c.jsonl:2: expected a JSON object, got list"),
        ({"id": "", "text": "t"}, "c.jsonl:2: field 'id' must be a non-empty string"),
        ({"id": 7, "text": "t"}, "c.jsonl:2: field 'id' must be a non-empty string"),
        ({"id": "x2", "text": 7}, "c.jsonl:2: field 'text' must be a string"),
        ({"id": "x2", "text": "t", "metadata": []}, "c.jsonl:2: field 'metadata' must be an object"),
        ({"id": "x2", "txt": "t"}, "c.jsonl:2: unknown field 'txt'"),
        ({"id": "x", "text": "t"}, "c.jsonl:2: duplicate chunk id 'x' (first at c.jsonl:1)"),
    ],
)
def test_bad_chunk_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, row: object, message: str) -> None:
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path / "c.jsonl", {"id": "x", "text": "t"}, row)
    with pytest.raises(FixtureError) as error:
        load_chunks(path)
    assert str(error.value).startswith(message)
    assert "\n" not in str(error.value)


def test_a_missing_file_and_an_empty_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FixtureError, match=r"^nope.jsonl: file not found$"):
        load_chunks(tmp_path / "nope.jsonl")
    with pytest.raises(FixtureError, match=r"^empty.jsonl: no chunks$"):
        load_chunks(write(tmp_path / "empty.jsonl", ""))
    (tmp_path / "latin.jsonl").write_bytes(b'{"id": "x", "text": "\xe9"}\n')
    with pytest.raises(FixtureError, match=r"^latin.jsonl: not UTF-8"):
        load_chunks(tmp_path / "latin.jsonl")


def test_binary_graded_and_no_answer_relevance(tmp_path: Path) -> None:
    path = write(
        tmp_path / "e.jsonl",
        {"id": "q1", "query": "住宿", "relevant": ["a-1", "a-2"], "tags": ["semantic"]},
        {"id": "q2", "query": "订单", "relevant": {"b-1": 2, "a-1": 0}},
        {"id": "q3", "query": "年会", "relevant": []},
    )
    q1, q2, q3 = load_evalset(path, CORPUS)
    assert q1.relevance == {"a-1": 1, "a-2": 1} and q1.tags == ("semantic",)
    assert q2.relevance == {"b-1": 2, "a-1": 0} and q2.relevant_ids == {"b-1"}
    assert q3.answerable is False and q3.relevance == {}


def test_relevant_text_resolves_to_every_chunk_containing_the_snippet(tmp_path: Path) -> None:
    path = write(tmp_path / "e.jsonl", {"id": "q1", "query": "住宿", "relevant_text": ["住宿标准"], "relevant": {"b-1": 2}})
    (question,) = load_evalset(path, CORPUS)
    assert question.relevance == {"a-1": 1, "a-2": 1, "b-1": 2}


def test_a_line_of_only_zero_grades_is_a_no_answer_question(tmp_path: Path) -> None:
    path = write(tmp_path / "e.jsonl", {"id": "q1", "query": "a", "relevant": {"a-1": 0}}, {"id": "q2", "query": "b", "relevant": ["b-1"]})
    assert [q.answerable for q in load_evalset(path, CORPUS)] == [False, True]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"id": "q2", "query": "x", "relevant": ["zz"]}, "e.jsonl:2: unknown chunk id 'zz' in 'relevant'"),
        ({"id": "q2", "query": "x", "relevant": {"zz": 1}}, "e.jsonl:2: unknown chunk id 'zz' in 'relevant'"),
        ({"id": "q2", "query": "x", "relevant": ["a-1", "a-1"]}, "e.jsonl:2: chunk id 'a-1' listed twice in 'relevant'"),
        ({"id": "q2", "query": "x", "relevant": {"a-1": -1}}, "e.jsonl:2: grade of 'a-1' must be an integer from 0 to 100, got -1"),
        ({"id": "q2", "query": "x", "relevant": {"a-1": 1.5}}, "e.jsonl:2: grade of 'a-1' must be an integer from 0 to 100, got 1.5"),
        ({"id": "q2", "query": "x", "relevant": {"a-1": True}}, "e.jsonl:2: grade of 'a-1' must be an integer from 0 to 100, got true"),
        ({"id": "q2", "query": "x", "relevant": "a-1"}, "e.jsonl:2: 'relevant' must be a list of chunk ids or an object"),
        ({"id": "q2", "query": "x", "relevant_text": ["没有这段"]}, "e.jsonl:2: snippet '没有这段' in 'relevant_text' matches no chunk"),
        ({"id": "q2", "query": "x", "relevant_text": "住宿"}, "e.jsonl:2: 'relevant_text' must be a list of strings, none empty or blank"),
        ({"id": "q2", "query": "x"}, "e.jsonl:2: missing field 'relevant'"),
        ({"id": "q2", "query": "", "relevant": []}, "e.jsonl:2: field 'query' must be a non-empty string"),
        ({"id": "q2", "relevant": []}, "e.jsonl:2: missing field 'query'"),
        ({"id": "q1", "query": "x", "relevant": []}, "e.jsonl:2: duplicate question id 'q1' (first at e.jsonl:1)"),
        ({"id": "q2", "query": "x", "relevant": [], "tags": "kw"}, "e.jsonl:2: 'tags' must be a list of non-empty strings"),
        ({"id": "q2", "query": "x", "relevant": [], "tags": ["a", "a"]}, "e.jsonl:2: a tag is listed twice in 'tags'"),
        ({"id": "q2", "query": "x", "relevant": [], "answer": "y"}, "e.jsonl:2: unknown field 'answer'"),
        # issue 32: a question's metadata is an object, as a chunk's is
        *(({"id": "q2", "query": "x", "relevant": [], "metadata": bad},
           "e.jsonl:2: field 'metadata' must be an object") for bad in ([], [1], 3, "m", None)),
    ],
)
def test_bad_question_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, row: object, message: str) -> None:
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path / "e.jsonl", {"id": "q1", "query": "住宿", "relevant": ["a-1"]}, row)
    with pytest.raises(FixtureError) as error:
        load_evalset(path, CORPUS)
    assert str(error.value).startswith(message)


def test_an_eval_set_without_answerable_questions_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path / "e.jsonl", {"id": "q1", "query": "年会", "relevant": []})
    with pytest.raises(FixtureError, match="every question is a no-answer question"):
        load_evalset(path, CORPUS)


def test_a_json_string_holding_a_line_separator_stays_one_line(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "x", "text": "a\u2028b"}\n', encoding="utf-8")
    assert load_chunks(path)[0].text == "a\u2028b"


def test_empty_texts_are_chunks_like_any_other(tmp_path: Path) -> None:
    chunks = load_chunks(write(tmp_path / "c.jsonl", {"id": "x", "text": ""}, {"id": "y", "text": "  "}, {"id": "z", "text": "t"}))
    assert [c.text for c in chunks] == ["", "  ", "t"]


def test_a_byte_order_mark_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"id": "x", "text": "t"}).encode() + b"\n")
    assert [c.id for c in load_chunks(path)] == ["x"]
    evalset = tmp_path / "e.jsonl"
    evalset.write_bytes(b"\xef\xbb\xbf" + json.dumps({"id": "q1", "query": "q", "relevant": ["x"]}).encode() + b"\n")
    assert [q.id for q in load_evalset(evalset, load_chunks(path))] == ["q1"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"id": "x2", "text": "a\\u0000b"}',
         "c.jsonl:2: field 'text' holds a NUL character (U+0000), which Postgres cannot store; remove it"),
        ('{"id": "x2", "text": "t", "doc": "\\u0000"}', "c.jsonl:2: field 'doc' holds a NUL character (U+0000)*"),
        ('{"id": "x2", "text": "t", "metadata": {"a": ["\\u0000"]}}', "c.jsonl:2: field 'metadata' holds a NUL character*"),
        ('{"id": "x2", "text": "t", "metadata": {"\\u0000": 1}}', "c.jsonl:2: field 'metadata' holds a NUL character*"),
        ('{"id": "x2", "text": "a\\ud800"}',
         "c.jsonl:2: field 'text' holds a lone surrogate (U+D800), which is not Unicode text and cannot be written as UTF-8; remove it"),
        ('{"id": "x2", "text": "t", "metadata": {"n": NaN}}', "c.jsonl:2: invalid JSON (NaN is not a JSON number)"),
        ('{"id": "x2", "text": "t", "metadata": {"n": 1e999}}', "c.jsonl:2: invalid JSON (the number 1e999 is too large for a float)"),
        ('{"id": "x2", "text": "t", "metadata": {"n": ' + "9" * 5000 + "}}",
         "c.jsonl:2: invalid JSON (an integer literal has more than 4300 digits)"),
        ('{"id": "x2", "text": "t", "metadata": ' + "[" * 5000 + "]" * 5000 + "}", "c.jsonl:2: invalid JSON (nested deeper than 100 levels)"),
        ('{"id": "x2", "text": "t", "metadata": ' + "[" * 150 + "]" * 150 + "}", "c.jsonl:2: invalid JSON (nested deeper than 100 levels)"),
        ('{"id": "x\\n2", "text": "t"}', "c.jsonl:2: chunk id 'x\\n2' holds a control character (U+000A); remove it"),
        ('{"id": "x\\u20282", "text": "t"}', "c.jsonl:2: chunk id 'x\\u20282' holds a control character (U+2028); remove it"),
    ],
)
def test_text_postgres_or_a_terminal_cannot_take(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str, message: str) -> None:
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path / "c.jsonl", {"id": "x", "text": "t"}, line)
    with pytest.raises(FixtureError) as error:
        load_chunks(path)
    pattern = ".*".join(map(re.escape, message.split("*")))
    assert re.fullmatch(pattern, str(error.value)), str(error.value)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"id": "q2\n", "query": "x", "relevant": []}, "e.jsonl:2: question id 'q2\\n' holds a control character (U+000A); remove it"),
        ({"id": "q 2", "query": "x", "relevant": []},
         "e.jsonl:2: question id 'q 2' holds ' ', which pytest node ids and -k cannot carry; use letters, digits and _ . - / + [ ] : (not '::')"),
        ({"id": "a::b", "query": "x", "relevant": []}, "e.jsonl:2: question id 'a::b' holds '::', which pytest node ids*"),
        ({"id": "q(2)", "query": "x", "relevant": []}, "e.jsonl:2: question id 'q(2)' holds '(', which*"),
        ({"id": "q2", "query": "x\u0000", "relevant": []}, "e.jsonl:2: field 'query' holds a NUL character*"),
        ({"id": "q2", "query": "x", "relevant": [], "tags": ["a\rFAILED"]}, "e.jsonl:2: tag 'a\\rFAILED' holds a control character (U+000D); remove it"),
        ({"id": "q2", "query": "x", "relevant": {"a-1": 101}}, "e.jsonl:2: grade of 'a-1' must be an integer from 0 to 100, got 101"),
        ({"id": "q2", "query": "x", "relevant": {"a-1": 10**400}}, "e.jsonl:2: grade of 'a-1' must be an integer from 0 to 100, got 1000000000000000000000000000000000000..."),
    ],
)
def test_ids_and_grades_that_would_break_the_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, row: object, message: str) -> None:
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path / "e.jsonl", {"id": "q1", "query": "住宿", "relevant": ["a-1"]}, row)
    with pytest.raises(FixtureError) as error:
        load_evalset(path, CORPUS)
    pattern = ".*".join(map(re.escape, message.split("*")))
    assert re.fullmatch(pattern, str(error.value)), str(error.value)


def test_ids_node_ids_can_carry(tmp_path: Path) -> None:
    rows = [{"id": qid, "query": "x", "relevant": ["a-1"]} for qid in ("doc/1.2", "q-3_b", "问题1", "x[1]", "a:b", "+1")]
    assert [q.id for q in load_evalset(write(tmp_path / "e.jsonl", *rows), CORPUS)] == [r["id"] for r in rows]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.mkdir(), "c.jsonl: is a directory; give a file path"),
        (lambda p: p.symlink_to(p), "c.jsonl: is a symbolic link loop"),
        (lambda p: None, "c.jsonl: file not found"),
    ],
)
def test_an_input_path_that_is_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: Callable[[Path], object], message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    make(tmp_path / "c.jsonl")
    with pytest.raises(FixtureError) as error:
        load_chunks(tmp_path / "c.jsonl")
    assert str(error.value) == message


def test_an_input_path_under_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fixtures").write_text("not a folder")
    with pytest.raises(FixtureError) as error:
        load_chunks(tmp_path / "fixtures" / "c.jsonl")
    assert str(error.value) == "fixtures/c.jsonl: fixtures is a file, not a folder"
