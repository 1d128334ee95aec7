"""The manual's written policies (docs/metrics.md, docs/retrievers.md), one test each: ties, questions judged only grade 0, questions a run lacks.

(The run-file tie rule and trec_eval -c are also checked against trec_eval's own files in
test_run_files.py; the vector retriever's `ORDER BY distance, id` in tests/e2e/test_vector.py.)
"""
from __future__ import annotations

from pathlib import Path

from pytest_ragretrieval.cache.store import Cache
from pytest_ragretrieval.evalset.records import Chunk, Question
from pytest_ragretrieval.retrievers.bm25 import BM25Retriever
from pytest_ragretrieval.retrievers.hybrid import fuse
from pytest_ragretrieval.retrievers.protocol import Query, ask
from pytest_ragretrieval.retrievers.rerank import RerankRetriever
from pytest_ragretrieval.retrievers.run import RunRetriever, read_trec
from pytest_ragretrieval.retrievers.tokens import tokenizer
from pytest_ragretrieval.scoring.evaluate import score
from pytest_ragretrieval.scoring.metrics import MetricSpec


def test_built_in_retrievers_break_ties_by_chunk_id_ascending(tmp_path: Path) -> None:
    chunks = [Chunk(cid, "退款 三个 工作日") for cid in ("c", "a", "b")] + [Chunk(f"z{i}", f"别的 内容 {i}") for i in range(5)]
    bm25 = BM25Retriever(chunks, tokenizer("whitespace"), k1=1.5, b=0.75, epsilon=0.25, min_score=0.0)
    assert bm25("退款", 3) == ["a", "b", "c"]
    assert fuse([["b", "a"], ["a", "b"]], 60) == ["a", "b"]
    texts = dict.fromkeys(("c", "a", "b"), "same")
    rerank = RerankRetriever(lambda q, k: ["c", "a", "b"], texts, lambda pairs: [1.0] * len(pairs),
                             Cache(tmp_path).namespace("rerank", "flat", ext="f64", dtype="<f8"), depth=3, min_score=None)
    assert rerank("q", 3) == ["a", "b", "c"]


def test_run_files_break_ties_as_trec_eval_does_by_docno_descending(tmp_path: Path) -> None:
    path = tmp_path / "tie.trec"
    path.write_text("q1 Q0 a 1 0.5 t\nq1 Q0 c 2 0.5 t\nq1 Q0 b 3 0.5 t\n")
    assert read_trec(path, "score", {"q1"}, {"a", "b", "c"})["q1"] == ["c", "b", "a"]


def test_a_question_judged_only_grade_0_is_a_no_answer_question() -> None:
    """Left out of every answer metric's mean (trec_eval would average its zeros in); its ranking
    counts as an abstention only when empty."""
    questions = (Question("q1", "a", {"c1": 1}), Question("q2", "b", {"c2": 0}), Question("q3", "c", {"c3": 0}))
    specs = (MetricSpec("recall", 3), MetricSpec("abstention", 1))
    result = score("r", questions, {"q1": ["c1"], "q2": ["c2"], "q3": []}, specs)
    assert result.metrics == {"recall@3": 1.0, "abstention": 0.5}
    assert (result.no_answer_total, result.no_answer_empty) == (2, 1)
    assert (q2 := result.question("q2")) is not None and q2.values == {"abstention": 0.0}


def test_a_question_a_run_lacks_scores_zero_like_trec_eval_c() -> None:
    questions = (Question("q1", "a", {"c1": 1}), Question("q2", "b", {"c2": 1}))
    retriever = RunRetriever("run", "run.trec", {"q1": ["c1"]}, 2)
    rankings = {q.id: ask(retriever, Query(q.id, q.query), 3) for q in questions}
    assert score("run", questions, rankings, (MetricSpec("recall", 3),)).metrics == {"recall@3": 0.5}
    assert retriever.missing == {"q2"}
