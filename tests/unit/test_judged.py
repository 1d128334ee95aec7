"""judged@k (ir_measures' Judged@k) and the eval set's explicit negative judgments (`not_relevant`)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_ragretrieval.baseline.fingerprint import questions_record
from pytest_ragretrieval.core.errors import FixtureError
from pytest_ragretrieval.evalset.jsonl import load_evalset
from pytest_ragretrieval.evalset.records import Chunk
from pytest_ragretrieval.scoring.evaluate import score
from pytest_ragretrieval.scoring.metrics import METRICS, MetricSpec, judged, precision

CORPUS = tuple(Chunk(cid, f"text of {cid}") for cid in ("a", "b", "c", "d", "e"))


def write(path: Path, *rows: object) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("ranking", "k", "expected"),
    [
        (["a", "x", "b", "y", "z"], 5, 2 / 5),  # a (grade 2) and b (grade 0) are judged; x, y, z are not
        (["x", "y", "a"], 2, 0.0),  # the judged chunk sits below the cutoff
        (["b", "x"], 5, 1 / 2),  # a ranking shorter than k is divided by its length, as ir_measures does
        ([], 3, 0.0),  # an empty ranking judges nothing (ir_measures cannot score it)
        (["b"], 1, 1.0),  # a grade-0 judgment counts as judged though it is no hit
    ],
)
def test_judged_at_k_by_hand(ranking: list[str], k: int, expected: float) -> None:
    relevance = {"a": 2, "b": 0}
    assert judged(ranking, relevance, k) == pytest.approx(expected)


def test_judged_is_precision_with_every_judgment_counted_relevant_on_a_full_ranking() -> None:
    ranking, relevance = ["a", "x", "b", "c"], {"a": 3, "b": 0, "c": 0, "q": 1}
    assert judged(ranking, relevance, 4) == precision(ranking, dict.fromkeys(relevance, 1), 4) == 0.75


def test_ir_measures_own_case_a_4_chunk_ranking_at_k_10() -> None:
    """ir_measures' test_judged expects 1/4 for a 4-document run with one judged document at k = 10; the old
    division by k gave 0.1."""
    assert judged(["a", "x", "y", "z"], {"a": 0}, 10) == 0.25


IDS = [f"d{i}" for i in range(12)]


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_judged_is_ir_measures_judged_on_generated_runs(data: st.DataObject) -> None:
    """ir_measures itself as the oracle, on rankings shorter and longer than k, grade-0 judgments included
    (the old division by k fails here as soon as a ranking is shorter than k)."""
    ir_measures = pytest.importorskip("ir_measures")
    k = data.draw(st.integers(1, 15), label="k")
    queries = data.draw(st.lists(st.tuples(
        st.lists(st.sampled_from(IDS), min_size=1, max_size=12, unique=True),
        st.dictionaries(st.sampled_from(IDS), st.integers(0, 3), min_size=1)), min_size=1, max_size=4), label="run")
    qrels = {f"q{n}": dict(relevance) for n, (_, relevance) in enumerate(queries)}
    run = {f"q{n}": {cid: float(len(ranking) - rank) for rank, cid in enumerate(ranking)}
           for n, (ranking, _) in enumerate(queries)}
    expected = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.Judged @ k], qrels, run)}
    assert {f"q{n}": judged(ranking, relevance, k) for n, (ranking, relevance) in enumerate(queries)} == \
        pytest.approx(expected)


def test_judged_is_registered_as_a_plain_metric() -> None:
    spec = MetricSpec.parse("judged@5", 10)
    assert spec.label == "judged@5" and not METRICS["judged"].hit and not spec.on_no_answer


def test_not_relevant_is_grade_zero_and_judged(tmp_path: Path) -> None:
    path = write(tmp_path / "e.jsonl", {"id": "q1", "query": "x", "relevant": ["a"], "not_relevant": ["b", "c"]})
    (question,) = load_evalset(path, CORPUS)
    assert question.relevance == {"a": 1, "b": 0, "c": 0} and question.relevant_ids == {"a"}
    result = score("r", [question], {"q1": ["b", "d", "a", "c", "e"]}, [MetricSpec("judged", 5), MetricSpec("precision", 5)])
    assert result.metrics == {"judged@5": 0.6, "precision@5": 0.2}


def test_not_relevant_grades_as_the_grade_zero_form_did(tmp_path: Path) -> None:
    """Sugar only: the same judgments, so the same fingerprint (no change of the grading rules)."""
    sugar = write(tmp_path / "a.jsonl", {"id": "q1", "query": "x", "relevant": ["a"], "not_relevant": ["b"]})
    plain = write(tmp_path / "b.jsonl", {"id": "q1", "query": "x", "relevant": {"a": 1, "b": 0}})
    assert questions_record(load_evalset(sugar, CORPUS)) == questions_record(load_evalset(plain, CORPUS))


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"relevant": ["a"], "not_relevant": ["a"]},
         "e.jsonl:2: chunk id 'a' is both in 'relevant' and in 'not_relevant'; keep one"),
        ({"relevant": {"a": 0}, "not_relevant": ["a"]},
         "e.jsonl:2: chunk id 'a' is both in 'relevant' and in 'not_relevant'; keep one"),
        ({"relevant_text": ["text of b"], "not_relevant": ["b"]},
         "e.jsonl:2: chunk id 'b' is in 'not_relevant' but a 'relevant_text' snippet matches it; keep one"),
        ({"relevant": ["a"], "not_relevant": ["zz"]}, "e.jsonl:2: unknown chunk id 'zz' in 'not_relevant'"),
        ({"relevant": ["a"], "not_relevant": ["b", "b"]}, "e.jsonl:2: chunk id 'b' listed twice in 'not_relevant'"),
        ({"relevant": ["a"], "not_relevant": "b"}, "e.jsonl:2: 'not_relevant' must be a list of chunk id strings"),
        ({"relevant": ["a"], "machine_labels": {"b": {"model": "m", "prompt_sha256": "p", "date": "d"}}},
         "e.jsonl:2: 'machine_labels' names 'b', which this line does not judge"),
        ({"relevant": ["a"], "machine_labels": {"a": {"model": "m"}}},
         "e.jsonl:2: 'machine_labels.a' must be an object of non-empty strings model, prompt_sha256, date"),
        ({"relevant": ["a"], "machine_labels": ["a"]}, "e.jsonl:2: 'machine_labels' must be an object"),
    ],
)
def test_bad_judgment_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, row: dict[str, object], message: str) -> None:
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path / "e.jsonl", {"id": "q1", "query": "x", "relevant": ["a"]}, {"id": "q2", "query": "y", **row})
    with pytest.raises(FixtureError) as error:
        load_evalset(path, CORPUS)
    assert str(error.value).startswith(message) and "\n" not in str(error.value)


def test_machine_labels_are_counted_in_the_fingerprint(tmp_path: Path) -> None:
    provenance = {"model": "m", "prompt_sha256": "0" * 64, "date": "2026-01-01"}
    path = write(tmp_path / "e.jsonl",
                 {"id": "q1", "query": "x", "relevant": {"a": 2}, "not_relevant": ["b"],
                  "machine_labels": {"a": provenance, "b": provenance}},
                 {"id": "q2", "query": "y", "relevant": ["c"]})
    questions = load_evalset(path, CORPUS)
    assert questions[0].machine_labels == {"a", "b"}
    assert questions_record(questions)["machine_labels"] == 2
    assert "machine_labels" not in questions_record(questions[1:])


def test_a_drop_whose_new_top_k_holds_unjudged_chunks_is_named_a_possible_false_miss() -> None:
    """q1 and q2 dropped; q1's new top 2 holds 'x', which nobody judged; q2's holds only judged chunks;
    q3 ranks an unjudged chunk but did not drop."""
    from pytest_ragretrieval.baseline.format import Recorded, RecordedQuestion
    from pytest_ragretrieval.gate.checks import MetricCheck
    from pytest_ragretrieval.scoring.evaluate import QuestionResult, RetrieverResult

    spec = MetricSpec("ndcg", 2)
    old = Recorded({"ndcg@2": 1.0}, {q: RecordedQuestion(("a",), {"ndcg@2": 1.0}) for q in ("q1", "q2", "q3")})
    new = RetrieverResult("r", {"ndcg@2": 0.5}, {}, (
        QuestionResult("q1", ("x", "a", "y"), {"ndcg@2": 0.63}),
        QuestionResult("q2", ("b", "a"), {"ndcg@2": 0.63}),
        QuestionResult("q3", ("a", "z"), {"ndcg@2": 1.0}),
    ), 0, 0)
    judged_ids = {"q1": {"a"}, "q2": {"a", "b"}, "q3": {"a"}}
    outcome = MetricCheck("r", spec, 0.0, judged=judged_ids).evaluate(old, new)
    assert not outcome.passed
    assert outcome.lines[-1] == ("1 of the 2 questions that dropped rank unjudged chunks new to their top 2: "
                                 "possibly false misses; see `ragretrieval pool`")
    fully = MetricCheck("r", spec, 0.0, judged={**judged_ids, "q1": {"a", "x"}}).evaluate(old, new)
    assert fully.lines[-1] == "  q2: 1.0000 -> 0.6300 (-0.3700)"


def test_when_every_question_that_dropped_ranks_unjudged_chunks_the_line_says_all() -> None:
    from pytest_ragretrieval.gate.checks import Drop, unjudged_line
    from pytest_ragretrieval.scoring.evaluate import QuestionResult, RetrieverResult

    result = RetrieverResult("r", {}, {}, (QuestionResult("q1", ("x",), {}), QuestionResult("q2", ("y", "a"), {})), 0, 0)
    found = [Drop("q1", 1.0, 0.0), Drop("q2", 1.0, 0.5)]
    assert unjudged_line(found, result, {"q1": {"a"}, "q2": {"a"}}, 5) == [
        "all 2 questions that dropped rank unjudged chunks new to their top 5: possibly false misses; see `ragretrieval pool`"]
    assert unjudged_line(found[:1], result, {"q1": {"a"}}, 5) == [
        "the question that dropped ranks unjudged chunks new to their top 5: possibly false misses; see `ragretrieval pool`"]
    assert unjudged_line(found, result, {"q1": {"x"}, "q2": {"a", "y"}}, 5) == []


@pytest.mark.parametrize(("metrics", "shown"), [
    ('["ndcg", "recall"]', ["ndcg@3", "recall@3", "judged@3"]),  # informational: scored and shown, not gated
    ('["ndcg", "judged@5"]', ["ndcg@3", "judged@5"]),  # listed: gated and recorded like the others
])
def test_judged_is_shown_always_and_gated_when_listed(tmp_path: Path, metrics: str, shown: list[str]) -> None:
    from pytest_ragretrieval.config.settings import load_config

    (tmp_path / "rag.toml").write_text(f'chunks = "c.jsonl"\nevalset = "e.jsonl"\nk = 3\nmetrics = {metrics}\n'
                                       '[retrievers.one]\ntype = "bm25"\n', encoding="utf-8")
    config = load_config(str(tmp_path / "rag.toml"), tmp_path)
    assert [spec.label for spec in config.shown] == shown
    assert [spec.label for spec in config.metrics] == shown[:2]


def test_the_false_miss_line_needs_unjudged_chunks_new_to_the_top_k_and_no_ann_loss() -> None:
    """Every failure said "possibly false misses", a real ANN loss (ann_recall 0.40) included, and an
    unjudged chunk the baseline's top k already held counted too (issue 44)."""
    from pytest_ragretrieval.baseline.format import RecordedQuestion
    from pytest_ragretrieval.gate.checks import Drop, unjudged_line
    from pytest_ragretrieval.scoring.evaluate import QuestionResult, RetrieverResult

    result = RetrieverResult("r", {}, {}, (QuestionResult("q1", ("x", "a"), {}),), 0, 0)
    found, judged = [Drop("q1", 1.0, 0.5)], {"q1": {"a"}}
    line = ["the question that dropped ranks unjudged chunks new to their top 5: possibly false misses; "
            "see `ragretrieval pool`"]
    assert unjudged_line(found, result, judged, 5, {"q1": RecordedQuestion(("a",), {})}, 1.0) == line
    assert unjudged_line(found, result, judged, 5, {"q1": RecordedQuestion(("a",), {})}, 0.4) == []
    assert unjudged_line(found, result, judged, 5, {"q1": RecordedQuestion(("a", "x"), {})}) == []
