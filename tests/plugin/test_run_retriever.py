"""`run` retrievers and `signature = "question"` factories through the gate: asked by question id."""
from __future__ import annotations

import json

import pytest
from projects import GOLD, QUESTIONS, RUN, read_results, retriever, write_project


def jsonl_run(rankings: dict[str, list[str]]) -> str:
    return "".join(json.dumps({"id": qid, "ranking": ranking}) + "\n" for qid, ranking in rankings.items())


def test_a_jsonl_run_is_gated_and_missing_questions_are_counted(pytester: pytest.Pytester) -> None:
    partial = {qid: ranking for qid, ranking in GOLD.items() if qid not in ("q03", "q05")}
    (pytester.path / "runs").mkdir()
    (pytester.path / "runs" / "mine.jsonl").write_text(jsonl_run(partial), encoding="utf-8")
    retrievers = retriever("mine", "run", path="runs/mine.jsonl")
    write_project(pytester.path, retrievers=retrievers)
    result = pytester.runpytest("--rag-update-baseline", "--rag-json", "out.json", *RUN)
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines([
        "mine: 2 of 6 questions are not in runs/mine.jsonl and got an empty ranking "
        "(scored 0, as trec_eval -c does): q03, q05",
    ])
    results = read_results(pytester.path / "out.json")
    assert results["retrievers"]["mine"]["questions"]["q03"]["ranking"] == []
    assert results["retrievers"]["mine"]["metrics"]["recall@3"] == 0.6
    assert results["fingerprint"]["retrievers"]["mine"] == {"type": "run", "path": "runs/mine.jsonl", "format": "jsonl"}


def test_a_trec_run_under_hybrid_is_asked_by_id(pytester: pytest.Pytester) -> None:
    """Two questions share a text: only the id tells their rankings apart, through the fusion too."""
    questions = [*QUESTIONS, {**QUESTIONS[1], "id": "q07", "relevant": ["error-002"]}]
    lines = []
    for qid, ranking in {**GOLD, "q07": ["error-002"]}.items():
        lines += [f"{qid} Q0 {chunk} {rank} {10 - rank} run" for rank, chunk in enumerate(ranking, start=1)]
    (pytester.path / "bm25.trec").write_text("\n".join(lines) + "\n", encoding="utf-8")
    retrievers = (
        retriever("file", "run", path="bm25.trec") + retriever("again", "run", path="bm25.trec", order="rank")
        + retriever("fused", "hybrid", sources=["file", "again"])
    )
    write_project(pytester.path, retrievers=retrievers, questions=questions)
    result = pytester.runpytest("--rag-update-baseline", "--rag-json", "out.json", *RUN)
    result.assert_outcomes(passed=12)
    fused = read_results(pytester.path / "out.json")["retrievers"]["fused"]["questions"]
    assert fused["q02"]["ranking"] == ["error-001"] and fused["q07"]["ranking"] == ["error-002"]


def test_an_unknown_question_id_fails_the_items_naming_file_and_line(pytester: pytest.Pytester) -> None:
    (pytester.path / "run.trec").write_text("q01 Q0 travel-001 1 1.0 t\nq99 Q0 travel-001 1 1.0 t\n", encoding="utf-8")
    write_project(pytester.path, retrievers=retriever("file", "run", path="run.trec"))
    result = pytester.runpytest("--rag-eval", *RUN)
    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines(["*run.trec:2: unknown question id 'q99'; a run must use the eval set's ids*"])


QUESTION_FACTORY = '''
import json
from pathlib import Path

BY_ID = json.loads((Path(__file__).parent / "by_id.json").read_text(encoding="utf-8"))


def make(ctx):
    assert [q.id for q in ctx.questions][:2] == ["q01", "q02"]
    def retrieve(question, k):
        assert not hasattr(question, "relevance"), "a retriever never sees the judgments"
        return BY_ID[question.id][:k] if "keyword" in question.tags or question.id != "q05" else []
    return retrieve
'''


def test_a_question_factory_gets_id_query_and_tags(pytester: pytest.Pytester) -> None:
    questions = [*QUESTIONS, {**QUESTIONS[1], "id": "q07", "relevant": ["error-002"]}]
    (pytester.path / "by_id.json").write_text(json.dumps({**GOLD, "q07": ["error-002"]}), encoding="utf-8")
    (pytester.path / "by_question.py").write_text(QUESTION_FACTORY, encoding="utf-8")
    retrievers = (
        '[tool.ragretrieval.retrievers.mine]\ntype = "python"\nfactory = "by_question:make"\nsignature = "question"\n'
    )
    write_project(pytester.path, retrievers=retrievers, questions=questions)
    result = pytester.runpytest("--rag-update-baseline", "--rag-json", "out.json", *RUN)
    result.assert_outcomes(passed=4)
    results = read_results(pytester.path / "out.json")
    mine = results["retrievers"]["mine"]["questions"]
    assert mine["q02"]["ranking"] == ["error-001"] and mine["q07"]["ranking"] == ["error-002"]
    assert mine["q05"]["ranking"] == []
    assert results["fingerprint"]["retrievers"]["mine"]["signature"] == "question"
