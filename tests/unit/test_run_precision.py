"""Run files compared as trec_eval compares them: in single precision. And the one place the gate's
means differ from trec_eval's on purpose, stated exactly: questions judged all grade 0."""
from __future__ import annotations

from pathlib import Path

import pytest

from pytest_ragretrieval.evalset.records import Question
from pytest_ragretrieval.retrievers.run import read_trec, single
from pytest_ragretrieval.scoring.evaluate import score
from pytest_ragretrieval.scoring.metrics import MetricSpec, mrr

pytrec_eval = pytest.importorskip("pytrec_eval")


def test_scores_equal_in_single_precision_tie_and_go_to_the_greater_docno(tmp_path: Path) -> None:
    """20.000002 and 20.000001 are one float: trec_eval puts 573 before 184 (docno descending)."""
    path = tmp_path / "run.trec"
    path.write_text("1 Q0 184 1 20.000002 t\n1 Q0 573 2 20.000001 t\n")
    ranking = read_trec(path, "score", {"1"}, {"184", "573"})["1"]
    assert ranking == ["573", "184"]
    expected = pytrec_eval.RelevanceEvaluator({"1": {"184": 1}}, {"recip_rank"}).evaluate(
        {"1": {"184": 20.000002, "573": 20.000001}})["1"]["recip_rank"]
    assert mrr(ranking, {"184": 1}, 1000) == expected == 0.5


def test_scores_that_differ_in_single_precision_keep_their_order(tmp_path: Path) -> None:
    path = tmp_path / "run.trec"
    path.write_text("1 Q0 184 1 20.5 t\n1 Q0 573 2 20.25 t\n1 Q0 999 3 1e39 t\n1 Q0 000 4 -1e39 t\n")
    assert read_trec(path, "score", {"1"}, {"184", "573", "999", "000"})["1"] == ["999", "184", "573", "000"]
    assert single(1e39) == float("inf") and single(-1e39) == float("-inf") and single(0.1) != 0.1


def test_a_question_judged_all_grade_0_is_no_answer_here_and_zeros_for_trec_eval() -> None:
    """The documented difference: trec_eval -c counts a question that is in the qrels with grade 0
    only, scoring 0; the gate leaves it out of the answer means (it is a no-answer question, scored by
    abstention). So trec_eval's mean is exactly the gate's times N / (N + Z)."""
    questions = (Question("a", "x", {"c1": 1}), Question("b", "y", {"c2": 2, "c3": 1}), Question("z", "w", {"c4": 0}))
    rankings = {"a": ["c1", "c9"], "b": ["c3", "c9", "c2"], "z": ["c4", "c1"]}
    specs = (MetricSpec("precision", 5), MetricSpec("ndcg", 5), MetricSpec("recall", 5))
    ours = score("r", questions, rankings, specs)
    run = {qid: {docno: float(len(ranking) - rank) for rank, docno in enumerate(ranking)} for qid, ranking in rankings.items()}
    qrels = {q.id: dict(q.relevance) for q in questions}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"P_5", "ndcg_cut_5", "recall_5"}).evaluate(run)
    assert theirs["z"] == {"P_5": 0.0, "ndcg_cut_5": 0.0, "recall_5": 0.0}
    answered, all_grade_0 = 2, 1
    for label, measure in (("precision@5", "P_5"), ("ndcg@5", "ndcg_cut_5"), ("recall@5", "recall_5")):
        trec_mean = sum(values[measure] for values in theirs.values()) / len(theirs)
        assert ours.metrics[label] * answered / (answered + all_grade_0) == pytest.approx(trec_mean, abs=1e-6)
    assert ours.no_answer_total == 1
