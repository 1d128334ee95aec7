"""Segments at the boundary: the config's keys, the eval set's values, the exam that keeps them, the items they
add, and the settings that loosen them."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_ragretrieval.bar.exam import Exam, base_questions
from pytest_ragretrieval.baseline.exams import KeptExam
from pytest_ragretrieval.baseline.fingerprint import questions_record
from pytest_ragretrieval.config.settings import Config, load_config
from pytest_ragretrieval.core.errors import ConfigError, FixtureError
from pytest_ragretrieval.evalset.jsonl import load_evalset
from pytest_ragretrieval.evalset.records import Chunk, Question
from pytest_ragretrieval.evalset.segments import Segment, check_values, members
from pytest_ragretrieval.gate.items import ItemKey, item_keys
from pytest_ragretrieval.record.exam import shape_problem
from pytest_ragretrieval.review.changes import SettingChange
from pytest_ragretrieval.review.settings import GateSettings, loosened_settings

CONFIG = """
[tool.ragretrieval]
chunks = "chunks.jsonl"
evalset = "evalset.jsonl"
metrics = ["recall@3"]
{line}

[tool.ragretrieval.retrievers.bm25]
type = "bm25"
"""


def config(tmp_path: Path, line: str, monkeypatch: pytest.MonkeyPatch) -> Config:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(CONFIG.format(line=line), encoding="utf-8")
    return load_config(None, tmp_path)


def question(qid: str, **metadata: object) -> Question:
    return Question(qid, qid, {"a": 1}, metadata=metadata)


def test_segments_default_to_none_and_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert config(tmp_path, "", monkeypatch).segments == ()
    assert config(tmp_path, 'segments = ["lang", "source"]', monkeypatch).segments == ("lang", "source")


@pytest.mark.parametrize(("line", "message"), [
    ('segments = "lang"', "must be a list of non-empty strings, got 'lang'"),
    ('segments = ["lang", "lang"]', "lists an entry twice"),
    ('segments = ["la=ng"]', "entry 'la=ng' must be a non-empty string of letters, digits and _ . + / [ ] -"),
    ('segments = ["la:ng"]', "entry 'la:ng' must be a non-empty string"),
    ('segments = ["a::b"]', "entry 'a::b' must be a non-empty string"),
])
def test_a_bad_segment_key_is_one_line_naming_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str,
                                                      message: str) -> None:
    with pytest.raises(ConfigError) as error:
        config(tmp_path, line, monkeypatch)
    assert "\n" not in str(error.value)
    assert str(error.value).startswith("pyproject.toml [tool.ragretrieval] key 'segments': ")
    assert message in str(error.value)


def test_values_are_checked_only_for_the_configured_keys(tmp_path: Path) -> None:
    found = [question("q1", lang="de", note="free text, any words"), question("q2", lang=3)]
    assert check_values(found[:1], ("lang",), tmp_path / "evalset.jsonl") == []  # `note` is no segment: any value
    assert check_values(found, ("source",), Path("evalset.jsonl")) == [  # a misspelt key would judge nothing
        "warning: segments lists 'source', which no question of evalset.jsonl names in its metadata: it adds no "
        "items; check its spelling"]
    with pytest.raises(FixtureError, match=r"^evalset.jsonl: question 'q2': metadata.lang = 3 is a segment .*; rename "
                                           r"it, or leave the key out for a question in no segment$"):
        check_values(found, ("lang",), Path("evalset.jsonl"))


def test_membership_is_today_and_the_base_alike() -> None:
    today = [question("q1", lang="de"), question("q2", lang="en"), question("q3")]
    base = [question("q1", lang="de"), question("q2", lang="de"), question("q4", lang="fr")]
    assert members(("lang",), today, base) == {
        Segment("lang", "de"): frozenset({"q1", "q2"}), Segment("lang", "en"): frozenset({"q2"}),
        Segment("lang", "fr"): frozenset({"q4"})}
    assert members((), today, base) == {}


def test_the_exam_keeps_each_questions_values_of_the_configured_keys(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in [
        {"id": "q1", "query": "alpha", "relevant": ["a"], "metadata": {"lang": "de", "other": "x"}},
        {"id": "q2", "query": "beta", "relevant": ["b"]}]), encoding="utf-8")
    found = load_evalset(path, (Chunk("a", "alpha text"), Chunk("b", "beta text")))
    section = questions_record(found, ("lang",))
    assert section["segments"] == {"q1": {"lang": "de"}}
    assert "segments" not in questions_record(found)  # without `segments`: written as before
    assert questions_record(found, ("lang",))["sha256"] == questions_record(found)["sha256"]
    kept = Exam.of_baseline({"questions": section}, "the base's exam")
    assert kept is not None and (dict(kept["q1"].metadata), dict(kept["q2"].metadata)) == ({"lang": "de"}, {})
    assert [q.id for q in base_questions({"questions": section}, None) if q.metadata] == ["q1"]
    retagged = {"questions": {**section, "segments": {"q2": {"lang": "en"}}}}
    base = KeptExam({"questions": section}, "the base revision's")  # a pull request's CI reads the base revision's
    assert [(q.id, dict(q.metadata)) for q in base_questions(retagged, base) if q.metadata] == [("q1", {"lang": "de"})]
    assert base_questions(None, None) == () and base_questions(retagged, KeptExam(None, "none kept")) == ()


@pytest.mark.parametrize(("segments", "problem"), [
    ({"q1": {"lang": "de"}}, None),
    ({"q1": "de"}, "fingerprint.questions.segments.q1 must map segment keys to values, got a string"),
    ({"q1": {"lang": "two words"}}, "fingerprint.questions.segments.q1.lang = two words: a segment key and value must"),
    ([], "fingerprint.questions.segments must map question ids to objects, got an array"),
])
def test_the_kept_values_shape_is_checked(segments: object, problem: str | None) -> None:
    found = shape_problem({"labels": {}, "segments": segments})
    assert found == problem if problem is None else found is not None and found.startswith(problem)


def test_segment_items_follow_the_metric_items_for_values_today_or_the_base_names(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = config(tmp_path, 'segments = ["lang"]', monkeypatch)
    keys = item_keys(settings, [question("q1", lang="en")], [question("q1", lang="de")])
    assert [key.nodeid for key in keys] == ["rag::bm25::recall@3", "rag::bm25::segment::lang:de::recall@3",
                                            "rag::bm25::segment::lang:en::recall@3"]
    assert keys[1].segment == ("lang:de", "recall@3")
    assert ItemKey("bm25", "segment", "src:a.b[1]::recall@3").segment == ("src:a.b[1]", "recall@3")
    assert Segment.parse("src:a.b[1]") == Segment("src", "a.b[1]")
    assert [key.nodeid for key in item_keys(replace(settings, segments=()), [question("q1", lang="en")])
            ] == ["rag::bm25::recall@3"]


def settings(**changes: object) -> GateSettings:
    return replace(GateSettings(metrics=("recall@3",), tolerances={"recall@3": 0.0}), **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize(("old", "new", "loosened"), [
    (settings(segments=("lang", "source")), settings(segments=("lang",)),
     [SettingChange("segments", "source", "judged", "removed")]),
    (settings(segments=("lang",)), settings(segments=("lang",), min_questions=30),
     [SettingChange("min_questions", "", "20", "30")]),
    (settings(segments=("lang",)), settings(segments=("lang", "source"), min_questions=10), []),
    (settings(), settings(min_questions=30), []),  # without segments min_questions judges nothing
])
def test_removing_a_segment_key_or_raising_min_questions_is_loosened(old: GateSettings, new: GateSettings,
                                                                     loosened: list[SettingChange]) -> None:
    assert loosened_settings(old, new) == loosened
