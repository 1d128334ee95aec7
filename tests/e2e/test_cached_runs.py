"""The embedding cache through the plugin: a warm cache embeds nothing, readonly and off do what they say."""
from __future__ import annotations

import pytest
from projects import (
    E2E_CHUNKS,
    QUERIES,
    RUN,
    VECTOR_AND_BM25,
    cache_files,
    cache_keys,
    rankings,
    read_results,
    write_e2e_project,
)

pytestmark = pytest.mark.usefixtures("minilm")

RETRIEVERS = VECTOR_AND_BM25
TEXTS = len({chunk["text"] for chunk in E2E_CHUNKS})
"""Distinct chunk texts: the duplicate chunk embeds once."""
EMBEDDER = "sentence-transformers:all-MiniLM-L6-v2"


def seeded(hits: int, computed: int) -> str:
    """The line resources.py prints once the table is seeded."""
    return (
        f"rag: seeded {len(E2E_CHUNKS)} chunks (384 dimensions, {hits} embeddings from the cache, "
        f"{computed} computed, exact search) in *s"
    )


def test_a_second_run_embeds_nothing(pytester: pytest.Pytester) -> None:
    """The second run is readonly, so any text missing from the cache, query or chunk, would fail it."""
    write_e2e_project(pytester.path, RETRIEVERS, "cache")
    first = pytester.runpytest("--rag-update-baseline", "--rag-json", "first.json", *RUN)
    first.assert_outcomes(passed=4)
    first.stdout.fnmatch_lines([f"rag: embedding corpus with {EMBEDDER}: {TEXTS}/{TEXTS} in *s", seeded(0, TEXTS)])
    assert len(cache_keys(pytester.path / "cache", "embeddings")) == TEXTS + len(set(QUERIES.values()))
    stored = cache_files(pytester.path / "cache")

    second = pytester.runpytest("--rag-eval", "--rag-cache=readonly", "--rag-no-reuse", "--rag-json", "second.json",
                                *RUN)  # searched again, not reused: every query must hit the cache
    second.assert_outcomes(passed=4)
    second.stdout.fnmatch_lines([seeded(TEXTS, 0)])
    second.stdout.no_fnmatch_line("rag: embedding *")
    assert cache_files(pytester.path / "cache") == stored
    first_results, second_results = (read_results(pytester.path / f"{run}.json") for run in ("first", "second"))
    assert rankings(second_results, "vector") == rankings(first_results, "vector")


def test_readonly_on_a_cold_cache_fails_vector_items_with_the_count_and_the_command(pytester: pytest.Pytester) -> None:
    write_e2e_project(pytester.path, RETRIEVERS, "cache")
    result = pytester.runpytest("--rag-update-baseline", "--rag-cache=readonly", *RUN)
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        [
            f"cache cache/embeddings/sentence-transformers_all-MiniLM-L6-v2-* is readonly and lacks embeddings "
            f"for {TEXTS} texts from '{EMBEDDER}'; run pytest --rag-eval --rag-cache=readwrite "
            "where the model (or API key) is available, and commit/cache .rag-cache/"
        ]
    )
    result.stdout.fnmatch_lines(["FAILED rag::vector::ndcg@3*", "FAILED rag::vector::recall@9*"])
    result.stdout.no_fnmatch_line("FAILED rag::bm25::*")
    assert not (pytester.path / "cache").exists()


def test_cache_off_neither_reads_nor_writes(pytester: pytest.Pytester) -> None:
    """On a warm cache, off embeds every text again and leaves every entry as it was (a write replaces the file)."""
    write_e2e_project(pytester.path, RETRIEVERS, "cache")
    pytester.runpytest("--rag-update-baseline", *RUN).assert_outcomes(passed=4)
    before = cache_files(pytester.path / "cache")
    result = pytester.runpytest("--rag-eval", "--rag-cache=off", *RUN)
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines([seeded(0, TEXTS)])
    assert cache_files(pytester.path / "cache") == before


def test_cache_off_creates_no_cache_folder(pytester: pytest.Pytester) -> None:
    write_e2e_project(pytester.path, RETRIEVERS, "cache")
    pytester.runpytest("--rag-update-baseline", "--rag-cache=off", *RUN).assert_outcomes(passed=4)
    assert not (pytester.path / "cache").exists()
