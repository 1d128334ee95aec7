"""The exam as a value (issue 48, item 1): built from today's eval set or from what a baseline keeps, with its
provenance, cut to one chunking, compared question by question."""
from __future__ import annotations

from pytest_ragretrieval.bar.exam import Exam
from pytest_ragretrieval.baseline.fingerprint import questions_record
from pytest_ragretrieval.evalset.records import Question, Span

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
