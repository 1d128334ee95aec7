"""The reranker through the plugin with a tiny cross-encoder built here: order, cache, failures."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from projects import E2E_CHUNKS, QUERIES, QUESTIONS, read_results, rankings, write_e2e_project
from tiny_models import build_cross_encoder, cross_encoder_scores

pytestmark = pytest.mark.usefixtures("minilm")

RUN = ("-p", "no:cacheprovider")
DEPTH = 5
TEXTS = {chunk["id"]: chunk["text"] for chunk in E2E_CHUNKS}
MISSING = "nobody/no-such-reranker"
SOURCES = """
[tool.ragretrieval.retrievers.vector]
type = "vector"

[tool.ragretrieval.retrievers.bm25]
type = "bm25"

[tool.ragretrieval.retrievers.hybrid]
type = "hybrid"
sources = ["vector", "bm25"]
depth = 6
"""


def rerank_table(source: str, model: str, depth: int = DEPTH) -> str:
    return f'\n[tool.ragretrieval.retrievers.rerank]\ntype = "rerank"\nsource = "{source}"\ndepth = {depth}\nmodel = "{model}"\n'


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built once; scoring once here also imports CrossEncoder's modules before any inline run."""
    folder = build_cross_encoder(tmp_path_factory.mktemp("models") / "tiny-ce", [*TEXTS.values(), *QUERIES.values()])
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


def score_files(cache: Path) -> list[Path]:
    return sorted((cache / "rerank").rglob("*.f64"))


@pytest.mark.usefixtures("no_hub")
def test_rerank_reorders_the_pool_by_cross_encoder_scores_and_reruns_from_the_cache(project: pytest.Pytester) -> None:
    write_e2e_project(project.path, SOURCES + rerank_table("hybrid", "reranker"), "cache")
    first = project.runpytest("--rag-update-baseline", "--rag-json", "first.json", *RUN)
    first.assert_outcomes(passed=8)
    results = read_results(project.path / "first.json")
    pools = {qid: ranking[:DEPTH] for qid, ranking in rankings(results, "hybrid").items()}
    expected = {}
    for qid, pool in pools.items():
        scores = cross_encoder_scores(project.path / "reranker", QUERIES[qid], [TEXTS[cid] for cid in pool])
        expected[qid] = [cid for cid, _ in sorted(zip(pool, scores), key=lambda item: (-item[1], item[0]))]
    assert rankings(results, "rerank") == expected
    assert any(r.index("faq-001") + 1 == r.index("refund-001") for r in expected.values() if "faq-001" in r)
    answerable = [q for q in QUESTIONS if relevant(q)]
    pool_recall = sum(len(relevant(q) & set(pools[q["id"]])) / len(relevant(q)) for q in answerable) / len(answerable)
    assert results["retrievers"]["rerank"]["diagnostics"] == {f"pool_recall@{DEPTH}": pytest.approx(pool_recall, abs=1e-6)}
    stored = score_files(project.path / "cache")
    assert len(stored) == sum(len({TEXTS[cid] for cid in pool}) for pool in pools.values())

    shutil.rmtree(project.path / "reranker")
    second = project.runpytest("--rag-eval", "--rag-json", "second.json", *RUN)
    second.assert_outcomes(passed=8)
    assert rankings(read_results(project.path / "second.json"), "rerank") == expected
    assert score_files(project.path / "cache") == stored


def test_readonly_cache_without_the_scores_fails_the_reranker_with_the_pair_count(project: pytest.Pytester) -> None:
    write_e2e_project(project.path, '[tool.ragretrieval.retrievers.bm25]\ntype = "bm25"\n' + rerank_table("bm25", "reranker", 3), "cache")
    result = project.runpytest("--rag-update-baseline", "--rag-cache=readonly", "--rag-json", "results.json", *RUN)
    result.assert_outcomes(passed=2, failed=2)
    first_pool = next(ranking[:3] for ranking in rankings(read_results(project.path / "results.json"), "bm25").values() if ranking)
    result.stdout.fnmatch_lines(
        [
            f"cache cache/rerank/reranker-* is readonly and lacks rerank for {len(first_pool)} query-chunk pairs "
            "from 'reranker'; run pytest --rag-eval --rag-cache=readwrite where the model * is available*",
        ]
    )
    assert not (project.path / "cache").exists()


@pytest.mark.usefixtures("no_hub")
def test_a_model_that_cannot_load_skips_only_the_reranker(pytester: pytest.Pytester) -> None:
    retrievers = SOURCES.split("[tool.ragretrieval.retrievers.hybrid]")[0] + rerank_table("bm25", MISSING)
    write_e2e_project(pytester.path, retrievers, "cache")
    reason = f"*SKIPPED [[]2[]] *cross-encoder '{MISSING}' could not be loaded (no local copy and no Hugging Face hub reachable)*"
    recorded = pytester.runpytest("--rag-update-baseline", "-rs", *RUN)
    recorded.assert_outcomes(passed=4, skipped=2)
    recorded.stdout.fnmatch_lines([reason])
    gated = pytester.runpytest("--rag-eval", "-rs", *RUN)
    gated.assert_outcomes(passed=4, skipped=2)
    gated.stdout.fnmatch_lines([reason])
