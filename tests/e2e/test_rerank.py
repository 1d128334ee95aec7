"""The reranker through the plugin with a tiny cross-encoder built here: order, cache, failures."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from projects import (
    E2E_CHUNKS,
    QUERIES,
    QUESTIONS,
    RUN,
    VECTOR_AND_BM25,
    cache_files,
    cache_keys,
    rankings,
    read_results,
    retriever,
    set_rankings,
    write_e2e_project,
)
from tiny_models import build_cross_encoder, cross_encoder_scores

pytestmark = pytest.mark.usefixtures("minilm")

pytest.importorskip("sentence_transformers", reason="needs sentence-transformers and torch, which the test extras bring: .venv/bin/pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0 && .venv/bin/pip install -e \".[dev]\"")

DEPTH = 5
TEXTS = {chunk["id"]: chunk["text"] for chunk in E2E_CHUNKS}
MISSING = "nobody/no-such-reranker"
SOURCES = (
    VECTOR_AND_BM25 + retriever("hybrid", "hybrid", sources=["vector", "bm25"], depth=6)
    + retriever("table", "python", factory="table_retriever:make")
)
TABLE_POOL = ["refund-001", "travel-001", "faq-001", "error-002", "refund-002"]
"""refund-001 before faq-001, its twin: ties must come out by id, against the pool's order."""


def reranker(name: str, source: str, model: str, depth: int = DEPTH) -> str:
    """A `[retrievers.NAME]` table of type rerank."""
    return retriever(name, "rerank", source=source, depth=depth, model=model)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built once; scoring once here also imports CrossEncoder's modules before any inline run."""
    texts = [*TEXTS.values(), *QUERIES.values()]
    folder = build_cross_encoder(tmp_path_factory.mktemp("models") / "tiny-ce", texts)
    cross_encoder_scores(folder, "预热", ["预热"])
    return folder


@pytest.fixture
def no_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    """A hub endpoint nothing listens on: hub_reachable() fails at once, the same way everywhere."""
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")


@pytest.fixture
def project(pytester: pytest.Pytester, tiny_model: Path) -> pytest.Pytester:
    """A project holding a copy of the tiny model at `reranker/`, named relative to the config."""
    shutil.copytree(tiny_model, pytester.path / "reranker")
    return pytester


def relevant(question: dict[str, Any]) -> set[str]:
    judged = question["relevant"]
    return {cid for cid, grade in judged.items() if grade >= 1} if isinstance(judged, dict) else set(judged)


@pytest.mark.usefixtures("no_hub")
def test_rerank_reorders_the_pool_by_cross_encoder_scores_and_reruns_from_the_cache(project: pytest.Pytester) -> None:
    """The second run has no model folder at all: it passes only if every score comes from the cache."""
    retrievers = SOURCES + reranker("rerank", "hybrid", "reranker") + reranker("rerank_table", "table", "reranker")
    write_e2e_project(project.path, retrievers, "cache")
    set_rankings(project.path, dict.fromkeys(QUERIES, TABLE_POOL))
    first = project.runpytest("--rag-update-baseline", "--rag-json", "first.json", *RUN)
    first.assert_outcomes(passed=12)
    results = read_results(project.path / "first.json")
    pools = {
        "rerank": {qid: ranking[:DEPTH] for qid, ranking in rankings(results, "hybrid").items()},
        "rerank_table": dict.fromkeys(QUERIES, TABLE_POOL),
    }
    for name, by_question in pools.items():
        expected = {}
        for qid, pool in by_question.items():
            scores = cross_encoder_scores(project.path / "reranker", QUERIES[qid], [TEXTS[cid] for cid in pool])
            expected[qid] = [cid for cid, _ in sorted(zip(pool, scores), key=lambda item: (-item[1], item[0]))]
        assert rankings(results, name) == expected
    assert all(r.index("faq-001") + 1 == r.index("refund-001") for r in rankings(results, "rerank_table").values())
    answerable = [q for q in QUESTIONS if relevant(q)]
    recalls = [len(relevant(q) & set(pools["rerank"][q["id"]])) / len(relevant(q)) for q in answerable]
    diagnostics = {f"pool_recall@{DEPTH}": pytest.approx(sum(recalls) / len(recalls), abs=1e-6)}
    assert results["retrievers"]["rerank"]["diagnostics"] == diagnostics
    first.stdout.fnmatch_lines([f"diagnostics (ann_recall: *): rerank pool_recall@{DEPTH} *, rerank_table pool_recall@{DEPTH} *"])
    pairs = {(qid, TEXTS[cid]) for by_question in pools.values() for qid, pool in by_question.items() for cid in pool}
    assert len(cache_keys(project.path / "cache", "rerank")) == len(pairs)
    stored = cache_files(project.path / "cache" / "rerank")

    shutil.rmtree(project.path / "reranker")
    second = project.runpytest("--rag-eval", "--rag-json", "second.json", *RUN)
    second.assert_outcomes(passed=12)
    again = read_results(project.path / "second.json")
    assert {name: rankings(again, name) for name in pools} == {name: rankings(results, name) for name in pools}
    assert cache_files(project.path / "cache" / "rerank") == stored


def test_readonly_cache_without_the_scores_fails_the_reranker_with_the_pair_count(project: pytest.Pytester) -> None:
    """The first question with candidates is where the run stops: its pool is the count of missing pairs."""
    write_e2e_project(project.path, retriever("bm25", "bm25") + reranker("rerank", "bm25", "reranker", depth=3), "cache")
    result = project.runpytest("--rag-update-baseline", "--rag-cache=readonly", "--rag-json", "results.json", *RUN)
    result.assert_outcomes(passed=2, failed=2)
    bm25_rankings = rankings(read_results(project.path / "results.json"), "bm25")
    first_pool = next(bm25_rankings[qid][:3] for qid in QUERIES if bm25_rankings[qid])
    result.stdout.fnmatch_lines(
        [
            f"cache cache/rerank/reranker-* is readonly and lacks rerank for {len(first_pool)} query-chunk pairs "
            "from 'reranker'; run pytest --rag-eval --rag-cache=readwrite where the model * is available*",
        ]
    )
    assert not (project.path / "cache").exists()


@pytest.mark.usefixtures("no_hub")
def test_a_model_that_cannot_load_skips_only_the_reranker(pytester: pytest.Pytester) -> None:
    write_e2e_project(pytester.path, VECTOR_AND_BM25 + reranker("rerank", "bm25", MISSING), "cache")
    reason = (
        f"*SKIPPED [[]2[]] *cross-encoder '{MISSING}' could not be loaded "
        "(no local copy and no Hugging Face hub reachable)*"
    )
    recorded = pytester.runpytest("--rag-update-baseline", "-rs", *RUN)
    recorded.assert_outcomes(passed=4, skipped=2)
    recorded.stdout.fnmatch_lines([reason])
    gated = pytester.runpytest("--rag-eval", "-rs", *RUN)
    gated.assert_outcomes(passed=4, skipped=2)
    gated.stdout.fnmatch_lines([reason])
