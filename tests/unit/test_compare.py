"""MetricCheck: the tolerance boundary and the list of questions that dropped."""
from __future__ import annotations

from pytest_ragretrieval.baseline.format import Recorded, RecordedQuestion
from pytest_ragretrieval.gate.checks import MetricCheck, drops
from pytest_ragretrieval.scoring.evaluate import QuestionResult, RetrieverResult
from pytest_ragretrieval.scoring.metrics import MetricSpec

SPEC = MetricSpec("ndcg", 5)


def result(mean: float, per_question: dict[str, float]) -> RetrieverResult:
    questions = tuple(QuestionResult(q, (), {"ndcg@5": v}) for q, v in per_question.items())
    return RetrieverResult("r", {"ndcg@5": mean}, {}, questions, 0, 0)


def recorded(mean: float, per_question: dict[str, float]) -> Recorded:
    return Recorded({"ndcg@5": mean}, {q: RecordedQuestion((), {"ndcg@5": v}) for q, v in per_question.items()})


def test_a_value_exactly_at_baseline_minus_tolerance_passes() -> None:
    outcome = MetricCheck("r", SPEC, 0.1).evaluate(recorded(0.8, {"q1": 0.8}), result(0.7, {"q1": 0.7}))
    assert outcome.passed


def test_a_value_just_below_fails_with_both_values() -> None:
    outcome = MetricCheck("r", SPEC, 0.1).evaluate(recorded(0.8, {"q1": 0.8}), result(0.699999, {"q1": 0.699999}))
    assert not outcome.passed
    assert outcome.summary == "ndcg@5 of 'r' fell from 0.8000 to 0.7000 (-0.1000, tolerance 0.1000)"


def test_an_improvement_passes_and_says_so() -> None:
    outcome = MetricCheck("r", SPEC, 0.0).evaluate(recorded(0.5, {"q1": 0.5}), result(0.75, {"q1": 0.75}))
    assert outcome.passed and outcome.summary == "ndcg@5 of 'r': 0.7500 (+0.2500 against 0.5000)"


def test_dropped_questions_worst_first_then_by_id() -> None:
    old = recorded(1.0, {"q1": 1.0, "q2": 1.0, "q3": 1.0, "q4": 0.5, "q5": 1.0})
    new = result(0.6, {"q1": 0.5, "q2": 0.0, "q3": 0.5, "q4": 0.75, "q5": 1.0})
    every = {"q1", "q2", "q3", "q4", "q5"}
    assert [(d.question, d.delta) for d in drops("ndcg@5", old, new, every)] == [("q2", -1.0), ("q1", -0.5), ("q3", -0.5)]
    assert [d.question for d in drops("ndcg@5", old, new, every - {"q2"})] == ["q1", "q3"]
    outcome = MetricCheck("r", SPEC, 0.0).evaluate(old, new)
    assert outcome.lines[1:] == [
        "questions that dropped, worst first:",
        "  q2: 1.0000 -> 0.0000 (-1.0000)",
        "  q1: 1.0000 -> 0.5000 (-0.5000)",
        "  q3: 1.0000 -> 0.5000 (-0.5000)",
    ]


def test_long_drop_lists_are_cut() -> None:
    ids = [f"q{i:02d}" for i in range(15)]
    outcome = MetricCheck("r", SPEC, 0.0).evaluate(recorded(1.0, dict.fromkeys(ids, 1.0)), result(0.0, dict.fromkeys(ids, 0.0)))
    assert outcome.lines[-1] == "  ... and 5 more" and len(outcome.lines) == 13


def test_a_metric_missing_from_the_entry() -> None:
    outcome = MetricCheck("r", MetricSpec("mrr", 5), 0.0).evaluate(recorded(1.0, {}), result(1.0, {}))
    assert not outcome.passed and outcome.summary.startswith("mrr@5 of retriever 'r' is not in the baseline;")


def test_a_metric_recorded_at_another_cutoff_is_named() -> None:
    """A cutoff is part of the yardstick: recall@10 recorded, recall@20 asked, the item says which is held."""
    old = Recorded({"ndcg@10": 1.0}, {"q1": RecordedQuestion((), {"ndcg@10": 1.0})})
    outcome = MetricCheck("r", SPEC, 0.0).evaluate(old, result(1.0, {"q1": 1.0}))
    assert not outcome.passed and outcome.summary == (
        "ndcg@5 of retriever 'r' is not in the baseline (it holds ndcg@10: a value at another cutoff measures "
        "something else); record it with `pytest --rag-update-baseline -k r`"
    )


def test_means_over_the_questions_both_share_and_the_whole_set_beside_them() -> None:
    """q3 is new today: the means compared are over q1 and q2 ((1 + 0.5) / 2 = 0.75 against (1 + 1) / 2 = 1),
    and today's mean over all three ((1 + 0.5 + 0) / 3 = 0.5) is shown too; q4, gone today, is not compared."""
    old = recorded(0.75, {"q1": 1.0, "q2": 1.0, "q4": 0.25})
    new = result(0.5, {"q1": 1.0, "q2": 0.5, "q3": 0.0})
    outcome = MetricCheck("r", SPEC, 0.0, changes=("r.k1 1.5 -> 1.2",)).evaluate(old, new, None, {"q1", "q2"})
    assert outcome.summary == (
        "ndcg@5 of 'r' fell from 1.0000 to 0.7500 (-0.2500, tolerance 0.0000) over the 2 questions both runs share "
        "(today's mean over the whole eval set: 0.5000) after a change of r.k1 1.5 -> 1.2"
    )
    assert outcome.lines[1:] == ["questions that dropped, worst first:", "  q2: 1.0000 -> 0.5000 (-0.5000)"]


def test_a_value_that_holds_across_a_change_passes_and_names_it() -> None:
    old, new = recorded(1.0, {"q1": 1.0}), result(1.0, {"q1": 1.0})
    outcome = MetricCheck("r", SPEC, 0.0, changes=("r.weights [1.0, 0.5] -> [2.0, 1.0]",)).evaluate(old, new)
    assert outcome.passed
    assert outcome.summary == "ndcg@5 of 'r': 1.0000 (+0.0000 against 1.0000) after a change of r.weights [1.0, 0.5] -> [2.0, 1.0]"


def test_no_question_in_common_passes_with_a_note() -> None:
    outcome = MetricCheck("r", SPEC, 0.0).evaluate(recorded(1.0, {"q1": 1.0}), result(0.0, {"q2": 0.0}))
    assert outcome.passed and outcome.summary == "ndcg@5 of 'r': 0.0000, no question in common with the baseline to compare it on"
