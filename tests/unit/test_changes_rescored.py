"""The pull-request check scores both sides' approved rankings itself, under today's exam and the base's
(issue 42, rules 5 and 6): no value the head's file stores is an input of the comparison."""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_ragretrieval.baseline.fingerprint import questions_record
from pytest_ragretrieval.baseline.format import Baseline, baseline_record, dumps, parse, retriever_record
from pytest_ragretrieval.cli.diff import change_lines, review
from pytest_ragretrieval.core.errors import BaselineError
from pytest_ragretrieval.evalset.records import Question
from pytest_ragretrieval.record.codec import encode
from pytest_ragretrieval.review.changes import (
    LostHit,
    ValueChange,
    classify,
    dumps_changes,
    parse_changes,
)
from pytest_ragretrieval.review.rescore import Today
from pytest_ragretrieval.review.settings import GateSettings
from pytest_ragretrieval.scoring.evaluate import score
from pytest_ragretrieval.scoring.metrics import MetricSpec

METRICS = ("recall@2", "ndcg@2")
LABELS: dict[str, dict[str, int]] = {"q1": {"a": 2, "b": 1}, "q2": {"c": 1}, "q3": {"d": 1}, "q4": {"e": 2}}
GOOD = {"q1": ["a", "b"], "q2": ["c", "x"], "q3": ["d", "x"], "q4": ["e", "x"]}


def questions(labels: Mapping[str, Mapping[str, int]] = LABELS, queries: Mapping[str, str] | None = None
              ) -> list[Question]:
    return [Question(qid, (queries or {}).get(qid, f"{qid} query"), dict(graded)) for qid, graded in labels.items()]


def record(path: str, rankings: Mapping[str, Sequence[str]], asked: Sequence[Question], *,
           approved: Mapping[str, Sequence[str]] | None = None, labels: bool = True,
           forge: Baseline | None = None, edit: Any = None) -> Baseline:
    """A baseline as the plugin records one: `rankings` scored under `asked`, the exam kept in the fingerprint
    (`labels=False`: a format-3 file, which kept none); `forge` writes that file's stored values over these."""
    result = score("bm25", asked, rankings, [MetricSpec.parse(label, 2) for label in METRICS])
    section = questions_record(asked)
    if not labels:
        section.pop("labels", None)
    fingerprint = {"yardstick": {"k": 2, "metrics_version": 1, "grading_version": 1}, "tokenizer": "jieba 0.42.1",
                   "questions": section, "retrievers": {"bm25": {"type": "bm25"}}}
    doc = json.loads(encode(baseline_record(2, fingerprint, {"bm25": retriever_record(result)})))
    entry = doc["retrievers"]["bm25"]
    if not labels:
        doc["format_version"] = 3
    if approved:
        entry["approved"] = {qid: list(ranking) for qid, ranking in approved.items()}
    if forge is not None:
        forged = json.loads(dumps(forge.document))["retrievers"]["bm25"]
        entry["metrics"] = forged["metrics"]
        for qid, question in entry["questions"].items():
            if qid in forged["questions"]:
                question["metrics"] = forged["questions"][qid]["metrics"]
    if edit is not None:
        edit(doc)
    return parse(Path(path), dumps(doc))


OLD = record("old.json", GOOD, questions())
WORSE = {**GOOD, "q1": ["x", "b"], "q3": ["x", "y"]}


def keys(changes: Any) -> set[tuple[str, str, str]]:
    return {(c.retriever, c.metric, c.exam) for c in changes.lowered}


def test_forged_means_over_worse_rankings_are_lowered() -> None:
    """Rule 6: worse rankings recorded, the base's values written back over them: the file's numbers say
    nothing changed, the rankings say both metrics fell."""
    new = record("new.json", WORSE, questions(), forge=OLD)
    assert new.retrievers["bm25"].metrics == OLD.retrievers["bm25"].metrics
    changes = classify(OLD, new)
    assert changes.lowers_the_bar and changes.rescored == ("today",)
    assert keys(changes) == {("bm25", "recall@2", "today"), ("bm25", "ndcg@2", "today")}
    (recall, _) = changes.lowered
    assert (recall.old, recall.new) == (1.0, 0.625)  # q1 finds b only (1/2), q3 nothing: (0.5 + 1 + 0 + 1) / 4
    assert ("compared the approved rankings of both sides, scored here under today's exam (the labels new.json was "
            "recorded under); `diff --against REV` in the checkout scores them under its eval set") in changes.notes


def test_the_same_rankings_with_other_stored_values_change_nothing() -> None:
    """The head's stored values, raised or lowered, are never read: only its rankings."""
    def lower(doc: dict[str, Any]) -> None:
        entry = doc["retrievers"]["bm25"]
        entry["metrics"] = dict.fromkeys(entry["metrics"], 0.0)
        for question in entry["questions"].values():
            question["metrics"] = dict.fromkeys(question["metrics"], 0.0)
    changes = classify(OLD, record("new.json", GOOD, questions(), edit=lower))
    assert not changes.lowers_the_bar and not changes.raised


def test_label_work_alone_lowers_nothing() -> None:
    """Pooled gold added to two questions, grade-0 judgments to another, the rankings unchanged: recall's
    denominators grow, the stored values fall, and both exams score both sides alike."""
    labelled = {**LABELS, "q1": {"a": 2, "b": 1, "z": 1}, "q2": {"c": 1, "w": 1}, "q3": {"d": 1, "x": 0}}
    new = record("new.json", GOOD, questions(labelled))
    assert new.retrievers["bm25"].metrics["recall@2"] < OLD.retrievers["bm25"].metrics["recall@2"]
    changes = classify(OLD, new)
    assert not changes.lowers_the_bar and not changes.raised
    assert changes.rescored == ("today", "base")  # the labels differ: both exams, and neither lowers


def test_a_retune_hidden_behind_new_gold_fails_under_the_base_exam() -> None:
    """Grade-2 gold added to exactly the chunks a worse ranking holds: under today's exam nothing fell,
    under the base's (the labels the base was recorded under) both metrics did."""
    retuned = {**GOOD, "q1": ["x", "y"], "q2": ["v", "c"]}
    labelled = {**LABELS, "q1": {"a": 2, "b": 1, "x": 2, "y": 2}, "q2": {"c": 1, "v": 2}}
    changes = classify(OLD, record("new.json", retuned, questions(labelled)))
    assert keys(changes) == {("bm25", "recall@2", "base"), ("bm25", "ndcg@2", "base")}
    assert changes.rescored == ("today", "base")
    lines = change_lines(changes)
    assert any(line.startswith("  lowered: recall@2 of 'bm25' 1.0000 -> ") and line.endswith(
        "under the base's exam (the labels the baseline was recorded under)") for line in lines), lines


def test_removing_a_question_above_the_bar_is_a_lowering() -> None:
    """q1 leaves the head's file (its eval set): its approved value under the base's exam, 1.0, is above the bar
    of the questions kept (q4 scores 0), as the removal rule says; the stored values play no part."""
    base = {**GOOD, "q4": ["x", "y"]}
    old = record("old.json", base, questions())
    new = record("new.json", base, [q for q in questions() if q.id != "q1"], edit=lambda d: d["retrievers"][
        "bm25"].update(metrics={"recall@2": 1.0, "ndcg@2": 1.0}))
    changes = classify(old, new)
    assert [(c.metric, c.scope) for c in changes.lowered] == [
        (label, "the 1 removed question (q1): bar 1.0000, the bar of the questions kept 0.6667") for label in METRICS]
    kept = record("new.json", base, [q for q in questions() if q.id != "q4"])
    assert not classify(old, kept).lowers_the_bar  # removing the one below the bar lowers nothing


def test_an_approved_ranking_is_the_bar_not_the_recorded_one() -> None:
    """The head recorded worse rankings and kept the approved ones (an update within tolerance): nothing is
    lowered. A head whose approved rankings are the worse ones is lowered, whatever it recorded."""
    kept = record("new.json", WORSE, questions(), approved={"q1": GOOD["q1"], "q3": GOOD["q3"]})
    assert not classify(OLD, kept).lowers_the_bar
    base = record("old.json", WORSE, questions(), approved={"q1": GOOD["q1"], "q3": GOOD["q3"]})
    assert keys(classify(base, record("new.json", WORSE, questions()))) == {
        ("bm25", "recall@2", "today"), ("bm25", "ndcg@2", "today")}


def test_a_kept_value_bar_holds_the_base_numbers() -> None:
    """The base keeps a value bar for q2 (0.9 of recall); the head keeps it too but writes 0.1, or 1.0:
    its numbers are the base's, only which questions keep one is the head's."""
    def bar(value: float) -> Any:
        def edit(doc: dict[str, Any]) -> None:
            doc["retrievers"]["bm25"]["bar"] = {"recall@2": {"q2": value}}
        return edit
    base = record("old.json", GOOD, questions(), edit=bar(0.9))
    for written in (0.1, 0.9, 1.0):
        assert not classify(base, record("new.json", GOOD, questions(), edit=bar(written))).lowers_the_bar
    dropped = classify(base, record("new.json", {**GOOD, "q2": ["x", "y"]}, questions(), edit=bar(1.0)))
    assert keys(dropped) == {("bm25", "ndcg@2", "today")}  # recall's bar of q2 is kept: 0.9 on both sides


def test_a_kept_value_bar_against_a_base_without_one_takes_the_base_s_bar() -> None:
    """The head keeps a value bar for q2's recall (as the gate enforces it) and the base keeps none: the kept
    value is the base's bar for q2 (its approved ranking scored: 1.0), not nothing. On 577255f the head's q2
    was scored from its worse ranking instead, and recall read as lowered (issue 48)."""
    head = record("new.json", {**GOOD, "q2": ["x", "y"]}, questions(),
                  edit=lambda doc: doc["retrievers"]["bm25"].update(bar={"recall@2": {"q2": 0.25}}))
    assert keys(classify(OLD, head)) == {("bm25", "ndcg@2", "today")}


def test_lost_hits_come_from_the_rankings() -> None:
    settings = GateSettings(metrics=METRICS, tolerances=dict.fromkeys(METRICS, 0.0), fail_on=("question",))
    new = record("new.json", WORSE, questions(), forge=OLD)
    assert classify(OLD, new, settings, settings).lost_hits == (LostHit("bm25", "q3", "today"),)


def test_a_base_without_labels_compares_its_stored_values_and_says_so() -> None:
    old = record("old.json", GOOD, questions(), labels=False)
    changes = classify(old, record("new.json", WORSE, questions(), forge=OLD))
    assert not changes.lowers_the_bar and changes.rescored == ()
    assert ("old.json keeps no labels (format 3): compared its stored values; re-record it to compare rankings"
            in changes.notes)


def test_a_head_without_labels_is_scored_under_the_base_exam() -> None:
    changes = classify(OLD, record("new.json", WORSE, questions(), labels=False, forge=OLD))
    assert keys(changes) == {("bm25", "recall@2", "base"), ("bm25", "ndcg@2", "base")}
    assert ("new.json keeps no labels (format 3) and no eval set was read: its approved rankings were scored under "
            "the base's exam only") in changes.notes


def test_todays_exam_is_the_work_tree_eval_set() -> None:
    """With the work tree's eval set the head's labels are never read, and a question the head's file drops
    while the eval set still asks it is scored as an empty ranking."""
    def drop(doc: dict[str, Any]) -> None:
        doc["retrievers"]["bm25"]["questions"].pop("q3")
        doc["fingerprint"]["questions"]["digests"].pop("q3")
        doc["fingerprint"]["questions"]["labels"].pop("q3", None)
    today = Today(tuple(questions()), "the eval set fixtures/evalset.jsonl")
    new = record("new.json", GOOD, questions(), edit=drop)
    changes = classify(OLD, new, today=today)
    assert keys(changes) == {("bm25", "recall@2", "today"), ("bm25", "ndcg@2", "today")}
    assert ("new.json holds no ranking of 'bm25' for q3, which both sides ask: scored as empty rankings"
            in changes.notes)
    assert not classify(OLD, record("new.json", GOOD, questions()), today=today).lowers_the_bar


@pytest.mark.parametrize("edit", [
    lambda section: section.pop("labels"),
    lambda section: section.update(labels={}),
    lambda section: section["labels"]["q1"].update(x=1),
])
def test_a_format_4_file_without_its_kept_labels_is_damage(edit: Any) -> None:
    """Deleted or hand-edited kept labels would let the head's file choose the exam it is judged under (issue 48)."""
    with pytest.raises(BaselineError, match=r"^new\.json: fingerprint\.questions\.labels"):
        record("new.json", GOOD, questions(), edit=lambda doc: edit(doc["fingerprint"]["questions"]))


def test_the_exam_travels_in_changes_json() -> None:
    changes = classify(OLD, record("new.json", WORSE, questions(), forge=OLD))
    text = dumps_changes(changes)
    assert parse_changes(Path("changes.json"), text) == changes
    assert json.loads(text)["lowered"][0]["exam"] == "today" and json.loads(text)["rescored"] == ["today"]
    older = json.loads(text)
    for change in older["lowered"]:
        del change["exam"]
    del older["rescored"]
    read = parse_changes(Path("changes.json"), json.dumps(older))
    assert read.lowered == tuple(ValueChange(c.retriever, c.metric, c.old, c.new) for c in changes.lowered)


def test_the_review_view_scores_each_files_rankings() -> None:
    """The metric table of `diff OLD NEW` too: label work moves no value, forged values hide no drop."""
    labelled = {**LABELS, "q1": {"a": 2, "b": 1, "z": 1}, "q2": {"c": 1, "w": 1}}
    lines, code = review(OLD, record("new.json", GOOD, questions(labelled)))
    assert code == 0 and lines[-1] == "0 metrics dropped, 0 improved", lines
    assert ("values scored here from each file's recorded rankings under today's exam (the labels new.json was "
            "recorded under)") in lines
    lines, code = review(OLD, record("new.json", WORSE, questions(), forge=OLD))
    assert code == 1 and lines[-1] == "2 metrics dropped, 0 improved", lines
    lines, code = review(record("old.json", GOOD, questions(), labels=False), record("new.json", WORSE, questions(),
                                                                                     forge=OLD))
    assert code == 0 and not any(line.startswith("values scored here") for line in lines)  # as stored, format 3
