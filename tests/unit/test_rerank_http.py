"""The HTTP reranker against a local server: both APIs, batching, retries, errors and the cache."""
from __future__ import annotations

from pathlib import Path

import pytest
from projects import retriever
from rerank_server import FakeReranker, Reply, fake_score

from pytest_ragretrieval.cache.store import Cache
from pytest_ragretrieval.config.settings import load_config
from pytest_ragretrieval.core.errors import ConfigError, RetrieverError, RetrieverUnavailable
from pytest_ragretrieval.retrievers import RetrieverSpec
from pytest_ragretrieval.retrievers.rerank import RerankRetriever
from pytest_ragretrieval.retrievers.rerank_http import HttpRerankScorer, scorer_id

TEXTS = [f"document number {i}" for i in range(70)]


def scorer(server: FakeReranker, sleeps: list[float] | None = None, **kwargs: object) -> HttpRerankScorer:
    record = sleeps.append if sleeps is not None else (lambda seconds: None)
    return HttpRerankScorer(server.url, api=server.api, sleep=record, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("api", ["cohere", "tei"])
def test_scores_come_back_in_input_order_in_batches(api: str) -> None:
    with FakeReranker(api) as server:
        scores = scorer(server, model="bge-reranker-base", batch_size=32)([("q", t) for t in TEXTS])
    assert scores == [fake_score("q", t) for t in TEXTS]
    assert [len(r.documents) for r in server.requests] == [32, 32, 6]
    first = server.requests[0].body
    if api == "tei":
        assert first == {"query": "q", "texts": TEXTS[:32], "raw_scores": False}
    else:
        assert first == {"query": "q", "documents": TEXTS[:32], "top_n": 32, "model": "bge-reranker-base"}


def test_a_batch_never_mixes_queries() -> None:
    with FakeReranker() as server:
        pairs = [("a", "x"), ("a", "y"), ("b", "x")]
        assert scorer(server)(pairs) == [fake_score(q, t) for q, t in pairs]
    assert [(r.body["query"], r.documents) for r in server.requests] == [("a", ["x", "y"]), ("b", ["x"])]


def test_the_key_is_sent_and_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "co-secret-123"
    with FakeReranker() as server:
        server.script(Reply(400, body={"message": f"bad key {secret}"}))
        client = HttpRerankScorer(server.url, api_key_env="CO_API_KEY", environ={"CO_API_KEY": secret})
        with pytest.raises(RetrieverError) as info:
            client([("q", "t")])
    assert server.requests[0].headers["Authorization"] == f"Bearer {secret}"
    assert secret not in str(info.value) and "bad key ***" in str(info.value)
    keyless = HttpRerankScorer("http://127.0.0.1:9/rerank", api_key_env="CO_API_KEY", environ={})
    with pytest.raises(RetrieverUnavailable, match=r"needs an API key in \$CO_API_KEY, which is not set"):
        keyless([("q", "t")])


def test_429_honours_retry_after_and_5xx_backs_off() -> None:
    sleeps: list[float] = []
    with FakeReranker() as server:
        server.script(Reply(429, headers={"Retry-After": "2"}), Reply(503), Reply(500))
        assert scorer(server, sleeps)([("q", "t")]) == [fake_score("q", "t")]
    assert sleeps == [2.0, 1.0, 2.0]  # Retry-After, then 0.5 * 2**(attempt - 1) for attempts 2 and 3
    assert len(server.requests) == 4


def test_a_timeout_is_retried() -> None:
    sleeps: list[float] = []
    with FakeReranker() as server:
        server.script(Reply(delay=1.0))
        assert scorer(server, sleeps, timeout=0.2)([("q", "t")]) == [fake_score("q", "t")]
    assert sleeps == [0.5]


def test_a_server_that_trickles_bytes_is_held_to_the_timeout() -> None:
    """issue 40, item 11: urllib's timeout bounds each read, so an answer sent a byte every 0.2 s (about 20 s
    here) held the run; each request now has `timeout` for its whole answer, then is tried again."""
    sleeps: list[float] = []
    with FakeReranker() as server:
        server.script(Reply(trickle=True))
        assert scorer(server, sleeps, timeout=1.0)([("q", "t")]) == [fake_score("q", "t")]
    assert sleeps == [0.5] and len(server.requests) == 2


def test_a_client_error_fails_at_once_with_a_hint() -> None:
    with FakeReranker("tei") as server:
        server.script(Reply(413, body={"error": "batch size 64 > maximum allowed batch size 32", "error_type": "validation"}))
        with pytest.raises(RetrieverError) as info:
            scorer(server, batch_size=64)([("q", t) for t in TEXTS[:64]])
    assert len(server.requests) == 1
    assert str(info.value) == (
        f"reranker {scorer_id('tei', server.url, None)!r}: HTTP 413 from the server: batch size 64 > maximum "
        "allowed batch size 32; lower batch_size (TEI accepts 32 texts per request unless "
        "--max-client-batch-size is raised)"
    )


def test_retries_stop_at_the_attempt_limit_and_the_wait_budget() -> None:
    sleeps: list[float] = []
    with FakeReranker() as server:
        server.script(*[Reply(503)] * 5)
        with pytest.raises(RetrieverError, match=r"HTTP 503 \(scripted 503\) after 5 attempts; check the server"):
            scorer(server, sleeps)([("q", "t")])
    assert sleeps == [0.5, 1.0, 2.0, 4.0]
    sleeps.clear()
    with FakeReranker() as server:
        server.script(*[Reply(429, headers={"Retry-After": "30"})] * 5)
        client = scorer(server, sleeps, clock=lambda: 0.0)
        client.max_wait = 45
        with pytest.raises(RetrieverError, match=r"gave up after losing 30s in all to failed attempts and waits "
                                                 r"\(max_wait 45s\) after 2 attempts"):
            client([("q", "t")])
    assert sleeps == [30.0]


def test_failed_attempts_count_against_the_run_s_budget() -> None:
    """issue 40, item 11: only sleeps counted against `max_wait`, so a service timing out batch after batch
    held a run for hours (5 attempts of `timeout` per batch); the attempts' own time now counts too."""
    ticks = iter(range(0, 1000, 10))
    with FakeReranker() as server:
        server.script(*[Reply(503)] * 5)
        client = scorer(server, clock=lambda: float(next(ticks)))
        client.max_wait = 5
        with pytest.raises(RetrieverError, match=r"gave up after losing 10s in all to failed attempts and waits "
                                                 r"\(max_wait 5s\) after 1 attempt;"):
            client([("q", "t")])
    assert len(server.requests) == 1


def test_nothing_listening_is_a_connection_failure() -> None:
    client = HttpRerankScorer("http://127.0.0.1:9/rerank", sleep=lambda s: None)
    with pytest.raises(RetrieverError, match=r"connection failed .* after 5 attempts"):
        client([("q", "t")])


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (Reply(keep=2), r"scored indices \[\d+, \d+\] of 3 documents sent; it must score every one"),
        (Reply(body={"data": []}), r"unexpected response"),
        (Reply(body=[{"index": 0, "score": "high"}]), r"bad result .* a finite 'score'"),
    ],
)
def test_malformed_answers_are_errors(reply: Reply, message: str) -> None:
    with FakeReranker() as server:
        server.script(reply)
        with pytest.raises(RetrieverError, match=message):
            scorer(server)([("q", "a"), ("q", "b"), ("q", "c")])


def test_scores_are_cached_so_a_second_run_sends_nothing(tmp_path: Path) -> None:
    texts = {f"c{i}": f"chunk {i}" for i in range(5)}

    def source(query: str, k: int) -> list[str]:
        return list(texts)[:k]

    with FakeReranker() as server:
        client = scorer(server)
        for _ in range(2):
            cache = Cache(tmp_path / "cache").namespace("rerank", client.id, ext="f64", dtype="<f8")
            rerank = RerankRetriever(source, texts, client, cache, depth=5, min_score=None)
            ranked = rerank("q", 3)
            cache.flush()  # as the session does after each retriever's run
    assert len(server.requests) == 1
    expected = sorted(texts, key=lambda cid: (-fake_score("q", texts[cid]), cid))[:3]
    assert ranked == expected


def rerank_config(tmp_path: Path, lines: str) -> RetrieverSpec:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.ragretrieval]\nchunks = "c.jsonl"\nevalset = "e.jsonl"\n'
        + retriever("bm25", "bm25") + retriever("r", "rerank", source="bm25") + f"{lines}\n",
        encoding="utf-8",
    )
    return load_config(None, tmp_path).retriever("r")


def test_the_cross_encoder_parameters_stay_as_they_were(tmp_path: Path) -> None:
    """Baselines recorded before the HTTP backend existed stay comparable."""
    assert rerank_config(tmp_path, "").params == {
        "source": "bm25", "depth": 20, "model": "BAAI/bge-reranker-base", "batch_size": 32, "min_score": None,
    }


def test_an_endpoint_with_its_api_joins_the_parameters(tmp_path: Path) -> None:
    spec = rerank_config(tmp_path, 'endpoint = "http://127.0.0.1:8080/rerank"\napi = "tei"')
    assert spec.params == {
        "source": "bm25", "depth": 20, "model": None, "batch_size": 32, "min_score": None,
        "endpoint": "http://127.0.0.1:8080/rerank", "api": "tei",
    }
    assert spec.module.details(spec.params) == {"reranker": "http-tei:default@http://127.0.0.1:8080/rerank"}


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ('endpoint = "http://x/rerank"', "key 'api': is required with endpoint: \"tei\" (text-embeddings-inference) or \"cohere\" (Cohere, Jina, vLLM)"),
        ('endpoint = "http://x/rerank"\napi = "jina"', "key 'api': must be one of 'cohere', 'tei', got 'jina'"),
        ('endpoint = "x/rerank"\napi = "tei"', "key 'endpoint': 'x/rerank' is not an http:// or https:// URL with a "
         "host; write it as http://host:port/path"),
        # issue 40, item 11: a bad port was a traceback in the client, credentials went out as Basic auth
        ('endpoint = "http://127.0.0.1:1:2/rerank"\napi = "tei"', "key 'endpoint': 'http://127.0.0.1:1:2/rerank' is "
         "not a URL (Port could not be cast to integer value as '1:2'); write it as http://host:port/path"),
        ('endpoint = "http://u:secret@127.0.0.1/rerank"\napi = "tei"', "key 'endpoint': holds a user name or password "
         "(user:password@), which an HTTP client sends as Basic auth and a server may echo; remove them (the key goes "
         "in the environment variable api_key_env names)"),
        ('api = "tei"', "key 'api': applies only with endpoint = \"http://...\" (a rerank service)"),
    ],
)
def test_bad_http_settings_name_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lines: str, message: str) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as error:
        rerank_config(tmp_path, lines)
    assert str(error.value) == f"pyproject.toml [tool.ragretrieval.retrievers.r] {message}"
