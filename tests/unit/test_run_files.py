"""`run` retrievers: TREC and JSON Lines run files, read as trec_eval reads them.

The conformance half reads trec_eval's own results.test and qrels.test (tests/unit/data/trec_eval/)
through the run reader and the project's metric functions and must print what trec_eval printed
per query (out.test.aq) and on average (out.test).
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from pytest_ragretrieval.core.errors import RetrieverError
from pytest_ragretrieval.retrievers.protocol import Query, ask
from pytest_ragretrieval.retrievers.run import RunRetriever, read_jsonl, read_trec
from pytest_ragretrieval.scoring.metrics import mrr, ndcg, precision

DATA = Path(__file__).parent / "data" / "trec_eval"


def _qrels() -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for line in (DATA / "qrels.test").read_text().splitlines():
        if line.strip():
            qid, _, docno, grade = line.split()
            qrels[qid][docno] = int(grade)
    return dict(qrels)


def _printed(name: str) -> dict[str, dict[str, str]]:
    printed: dict[str, dict[str, str]] = defaultdict(dict)
    for line in (DATA / name).read_text().splitlines():
        if line.strip():
            measure, qid, value = (part.strip() for part in line.split("\t"))
            printed[measure][qid] = value
    return dict(printed)


QRELS = _qrels()
DOCNOS = {line.split()[2] for line in (DATA / "results.test").read_text().splitlines() if line.strip()}
PER_QUERY = _printed("out.test.aq")
AVERAGED = _printed("out.test")
WHOLE_RUN = 1000
"""recip_rank is not cut in trec_eval (our mrr@k is); 1000 exceeds every ranking here."""


def _value(measure: str, ranking: list[str], relevance: dict[str, int]) -> float:
    if measure == "recip_rank":
        return mrr(ranking, relevance, WHOLE_RUN)
    family, _, cutoff = measure.rpartition("_")
    metric = {"P": precision, "ndcg_cut": ndcg}[family]
    return metric(ranking, relevance, int(cutoff))


MEASURES = ["P_5", "P_10", "P_15", "P_20", "recip_rank", "ndcg_cut_5", "ndcg_cut_10", "ndcg_cut_15", "ndcg_cut_20"]


@pytest.mark.parametrize("order", ["score", "rank"])
@pytest.mark.parametrize("measure", MEASURES)
def test_results_test_reproduces_trec_eval_per_query(measure: str, order: str) -> None:
    rankings = read_trec(DATA / "results.test", order, set(QRELS), DOCNOS)
    ours = {qid: f"{_value(measure, ranking, QRELS[qid]):.4f}" for qid, ranking in rankings.items()}
    assert ours == {qid: value for qid, value in PER_QUERY[measure].items() if qid != "all"}


@pytest.mark.parametrize("measure", ["P_5", "P_10", "recip_rank"])
def test_results_test_reproduces_out_test_averages(measure: str) -> None:
    rankings = read_trec(DATA / "results.test", "score", set(QRELS), DOCNOS)
    values = [_value(measure, rankings[qid], QRELS[qid]) for qid in sorted(rankings)]
    assert f"{sum(values) / len(values):.4f}" == AVERAGED[measure]["all"]


def test_ties_go_to_the_greater_docno_as_in_trec_eval(tmp_path: Path) -> None:
    """trec_eval's comp_sim_docno: score descending, then strcmp(docno2, docno1).

    q301 of results.test has tied scores and a relevant document tied with an irrelevant one;
    printed to 4 decimals no measure tells the two tie rules apart, so the full-precision nDCG of
    pytrec_eval (trec_eval's own code) does.
    """
    pytrec_eval = pytest.importorskip("pytrec_eval")
    scores: dict[str, dict[str, float]] = defaultdict(dict)
    for line in (DATA / "results.test").read_text().splitlines():
        if line.strip():
            fields = line.split()
            scores[fields[0]][fields[2]] = float(fields[4])
    expected = pytrec_eval.RelevanceEvaluator(QRELS, {"ndcg"}).evaluate(dict(scores))["301"]["ndcg"]
    rankings = read_trec(DATA / "results.test", "score", set(QRELS), DOCNOS)
    ascending = [docno for _, docno in sorted((-score, docno) for docno, score in scores["301"].items())]
    assert ndcg(rankings["301"], QRELS["301"], WHOLE_RUN) == pytest.approx(expected, abs=1e-9)
    assert ndcg(ascending, QRELS["301"], WHOLE_RUN) != pytest.approx(expected, abs=1e-6)
    path = tmp_path / "tie.trec"
    path.write_text("q1 Q0 a 1 0.5 t\nq1 Q0 c 2 0.5 t\nq1 Q0 b 3 0.9 t\n")
    assert read_trec(path, "score", {"q1"}, {"a", "b", "c"})["q1"] == ["b", "c", "a"]
    assert read_trec(path, "rank", {"q1"}, {"a", "b", "c"})["q1"] == ["a", "c", "b"]


def test_a_question_missing_from_the_run_scores_zero_like_trec_eval_c(tmp_path: Path) -> None:
    """trec_eval averages over the queries in the run; -c (and the gate) also counts the others as 0."""
    path = tmp_path / "no302.trec"
    lines = [line for line in (DATA / "results.test").read_text().splitlines() if not line.startswith("302")]
    path.write_text("\n".join(lines) + "\n")
    retriever = RunRetriever("r", "no302.trec", read_trec(path, "score", set(QRELS), DOCNOS), len(QRELS))
    values = {qid: precision(ask(retriever, Query(qid, "text"), 5), QRELS[qid], 5) for qid in sorted(QRELS)}
    assert values["302"] == 0.0 and retriever.missing == {"302"}
    printed = {qid: float(PER_QUERY["P_5"][qid]) for qid in ("301", "303")}
    assert sum(values.values()) / 3 == pytest.approx(sum(printed.values()) / 3)  # trec_eval -c
    assert (values["301"] + values["303"]) / 2 == pytest.approx(sum(printed.values()) / 2)  # trec_eval's default
    assert retriever.notes() == [
        "1 of 3 questions are not in no302.trec and got an empty ranking (scored 0, as trec_eval -c does): 302"
    ]


def test_a_run_answers_by_question_id_not_by_text() -> None:
    retriever = RunRetriever("r", "run.jsonl", {"q1": ["a", "b"], "q2": ["b"]}, 2)
    assert ask(retriever, Query("q1", "same text"), 1) == ["a"]
    assert ask(retriever, Query("q2", "same text"), 5) == ["b"]
    with pytest.raises(RetrieverError, match=r"^retriever 'r' reads run.jsonl by question id and cannot answer a query text"):
        retriever("same text", 5)
    assert retriever.notes() == []


def test_jsonl_runs_keep_their_order(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text('{"id": "q1", "ranking": ["c", "a"]}\n\n{"id": "q2", "ranking": []}\n')
    assert read_jsonl(path, {"q1", "q2", "q3"}, {"a", "b", "c"}) == {"q1": ["c", "a"], "q2": []}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("q1 Q0 a 1 0.5\n", "run.trec:1: expected 6 fields 'qid Q0 docno rank score tag', got 5"),
        ("q1 Q0 a 1 high t\n", "run.trec:1: score 'high' is not a number"),
        ("q1 Q0 a x 0.5 t\n", "run.trec:1: rank 'x' is not an integer a float holds (ASCII digits, up to about 1.8e308)"),
        # issue 32: the one rule for integers, in every reader
        ("q1 Q0 a " + "9" * 320 + " 0.5 t\n", "run.trec:1: rank '999999999999999999999999999999... (320 characters)' "
         "is not an integer a float holds (ASCII digits, up to about 1.8e308)"),
        ("q1 Q0 a " + "9" * 5000 + " 0.5 t\n", "run.trec:1: rank '999999999999999999999999999999... (5000 characters)' "
         "is not an integer a float holds (ASCII digits, up to about 1.8e308)"),
        ("q1 Q0 a 1_0 0.5 t\n", "run.trec:1: rank '1_0' is not an integer a float holds (ASCII digits, up to about 1.8e308)"),
        ("q1 Q0 a 1 nan t\n", "run.trec:1: score 'nan' is not finite"),
        ("\nq9 Q0 a 1 0.5 t\n", "run.trec:2: unknown question id 'q9'; a run must use the eval set's ids"),
        ("q1 Q0 zz 1 0.5 t\n", "run.trec:1: unknown chunk id 'zz'; a run must use the chunks file's ids"),
        ("q1 Q0 a 1 0.5 t\nq1 Q0 a 2 0.4 t\n", "run.trec:2: chunk 'a' appears twice for question 'q1' (first on line 1)"),
    ],
)
def test_trec_errors_name_file_and_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, message: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run.trec").write_text(text)
    with pytest.raises(RetrieverError) as info:
        read_trec(tmp_path / "run.trec", "score", {"q1"}, {"a", "b"})
    assert str(info.value) == message


def test_duplicate_ranks_are_an_error_only_when_ordering_by_rank(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run.trec").write_text("q1 Q0 a 1 0.5 t\nq1 Q0 b 1 0.4 t\n")
    assert read_trec(tmp_path / "run.trec", "score", {"q1"}, {"a", "b"})["q1"] == ["a", "b"]
    with pytest.raises(RetrieverError, match=r"^run.trec:2: rank 1 of question 'q1' is also on line 1;"):
        read_trec(tmp_path / "run.trec", "rank", {"q1"}, {"a", "b"})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"id": "q1", "ranking": ["a"]', "run.jsonl:1: not valid JSON"),
        ('{"id": "q1", "docs": ["a"]}', "run.jsonl:1: expected an object with exactly the keys 'id' and 'ranking', got ['docs', 'id']"),
        ('{"id": "q1", "ranking": "a"}', "run.jsonl:1: 'ranking' must be a list of chunk ids (strings)"),
        ('{"id": "q1", "ranking": ["a", "a"]}', "run.jsonl:1: chunk 'a' appears twice in the ranking of 'q1'"),
        ('{"id": "q1", "ranking": []}\n{"id": "q1", "ranking": []}', "run.jsonl:2: question 'q1' appears twice (first on line 1)"),
        ('{"id": "q2", "ranking": []}', "run.jsonl:1: unknown question id 'q2'"),
        ('{"id": "q1", "ranking": ["zz"]}', "run.jsonl:1: unknown chunk id 'zz'"),
    ],
)
def test_jsonl_errors_name_file_and_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, message: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run.jsonl").write_text(text + "\n")
    with pytest.raises(RetrieverError) as info:
        read_jsonl(tmp_path / "run.jsonl", {"q1"}, {"a", "b"})
    assert str(info.value).startswith(message)
