"""The exam as a value (issue 48, item 1): built from today's eval set or from what a baseline keeps, with its
provenance, cut to one chunking, compared question by question."""
from __future__ import annotations

from pathlib import Path

from pytest_ragretrieval.bar.exam import Exam, Scorer
from pytest_ragretrieval.bar.sides import sides
from pytest_ragretrieval.baseline.exams import BASE, TODAY
from pytest_ragretrieval.baseline.fingerprint import questions_record
from pytest_ragretrieval.baseline.format import (
    Baseline,
    Recorded,
    RecordedQuestion,
    baseline_record,
    read,
    retriever_record,
)
from pytest_ragretrieval.baseline.since import since
from pytest_ragretrieval.evalset.records import Question, Span
from pytest_ragretrieval.record.codec import encode
from pytest_ragretrieval.review.rescore import Today, exams
from pytest_ragretrieval.scoring.evaluate import score
from pytest_ragretrieval.scoring.metrics import MetricSpec

QUESTIONS = (
    Question("q1", "alpha", {"d.md#0": 2, "d.md#big#0": 1, "d.md#1": 0}, spans=(Span("d.md", 0, 5, 2),)),
    Question("q2", "beta", {}),
)


def test_a_baseline_s_exam_is_today_s_as_recorded_without_the_queries() -> None:
    today = Exam.of_today(QUESTIONS, "today's exam")
    kept = Exam.of_baseline({"questions": questions_record(QUESTIONS)}, "the base's exam")
    assert kept is not None and kept.source == "the base's exam"
    assert {qid: (dict(q.relevance), q.spans, q.answerable) for qid, q in kept.questions.items()} == {
        qid: (dict(q.relevance), q.spans, q.answerable) for qid, q in today.questions.items()}
    assert not today.differs(kept, ["q1", "q2"])
    assert Exam.of_baseline({"questions": {"sha256": "e" * 64, "digests": {}}}, "a format-3 file") is None


def test_an_exam_is_cut_to_one_chunking_and_a_regrade_differs() -> None:
    today = Exam.of_today(QUESTIONS, "today's exam")
    assert dict(today.cut("big").questions["q1"].relevance) == {"d.md#big#0": 1}
    assert dict(today.cut("").questions["q1"].relevance) == {"d.md#0": 2, "d.md#1": 0}
    assert today.cut(None) is today
    regraded = Exam.of_today([Question("q1", "alpha", {"d.md#0": 1, "d.md#big#0": 1, "d.md#1": 0},
                                       spans=QUESTIONS[0].spans)], "today's exam")
    assert today.differs(regraded, ["q1"]) and not today.differs(regraded, ["q2"])


def test_an_exam_scores_the_rankings_of_the_questions_it_asks_in_the_order_given() -> None:
    exam = Exam.of_today(QUESTIONS, "today's exam")
    scorer = Scorer((MetricSpec.parse("recall", 2),))
    found = exam.score(scorer, "one", {"q1": ["d.md#0", "x"], "q2": ["y"]}, ["q9", "q1"])
    assert [(q.id, dict(q.values)) for q in found.questions] == [("q1", {"recall@2": 0.5})]
    assert [q.id for q in exam.only(["q2", "q1", "q9"]).questions.values()] == ["q2", "q1"]
    assert exam.only(["q2"]).source == "today's exam" and "q2" in exam and "q9" not in exam
    assert exam["q1"] is QUESTIONS[0] and list(exam) == ["q1", "q2"]


def test_each_side_is_its_exam_scoring_the_approved_rankings() -> None:
    """`bar/sides.py` takes the Exam values: today's side is today's exam's score of the approved rankings, and
    the base's side (its labels differ) the base's exam's, on the questions both ask."""
    specs = (MetricSpec.parse("recall", 2),)
    today = Exam.of_today([Question("q1", "a", {"g": 1}), Question("q2", "b", {"h": 1})], "today's exam")
    base = Exam.of_today([Question("q1", "", {"g": 1}), Question("q2", "", {"x": 1})], "the base's exam")
    approved = {"q1": ("g", "y"), "q2": ("x", "h")}
    entry = Recorded(metrics={"recall@2": 1.0}, questions={qid: RecordedQuestion(ranking, {"recall@2": 1.0})
                                                           for qid, ranking in approved.items()})
    scorer = Scorer(specs)
    ran = today.score(scorer, "one", {"q1": ["y", "z"], "q2": ["h", "z"]})
    found = sides("one", entry, ran, today, base, {"q1", "q2"}, scorer)
    assert [side.exam for side in found] == [TODAY, BASE]
    for side, exam in zip(found, (today, base), strict=True):
        assert dict(side.bar.metrics) == dict(exam.score(scorer, "one", approved).metrics)
    assert found[1].today.metrics["recall@2"] == 0.0, "today's rankings under the base's exam"
    assert len(sides("one", entry, ran, today, today.only(["q1", "q2"]), {"q1", "q2"}, scorer)) == 1


def test_the_review_holds_both_exams_as_values_with_their_provenance(tmp_path: Path) -> None:
    """`review/rescore.py`'s `exams` builds the Exam values (the base's from the old file, today's from the
    work tree's eval set, else from the new file), never dicts of questions."""
    asked = [Question("q1", "alpha", {"g": 1}), Question("q2", "beta", {"h": 1})]
    old, new = baseline(tmp_path / "old.json", asked), baseline(tmp_path / "new.json", asked)
    found = since(old.fingerprint, new.fingerprint, {"one"})
    scored = exams(old, new, Today(tuple(asked), "the eval set e.jsonl"), found)
    assert isinstance(scored.base, Exam) and isinstance(scored.today, Exam)
    assert scored.base.source.startswith("the labels ") and scored.base.source.endswith("old.json was recorded under")
    assert scored.today.source == "the eval set e.jsonl" and not scored.base.differs(scored.today, ["q1", "q2"])
    kept = exams(old, new, None, found).today
    assert isinstance(kept, Exam) and kept.source.endswith("new.json was recorded under")


def baseline(path: Path, asked: list[Question]) -> Baseline:
    result = score("one", asked, {"q1": ["g"], "q2": ["h"]}, [MetricSpec.parse("recall", 2)])
    fingerprint = {"yardstick": {"k": 2}, "questions": questions_record(asked), "retrievers": {"one": {}}}
    path.write_text(encode(baseline_record(2, fingerprint, {"one": retriever_record(result)})), encoding="utf-8")
    return read(path)
