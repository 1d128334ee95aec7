"""Scoring policy: no-answer questions apart, invalid rankings rejected, values rounded once."""
from __future__ import annotations

import pytest

from pytest_ragretrieval.core.errors import RetrieverError
from pytest_ragretrieval.evalset.records import Question
from pytest_ragretrieval.runner.execute import checked_ranking, run_retriever
from pytest_ragretrieval.scoring.evaluate import QuestionResult, RetrieverResult, mean, percentile, score
from pytest_ragretrieval.scoring.metrics import MetricSpec

QUESTIONS = (
    Question("q1", "a", {"c1": 1, "c2": 1}, ("semantic",)),
    Question("q2", "b", {"c3": 2}, ("keyword",)),
    Question("q3", "c", {}, ("no-answer",)),
    Question("q4", "d", {"c4": 0}, ("no-answer",)),
)
SPECS = (MetricSpec("precision", 2), MetricSpec("recall", 2), MetricSpec("ndcg", 2))
KNOWN = {"c1", "c2", "c3", "c4", "c5"}


def scored(result: RetrieverResult, question_id: str) -> QuestionResult:
    found = result.question(question_id)
    assert found is not None, question_id
    return found


def test_no_answer_questions_are_left_out_of_the_means_and_counted_apart() -> None:
    result = score("r", QUESTIONS, {"q1": ["c1", "c5"], "q2": ["c3"], "q3": [], "q4": ["c4"]}, SPECS)
    assert result.metrics == {"precision@2": 0.5, "recall@2": 0.75, "ndcg@2": mean([0.6131471927654584, 1.0])}
    assert (result.no_answer_total, result.no_answer_empty) == (2, 1)
    assert scored(result, "q3").values == {} and scored(result, "q4").ranking == ("c4",)


def test_means_per_tag_cover_only_answerable_questions() -> None:
    result = score("r", QUESTIONS, {"q1": ["c1", "c2"], "q2": []}, SPECS)
    assert result.tags == {
        "keyword": {"precision@2": 0.0, "recall@2": 0.0, "ndcg@2": 0.0},
        "semantic": {"precision@2": 1.0, "recall@2": 1.0, "ndcg@2": 1.0},
    }


def test_values_are_rounded_to_six_decimals() -> None:
    result = score("r", QUESTIONS[:1], {"q1": ["c1"]}, (MetricSpec("precision", 3),))
    assert scored(result, "q1").values == {"precision@3": 0.333333}
    assert result.metrics == {"precision@3": 0.333333}


def test_a_question_missing_from_the_rankings_scores_as_an_empty_result() -> None:
    result = score("r", QUESTIONS[:2], {"q1": ["c1"]}, SPECS)
    assert scored(result, "q2").ranking == () and scored(result, "q2").values["recall@2"] == 0.0


@pytest.mark.parametrize(
    ("returned", "message"),
    [
        (["c1", "c1"], "retriever 'r' on question 'q1': returned chunk id 'c1' twice"),
        (["c9"], "retriever 'r' on question 'q1': returned unknown chunk id 'c9'"),
        ([1], "retriever 'r' on question 'q1': chunk ids must be strings, got 1"),
        ("c1", "retriever 'r' on question 'q1': expected a sequence of chunk ids, got str"),
        (None, "retriever 'r' on question 'q1': expected a sequence of chunk ids, got NoneType"),
    ],
)
def test_invalid_rankings_are_errors_of_the_retriever(returned: object, message: str) -> None:
    with pytest.raises(RetrieverError) as error:
        checked_ranking("r", QUESTIONS[0], returned, 5, KNOWN)
    assert str(error.value) == message


def test_a_ranking_is_cut_to_the_depth_asked_for_before_it_is_checked() -> None:
    assert checked_ranking("r", QUESTIONS[0], ("c1", "c2", "c2"), 2, KNOWN) == ("c1", "c2")
    assert checked_ranking("r", QUESTIONS[0], iter(["c3"]), 2, KNOWN) == ("c3",)


def test_run_asks_for_the_depth_and_times_each_question() -> None:
    asked = []

    def retrieve(query: str, k: int) -> list[str]:
        asked.append((query, k))
        return ["c1", "c2", "c3"][:k]

    rankings, latencies = run_retriever("r", retrieve, QUESTIONS, 2, KNOWN)
    assert asked == [("a", 2), ("b", 2), ("c", 2), ("d", 2)]
    assert rankings["q1"] == ("c1", "c2") and set(latencies) == {"q1", "q2", "q3", "q4"}
    assert all(value >= 0 for value in latencies.values())


def test_nearest_rank_percentile() -> None:
    assert percentile([], 0.5) == 0.0
    assert percentile([5.0], 0.95) == 5.0
    values = [float(v) for v in range(1, 21)]
    assert percentile(values, 0.5) == 10.0
    assert percentile(values, 0.95) == 19.0
    assert percentile(list(reversed(values)), 0.95) == 19.0
