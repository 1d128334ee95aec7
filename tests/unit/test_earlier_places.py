"""The bar's rankings after the corpus changed (documents mode): an approved ranking names chunks by id, and
an edited chunk's place today is not the one it was approved at, so the span metrics score a question's
approved top k only while none of its chunks changed; and a question whose gold spans moved with an
edited document is edited, not relabelled (the base's offsets point into the old text)."""
from __future__ import annotations

from pytest_ragretrieval.bar.exam import Exam, Scorer
from pytest_ragretrieval.bar.sides import sides
from pytest_ragretrieval.baseline.fingerprint import questions_record
from pytest_ragretrieval.baseline.format import Recorded, RecordedQuestion
from pytest_ragretrieval.baseline.since import CorpusChange, question_changes
from pytest_ragretrieval.evalset.records import Question, Span
from pytest_ragretrieval.scoring.evaluate import score
from pytest_ragretrieval.scoring.metrics import MetricSpec

SPECS = (MetricSpec.parse("char_recall@2", 2), MetricSpec.parse("recall@2", 2))
TODAY = {"d#0": Span("d", 0, 100), "d#1": Span("d", 150, 260), "d#2": Span("d", 260, 300)}
"""Today's chunks: d#1 was edited (it held [100, 200) when the ranking was approved)."""
QUESTIONS = (Question("q1", "a", {"d#1": 1}, spans=(Span("d", 120, 180),)),
             Question("q2", "b", {"d#0": 1}, spans=(Span("d", 20, 60),)))
EXAM = Exam.of_today(QUESTIONS, "today's exam")
APPROVED = {"q1": ("d#1", "d#0"), "q2": ("d#0", "d#2")}


def entry() -> Recorded:
    recorded = score("one", QUESTIONS, APPROVED, SPECS, spans={**TODAY, "d#1": Span("d", 100, 200)})
    return Recorded(metrics=dict(recorded.metrics),
                    questions={q.id: RecordedQuestion(q.ranking, dict(q.values)) for q in recorded.questions})


def test_an_edited_chunk_of_an_approved_ranking_takes_its_question_out_of_the_span_comparison() -> None:
    scorer = Scorer(SPECS, TODAY)
    today = scorer("one", QUESTIONS, APPROVED)
    naive = sides("one", entry(), today, EXAM, None, {"q1", "q2"}, scorer)[0]
    assert entry().questions["q1"].metrics["char_recall@2"] == 1.0, "approved where d#1 held the whole span"
    assert naive.bar.questions["q1"].metrics["char_recall@2"] == 0.5, "today's place of d#1 holds half of it"
    side = sides("one", entry(), today, EXAM, None, {"q1", "q2"}, scorer, scorer.without(["d#1"]))[0]
    assert "char_recall@2" not in side.bar.questions["q1"].metrics, "d#1 was approved at another place"
    assert side.bar.questions["q1"].metrics["recall@2"] == 1.0, "chunk-id metrics read ids, not places"
    assert side.bar.questions["q2"].metrics["char_recall@2"] == 1.0, "q2's top 2 holds no changed chunk"
    assert scorer.without([]) is scorer and Scorer(SPECS, None).without(None).places is None
    assert scorer.without(None).places == {}, "a changed corpus that is not itemized: no place is known"


def test_gold_spans_moved_by_an_edited_document_make_the_question_edited() -> None:
    before = questions_record(QUESTIONS)
    shifted = (QUESTIONS[0], Question("q2", "b", {"d#0": 1}, spans=(Span("d", 25, 65),)))
    after = questions_record(shifted)
    edited_corpus = question_changes(before, after, CorpusChange(3, 3, edited=("d#2",)))
    assert dict(edited_corpus.edited) == {"q2": "graded gold"} and edited_corpus.relabelled == ()
    by_hand = question_changes(before, after, None)
    assert by_hand.relabelled == ("q2",), "spans edited by hand over unchanged documents are label work"
