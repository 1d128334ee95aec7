"""The results file: sorted and stable, written atomically, read back with one-line errors."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from stages import document, retriever_entry

from pytest_ragretrieval.baseline.format import dumps, load, parse
from pytest_ragretrieval.core.errors import BaselineError
from pytest_ragretrieval.evalset.records import Question
from pytest_ragretrieval.files.paths import write_atomic
from pytest_ragretrieval.scoring.evaluate import score
from pytest_ragretrieval.scoring.metrics import MetricSpec


def sample_document() -> dict[str, Any]:
    questions = (Question("q1", "a", {"c1": 1}), Question("q2", "b", {}))
    result = score("bm25", questions, {"q1": ["c2", "c1"], "q2": []}, (MetricSpec("ndcg", 5),))
    return document(5, {"k": 5, "retrievers": {"bm25": {"type": "bm25"}}}, {"bm25": retriever_entry(result)})


def test_round_trip() -> None:
    doc = sample_document()
    baseline = parse(Path("b.json"), dumps(doc))
    assert baseline.k == 5
    assert baseline.retrievers["bm25"].metrics == {"ndcg@5": 0.63093}
    assert baseline.retrievers["bm25"].questions["q1"].ranking == ("c2", "c1")
    assert baseline.retrievers["bm25"].questions["q2"].metrics == {}


def test_dumps_is_sorted_indented_and_utf8() -> None:
    doc = sample_document()
    doc["retrievers"]["bm25"]["questions"]["q1"]["ranking"] = ["差旅-001"]
    text = dumps(doc)
    assert text == dumps(json.loads(text))
    assert "差旅-001" in text and text.endswith("\n")
    keys = [line.strip().split('"')[1] for line in text.splitlines() if line.startswith('  "')]
    assert keys == sorted(keys)


def test_write_atomic_replaces_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "b" / "retrieval.json"
    write_atomic(target, "one\n")
    write_atomic(target, "two\n")
    assert target.read_text() == "two\n"
    assert os.listdir(target.parent) == ["retrieval.json"]


def test_write_atomic_keeps_the_old_file_when_writing_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "retrieval.json"
    target.write_text("old\n")

    def broken(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(OSError, match="disk full"):
        write_atomic(target, "new\n")
    assert target.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["retrieval.json"]


def test_a_missing_baseline_is_none(tmp_path: Path) -> None:
    assert load(tmp_path / "none.json") is None


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{", "not valid JSON (Expecting property name enclosed in double quotes at line 1 column 2)"),
        ("[]", "not a results document (expected a JSON object)"),
        ('{"format_version": 6}', "format_version is 6, this plugin reads format_version 1, 2, 3, 4 and 5"),
        ('{"format_version": 2.5}', "format_version is 2.5, this plugin reads format_version 1, 2, 3, 4 and 5"),  # 2.0 reads as 2
        ('{"format_version": 1, "fingerprint": 1}', "fingerprint must be an object"),
        ('{"format_version": 1, "fingerprint": {}, "retrievers": []}', "retrievers must be an object"),
        ('{"format_version": 1, "fingerprint": {}, "retrievers": {}, "k": "5"}', "k must be an integer >= 1"),
        ('{"format_version": 1, "fingerprint": {}, "k": 5, "retrievers": {"x": {"metrics": {"p@5": null}}}}',
         "retrievers.x.metrics must map metric names to numbers"),
        ('{"format_version": 1, "fingerprint": {}, "k": 5, "retrievers": {"x": {"metrics": {}, "questions": {"q": {"ranking": "c1"}}}}}',
         "retrievers.x.questions.q.ranking must be a list of chunk ids"),
    ],
)
def test_damaged_documents(text: str, problem: str) -> None:
    with pytest.raises(BaselineError) as error:
        parse(Path("b.json"), text)
    assert str(error.value) == (
        f"b.json: {problem}; fix it, or delete it and run `pytest --rag-update-baseline` to record a new one"
    )
