"""The vector retriever through the plugin on the embedded database, against brute-force cosine."""
from __future__ import annotations

import json
from typing import Any

import numpy
import pytest
from projects import E2E_CHUNKS, E2E_DEPTH, QUERIES, RUN, rankings, read_results, retriever, write_e2e_project

from pytest_ragretrieval.scoring.metrics import ann_overlap

pytestmark = pytest.mark.usefixtures("minilm")

VECTOR = retriever("vector", "vector")
HNSW = 'index = "hnsw"\nhnsw = {m = 8, ef_construction = 32, ef_search = 10}'
MIN_SCORE = 0.45
GAP = 1e-4
"""Similarities closer than this could swap between pgvector's float32 sums and ours."""


@pytest.fixture(scope="module")
def similarities(minilm: Any) -> dict[str, list[tuple[str, float]]]:
    """Question id -> (chunk id, cosine similarity) for every chunk, embedded as the plugin embeds.

    The corpus goes in one call of its distinct texts, each query alone, so the vectors match
    the plugin's; the similarity, in float64, is one per distinct text, so equal texts tie
    exactly (a matrix product may round identical rows differently).
    """
    texts = list(dict.fromkeys(chunk["text"] for chunk in E2E_CHUNKS))
    matrix = minilm.embed(texts).astype(numpy.float64)
    matrix /= numpy.linalg.norm(matrix, axis=1, keepdims=True)
    found = {}
    for qid, query in QUERIES.items():
        vector = minilm.embed([query])[0].astype(numpy.float64)
        by_text = dict(zip(texts, (matrix @ (vector / numpy.linalg.norm(vector))).tolist()))
        found[qid] = [(chunk["id"], by_text[chunk["text"]]) for chunk in E2E_CHUNKS]
    return found


def brute_force(scored: list[tuple[str, float]], k: int, min_score: float | None = None) -> list[str]:
    ranked = sorted(scored, key=lambda item: (-item[1], item[0]))
    return [cid for cid, score in ranked if min_score is None or score >= min_score][:k]


def assert_separated(scored: list[tuple[str, float]], *edges: float) -> None:
    """Premise: distinct texts never score within GAP of each other or of a threshold."""
    values = sorted({round(score, 9) for _, score in scored} | set(edges))
    assert all(b - a > GAP for a, b in zip(values, values[1:])), values


def run(pytester: pytest.Pytester, *args: str) -> tuple[Any, dict[str, Any]]:
    result = pytester.runpytest("--rag-update-baseline", "--rag-json", "results.json", *RUN, *args)
    return result, read_results(pytester.path / "results.json")


def test_rankings_equal_brute_force_cosine_with_ties_by_id(
    pytester: pytest.Pytester, similarities: dict[str, list[tuple[str, float]]]
) -> None:
    write_e2e_project(pytester.path, VECTOR, "cache")
    result, results = run(pytester)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["rag: database embedded: PostgreSQL * (embedded: *", "rag: seeded 9 chunks (384 *"])
    for scored in similarities.values():
        assert_separated(scored)
    expected = {qid: brute_force(scored, E2E_DEPTH) for qid, scored in similarities.items()}
    assert rankings(results, "vector") == expected
    assert all(r.index("faq-001") + 1 == r.index("refund-001") for r in expected.values())
    assert results["fingerprint"]["retrievers"]["vector"]["index"] == {"kind": "exact"}
    assert "diagnostics" not in results["retrievers"]["vector"]


def test_min_score_drops_chunks_below_the_cosine_threshold(
    pytester: pytest.Pytester, similarities: dict[str, list[tuple[str, float]]]
) -> None:
    write_e2e_project(pytester.path, VECTOR + f"min_score = {MIN_SCORE}\n", "cache")
    result, results = run(pytester)
    result.assert_outcomes(passed=2)
    for scored in similarities.values():
        assert_separated(scored, MIN_SCORE)
    expected = {qid: brute_force(scored, E2E_DEPTH, MIN_SCORE) for qid, scored in similarities.items()}
    assert rankings(results, "vector") == expected
    lengths = {len(ranking) for ranking in expected.values()}
    assert 0 < min(lengths) and max(lengths) < E2E_DEPTH


def test_hnsw_reports_ann_recall_and_records_the_index(
    pytester: pytest.Pytester, similarities: dict[str, list[tuple[str, float]]]
) -> None:
    write_e2e_project(pytester.path, VECTOR, "cache", HNSW)
    result, results = run(pytester)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["rag: seeded 9 chunks (384 dimensions, *, hnsw index) in *s"])
    assert results["fingerprint"]["retrievers"]["vector"]["index"] == {
        "kind": "hnsw",
        "m": 8,
        "ef_construction": 32,
        "ef_search": 10,
    }
    diagnostics = results["retrievers"]["vector"]["diagnostics"]
    assert list(diagnostics) == [f"ann_recall@{E2E_DEPTH}", f"ann_recall_worst@{E2E_DEPTH}"]
    distance = {qid: {cid: 1.0 - score for cid, score in scored} for qid, scored in similarities.items()}
    overlaps = [  # ties counted, within the default ann_tie_epsilon (docs/metrics.md#diagnostics)
        ann_overlap([(cid, distance[qid][cid]) for cid in found],
                    [(cid, distance[qid][cid]) for cid in brute_force(similarities[qid], E2E_DEPTH)], 1e-4)
        for qid, found in rankings(results, "vector").items()
    ]
    assert 0.0 <= diagnostics[f"ann_recall@{E2E_DEPTH}"] <= 1.0
    assert diagnostics[f"ann_recall@{E2E_DEPTH}"] == pytest.approx(sum(overlaps) / len(overlaps), abs=1e-6)
    assert diagnostics[f"ann_recall_worst@{E2E_DEPTH}"] == pytest.approx(min(overlaps), abs=1e-6)


def test_reports_and_results_name_no_temporary_folder_and_no_run_schema(pytester: pytest.Pytester) -> None:
    """The embedded server lives in a fresh temporary folder and every run has its own schema:
    neither may make two runs on the same inputs write different files."""
    import re
    import tempfile

    write_e2e_project(pytester.path, VECTOR, "cache")
    outputs = ("--rag-json=results.json", "--rag-report=report.md", "--rag-html=report.html")
    result = pytester.runpytest("--rag-update-baseline", *outputs, *RUN)
    result.assert_outcomes(passed=2)
    header = next(line for line in result.stdout.lines if line.startswith("rag: database embedded: "))
    assert tempfile.gettempdir() in header  # the run header still says where the server is
    for name in ("results.json", "report.md", "report.html", "baselines/retrieval.json"):
        text = (pytester.path / name).read_text(encoding="utf-8")
        assert tempfile.gettempdir() not in text and str(pytester.path) not in text, name
        assert not re.search(r"rag_eval_[0-9a-f]{12}", text), name
    report = (pytester.path / "report.md").read_text(encoding="utf-8")
    assert re.search(r"database：embedded: PostgreSQL [0-9.]+, pgvector [0-9.]+\n", report), report


@pytest.mark.slow  # three fresh processes, about 2 minutes on 2 cores
def test_a_cold_embedder_is_loaded_before_the_first_question_and_a_warm_run_loads_none(
    pytester: pytest.Pytester,
) -> None:
    """With the corpus cached, a question added made the first query embedding load the model (torch and
    MiniLM: seconds), timed inside the questions' latency, and a latency limit failed. The model is loaded
    before the first question now, reported apart; a warm run, every query cached, loads nothing. Each run
    is a fresh process, so the model is cold in each."""
    write_e2e_project(pytester.path, retriever("vector", "vector", max_latency_ms=300), "cache")
    pytester.runpytest_subprocess("--rag-update-baseline", *RUN).assert_outcomes(passed=3)
    evalset = pytester.path / "fixtures" / "evalset.jsonl"
    added = {"id": "q07", "query": "差旅住宿标准是多少", "relevant": ["travel-001"]}
    evalset.write_text(evalset.read_text(encoding="utf-8") + json.dumps(added, ensure_ascii=False) + "\n",
                       encoding="utf-8")
    result = pytester.runpytest_subprocess("--rag-eval", "--rag-json", "r.json", *RUN)
    result.assert_outcomes(passed=3)
    entry = read_results(pytester.path / "r.json")["retrievers"]["vector"]
    (loaded, took), = entry["loads_ms"].items()
    assert loaded == "embedder sentence-transformers:all-MiniLM-L6-v2" and took > entry["latency_ms"]["p95"]
    result.stdout.fnmatch_lines(["one-time loads before the first question, not in its latency, ms: "
                                 "vector embedder sentence-transformers:all-MiniLM-L6-v2 *"])
    rerun = pytester.runpytest_subprocess("--rag-eval", "--rag-no-reuse", "--rag-json", "again.json", *RUN)
    rerun.assert_outcomes(passed=3)
    assert "loads_ms" not in read_results(pytester.path / "again.json")["retrievers"]["vector"]
