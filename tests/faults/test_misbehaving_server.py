"""A misbehaving OpenAI-compatible server behind the whole gate: each fault is one line, named, and bounded.

Every retriever that needs the embedder is configured (vector, hybrid and rerank through it, a
python retriever calling `ctx.embed`, and the vector fingerprint), with `embedding_timeout = 2`
and `embedding_retries = 1`: the embedder's budget for failures is 2 x 2 s + 0.5 s backoff =
4.5 s for the whole run. The first batch of the corpus meets the fault; every later consumer
fails at once with the same line, so the server sees at most two requests. That request count
is the deterministic proof of the bound; the subprocess guard only catches a hang.
"""
from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from openai_server import FakeOpenAI, Reply
from projects import RUN, VECTOR_AND_BM25, retriever, write_project

KEY = "tei-5c1b9e7a3f2d8c4b6a0e"
"""Not an `sk-` key: it must be masked by its value."""
GUARD = 60
"""Seconds before a run counts as hung; the runs take a few seconds, the embedder at most 4.5 of them."""
CONSUMERS = ("vector", "hybrid", "reranked", "asks")
ASKS = '''
def make(ctx):
    """A retriever of the user's own that embeds each query through ctx.embed."""
    def retrieve(query, k):
        ctx.embed([query])
        return []
    return retrieve
'''
RETRIEVERS = (
    VECTOR_AND_BM25 + retriever("hybrid", "hybrid", sources=["vector", "bm25"])
    + retriever("reranked", "rerank", source="hybrid", model="nobody/absent-reranker")
    + retriever("asks", "python", factory="asks:make")
)
# The first call to fail is the corpus's (two batches of 4) or a single text's (no batch named).
TIMEOUT = r"(?:batch 1 of 2: )?timeout \(2s per request\) after 2 attempts; check the server or try again later \(embedding_timeout = 2, embedding_retries = 1\)"
FAULTS = {
    "hang": ([Reply(fault="hang")], TIMEOUT, 2),
    "slow": ([Reply(fault="trickle")], TIMEOUT, 2),
    "half body": ([Reply(fault="half")], r"(?:batch 1 of 2: )?connection failed \(.+\) after 2 attempts; ", 2),
    "reset": ([Reply(fault="reset")], r"(?:batch 1 of 2: )?connection failed \(.+\) after 2 attempts; ", 2),
    "garbage": (
        [Reply(fault="garbage")],
        r"(?:batch 1 of 2: )?the server's answer is not JSON \(.+; it begins '<html><body><h1>502 Bad Gateway</h1></body></html>'\); "
        r"check that embedding_base_url is the server's OpenAI-compatible address",
        1,
    ),
    "no data": (
        [Reply(fault="nodata")],
        r"(?:batch 1 of 2: )?the server's answer has no 'data' list \(its keys: 'model', 'object'\); ",
        1,
    ),
    "dimension change": (
        [Reply(), Reply(dimension=16)],
        r"(?:batch 2 of 2: )?the server returned vectors of dimension 16, but earlier answers had dimension 8; ",
        2,
    ),
    "429 with a long Retry-After": (
        [Reply(429, headers={"Retry-After": "3600"}, message="rate limited")],
        r"(?:batch 1 of 2: )?HTTP 429 \(rate limited\), and the server asks to wait 3600 s \(Retry-After\), "
        r"more than is left of this embedder's 4.5 s budget for failures; try again later",
        1,
    ),
    "401 echoing the key": (
        [Reply(401, message="y" * 285 + " {key} is not a valid key")],
        r"(?:batch 1 of 2: )?HTTP 401 from the server: y{285} \*\*\* is not ?\.\.\.; check OPENAI_API_KEY",
        1,
    ),
}


@pytest.fixture(scope="module")
def module_server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def server(module_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAI:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    module_server.reset()
    return module_server


def failure_body(lines: list[str], nodeid: str) -> list[str]:
    """The lines pytest printed for one failed item, between its header and the next one."""
    start = next(i for i, line in enumerate(lines) if re.fullmatch(rf"_+ {re.escape(nodeid)} +_+", line))
    body = []
    for line in lines[start + 1:]:
        if re.fullmatch(r"[_=]{3,}.*", line):
            break
        body.append(line)
    return [line for line in body if line.strip()]


@pytest.mark.parametrize("fault", list(FAULTS))
def test_each_fault_is_one_named_line_within_the_budget(
    pytester: pytest.Pytester, server: FakeOpenAI, fault: str
) -> None:
    replies, expected, requests = FAULTS[fault]
    *scripted, server.default = replies
    server.script(*scripted)
    settings = "\n".join([
        'db = "embedded"', 'cache = "cache"', 'embedding = "openai:test-model"',
        f'embedding_base_url = "{server.url}"', "embedding_batch_size = 4",
        "embedding_timeout = 2", "embedding_retries = 1",
    ])
    write_project(pytester.path, retrievers=RETRIEVERS, settings=settings)
    pytester.makepyfile(asks=ASKS)
    result = pytester.runpytest_subprocess("--rag-eval", "--rag-report", "report.md", *RUN, timeout=GUARD)
    output = "\n".join(result.outlines + result.errlines)
    assert "Traceback" not in output and "INTERNALERROR" not in output
    embedder = f"embedder 'openai:test-model@{server.url}': "
    for name in CONSUMERS:
        (line,) = failure_body(result.outlines, f"rag::{name}::ndcg@3")
        assert line.startswith(embedder) and re.match(expected, line[len(embedder):]), line
    assert len(server.requests) == requests
    report = (pytester.path / "report.md").read_text(encoding="utf-8")
    for text in (output, report):
        assert KEY not in text and KEY[:8] not in text and KEY[-8:] not in text
