"""A rerank retriever over HTTP through the gate: the service's scores order the source's candidates."""
from __future__ import annotations

import pytest
from projects import CHUNKS, QUERIES, RUN, read_results, toml_string, write_project
from rerank_server import FakeReranker, fake_score


@pytest.mark.parametrize("api", ["tei", "cohere"])
def test_the_service_reorders_bm25s_candidates_and_the_scores_are_cached(pytester: pytest.Pytester, api: str) -> None:
    texts = {chunk["id"]: chunk["text"] for chunk in CHUNKS}
    with FakeReranker(api) as server:
        retrievers = (
            '[tool.ragretrieval.retrievers.bm25]\ntype = "bm25"\n'
            f'[tool.ragretrieval.retrievers.served]\ntype = "rerank"\nsource = "bm25"\ndepth = 8\n'
            f'endpoint = {toml_string(server.url)}\napi = "{api}"\nbatch_size = 2\n'
        )
        write_project(pytester.path, retrievers=retrievers, settings='cache = "cache"')
        first = pytester.runpytest("--rag-update-baseline", "--rag-json", "out.json", *RUN)
        first.assert_outcomes(passed=8)
        sent = len(server.requests)
        second = pytester.runpytest("--rag-eval", *RUN)
        second.assert_outcomes(passed=8)
        assert len(server.requests) == sent, "the second run is served from the score cache"
    assert sent and all(len(request.documents) <= 2 for request in server.requests)
    results = read_results(pytester.path / "out.json")
    for qid, query in QUERIES.items():
        pool = results["retrievers"]["bm25"]["questions"][qid]["ranking"]
        expected = sorted(pool, key=lambda cid: (-fake_score(query, texts[cid]), cid))[:3]
        assert results["retrievers"]["served"]["questions"][qid]["ranking"] == expected
    assert results["fingerprint"]["retrievers"]["served"]["endpoint"] == server.url
