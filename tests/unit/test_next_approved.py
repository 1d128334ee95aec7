"""The update rule takes data, not the judge (issue 48, item 2): `bar/approved.py`'s `next_approved` gets the
baseline's entry, today's scored rankings, the questions compared, each exam's differences from the bar and
whether a verdict failed, so the gate's update and the review call one rule. No `Judge` is built here."""
from __future__ import annotations

from pytest_ragretrieval.bar.approved import next_approved, raises
from pytest_ragretrieval.baseline.format import Recorded, RecordedQuestion
from pytest_ragretrieval.evalset.records import Question
from pytest_ragretrieval.scoring.evaluate import score
from pytest_ragretrieval.scoring.metrics import MetricSpec

SPECS = [MetricSpec.parse("recall", 2)]
QUESTIONS = [Question("q1", "a", {"g1": 1}), Question("q2", "b", {"g2": 1}), Question("q3", "c", {"g3": 1})]
TODAY = score("one", QUESTIONS, {"q1": ["x", "g1"], "q2": ["g2", "x"], "q3": ["x", "y"]}, SPECS)
ENTRY = Recorded(
    metrics={"recall@2": 2 / 3},
    questions={"q1": RecordedQuestion(("g1", "x"), {"recall@2": 1.0}), "q2": RecordedQuestion(("g2", "y"), {
        "recall@2": 1.0}), "q3": RecordedQuestion(("y", "x"), {"recall@2": 0.0})},
    approved={"q3": ("g3", "x")}, bar={"recall@2": {"q3": 1.0}},
)
TOLERANCE = {"recall@2": 0.05}


def test_a_passing_update_keeps_the_approved_rankings_that_differ_and_the_kept_value_bar() -> None:
    kept, bars = next_approved(ENTRY, TODAY, {"q1", "q2", "q3"}, [{"recall@2": 0.0}], TOLERANCE, lowered=False)
    assert kept == {"q1": ("g1", "x"), "q2": ("g2", "y"), "q3": ("g3", "x")}
    assert bars == {"recall@2": {"q3": 1.0}}


def test_a_question_no_longer_compared_takes_today_s_ranking() -> None:
    kept, bars = next_approved(ENTRY, TODAY, {"q1", "q2"}, [{"recall@2": 0.0}], TOLERANCE, lowered=False)
    assert kept == {"q1": ("g1", "x"), "q2": ("g2", "y")} and bars == {}


def test_raising_under_every_exam_or_lowering_takes_today_s_rankings_whole() -> None:
    assert next_approved(ENTRY, TODAY, {"q1", "q2", "q3"}, [{"recall@2": 0.2}], TOLERANCE, False) == ({}, {})
    assert next_approved(ENTRY, TODAY, {"q1", "q2", "q3"}, [{"recall@2": 0.0}], TOLERANCE, True) == ({}, {})
    assert next_approved(ENTRY, TODAY, {"q1"}, [{"recall@2": 0.2}, {"recall@2": 0.01}], TOLERANCE, False)[0] == {
        "q1": ("g1", "x")}


def test_raises_needs_a_rise_past_the_tolerance_and_no_drop_under_every_exam() -> None:
    tolerances = {"ndcg@2": 0.0, "recall@2": 0.05}
    assert raises([{"recall@2": 0.06, "ndcg@2": 0.0}], tolerances)
    assert not raises([{"recall@2": 0.05}], tolerances)
    assert not raises([{"recall@2": 0.2, "ndcg@2": -1e-6}], tolerances)
    assert not raises([{"recall@2": 0.2}, {"recall@2": 0.0}], tolerances)
    assert raises([{"recall@2": 0.2}, {"ndcg@2": 1e-3}], tolerances)
