"""Format 5 (issue 48, designed once for issues 49 to 51): the kept exam carries each question's cluster and
side where the eval set names them, and, in documents mode, the fingerprint keeps the places of the chunks
the rankings hold. Recorded as plain data: no verdict reads them yet."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_ragretrieval.bar.exam import Exam
from pytest_ragretrieval.baseline.fingerprint import placed, questions_record
from pytest_ragretrieval.core.errors import FixtureError
from pytest_ragretrieval.evalset.jsonl import load_evalset
from pytest_ragretrieval.evalset.records import Chunk
from pytest_ragretrieval.record.exam import shape_problem
from pytest_ragretrieval.record.types import FORMAT_VERSION, READABLE

CHUNKS = (Chunk("a", "alpha text"), Chunk("b", "beta text"))


def evalset(tmp_path: Path, *lines: dict[str, object]) -> Path:
    path = tmp_path / "e.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_cluster_and_side_are_read_and_kept_with_the_exam(tmp_path: Path) -> None:
    path = evalset(tmp_path, {"id": "q1", "query": "alpha", "relevant": ["a"], "cluster": "doc-1", "side": "tune"},
                   {"id": "q2", "query": "beta", "relevant": ["b"]})
    questions = load_evalset(path, CHUNKS)
    assert (questions[0].cluster, questions[0].side, questions[1].cluster, questions[1].side) == (
        "doc-1", "tune", None, None)
    section = questions_record(questions)
    assert (section["clusters"], section["sides"]) == ({"q1": "doc-1"}, {"q1": "tune"})
    kept = Exam.of_baseline({"questions": section}, "the base's exam")
    assert kept is not None and (kept["q1"].cluster, kept["q1"].side, kept["q2"].side) == ("doc-1", "tune", None)
    plain = questions_record(load_evalset(evalset(tmp_path, {"id": "q1", "query": "alpha", "relevant": ["a"]}), CHUNKS))
    assert "clusters" not in plain and "sides" not in plain  # a file without them is written as format 4 wrote it


@pytest.mark.parametrize(("line", "message"), [
    ({"side": "train"}, "e.jsonl:1: field 'side' must be \"tune\" or \"gate\" (or left out), got 'train'"),
    ({"cluster": ""}, "e.jsonl:1: 'cluster' must be a non-empty string (the name of the question's cluster)"),
])
def test_a_bad_cluster_or_side_is_one_line_naming_the_line(tmp_path: Path, line: dict[str, object],
                                                          message: str) -> None:
    path = evalset(tmp_path, {"id": "q1", "query": "alpha", "relevant": ["a"], **line})
    with pytest.raises(FixtureError) as raised:
        load_evalset(path, CHUNKS)
    assert str(raised.value).endswith(message) and "\n" not in str(raised.value)


def test_a_kept_side_is_tune_or_gate() -> None:
    assert shape_problem({"sides": {"q1": "train"}}) == "fingerprint.questions.sides.q1 = train is not tune or gate"
    assert shape_problem({"clusters": {"q1": 3}}) == "fingerprint.questions.clusters.q1 = 3 is not a non-empty string"
    assert shape_problem({"clusters": {"q1": "d"}, "sides": {"q1": "gate"}}) is None


def test_places_are_kept_for_the_ranked_chunks_only() -> None:
    fingerprint = {"chunks": {"sha256": "c" * 64, "places": {"a": ["d.md", 0, 5, "0a0a"], "b": ["d.md", 5, 9, "0a0a"]}}}
    assert placed(fingerprint, {"b"})["chunks"]["places"] == {"b": ["d.md", 5, 9, "0a0a"]}
    assert "places" not in placed(fingerprint, set())["chunks"]


def test_format_5_is_written_and_4_still_read() -> None:
    assert FORMAT_VERSION == 5 and 4 in READABLE
