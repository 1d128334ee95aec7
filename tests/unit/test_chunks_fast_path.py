"""The chunks file's fast path (typed, a line per C call) reads what the careful reader reads, and
leaves every file it cannot take to it, so the errors are the careful reader's, `file:line` and all."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_ragretrieval.core.errors import FixtureError
from pytest_ragretrieval.evalset import jsonl
from pytest_ragretrieval.evalset.records import Chunk


def outcome(read: object, path: Path) -> tuple[str, object]:
    try:
        chunks = read(path)  # type: ignore[operator]
    except FixtureError as exc:
        return "refused", str(exc)
    return "read", [(c.id, c.text, c.doc, json.dumps(c.metadata, sort_keys=True)) for c in chunks]


def chunk_lines() -> st.SearchStrategy[str]:
    good = st.fixed_dictionaries(
        {"id": st.sampled_from(["a", "b", "c", " ", "", "a\u2028", "x\ty"]), "text": st.text(max_size=8)},
        optional={"doc": st.sampled_from(["d.md", "", "  ", None, 3]),
                  "metadata": st.sampled_from([{}, {"k": [1, 2.5]}, [], {"deep": [[[1]]]}, {"n": "\x00"}]),
                  "extra": st.just(1)},
    ).map(lambda row: json.dumps(row, ensure_ascii=False))
    damaged = st.sampled_from(['{"id": "a", "text": "x"', "[1]", "", "   ", "\u3000", '{"id": "a", "text": NaN}',
                               '{"id": "e", "text": "\\ud800"}', '{"id": "f", "text": "\\u0000"}',
                               '{"id": "g", "text": "x", "metadata": {"n": 1e400}}',
                               '{"id": "h", "text": "x", "metadata": {"n": ' + "9" * 5000 + "}}",
                               '{"id": "i", "text": "x", "metadata": ' + "[" * 101 + "]" * 101 + "}",
                               '{"id": "j", "text": "x", "id": "k"}', '{"id": "l", "text": "x"} {"id": "m"}'])
    return st.one_of(good, damaged)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(chunk_lines(), max_size=6), st.booleans(), st.sampled_from([b"", b"\xff", b"\xef\xbb\xbf"]))
def test_the_fast_path_agrees_with_the_careful_reader(
    tmp_path: Path, lines: list[str], crlf: bool, prefix: bytes,
) -> None:
    path = tmp_path / "chunks.jsonl"
    path.write_bytes(prefix + ("\r\n" if crlf else "\n").join(lines).encode("utf-8"))
    assert outcome(jsonl.load_chunks, path) == outcome(jsonl._careful_chunks, path)


def test_a_plain_corpus_takes_the_fast_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "chunks.jsonl"
    path.write_text('{"id": "a", "text": "中文", "doc": "d.md", "metadata": {"k": 1}}\n\n{"id": "b", "text": ""}\n',
                    encoding="utf-8")
    monkeypatch.setattr(jsonl, "_careful_chunks", lambda path: pytest.fail("the careful reader ran"))
    assert jsonl.load_chunks(path) == (Chunk("a", "中文", "d.md", {"k": 1}), Chunk("b", ""))
