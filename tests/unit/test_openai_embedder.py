"""The openai: embedder through the real openai client against a local scripted server."""
from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from openai_server import FakeOpenAI, Reply, fake_vector

from pytest_ragretrieval.cache.store import Cache
from pytest_ragretrieval.config.settings import load_config
from pytest_ragretrieval.core.errors import ConfigError, RagError
from pytest_ragretrieval.embedding import make_embedder
from pytest_ragretrieval.embedding.cached import CachedEmbedder
from pytest_ragretrieval.embedding.openai import OpenAIEmbedder, retry_after, where

KEY = "sk-test-SECRET1234567890"


class Fast(OpenAIEmbedder):
    """Tiny delays so retry tests take milliseconds."""

    base_delay = 0.001


@pytest.fixture(scope="module")
def module_server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def server(module_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAI:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    module_server.reset()
    return module_server


@pytest.fixture
def sleeps() -> list[float]:
    return []


def embedder(server: FakeOpenAI, sleeps: list[float], **kwargs: object) -> Fast:
    options: dict[str, object] = {"base_url": server.url, "api_key": KEY, "sleep": sleeps.append, "timeout": 5.0}
    options.update(kwargs)
    return Fast("text-embedding-3-small", **options)  # type: ignore[arg-type]


def expected(texts: list[str]) -> np.ndarray:
    return np.array([fake_vector(text) for text in texts], dtype=np.float32)


def test_embeds_with_the_key_in_the_authorization_header(server: FakeOpenAI, sleeps: list[float]) -> None:
    vectors = embedder(server, sleeps).embed(["alpha", "beta"])
    np.testing.assert_array_equal(vectors, expected(["alpha", "beta"]))
    assert vectors.dtype == np.float32
    (request,) = server.requests
    assert request.path == "/v1/embeddings"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body["model"] == "text-embedding-3-small"
    assert request.body["encoding_format"] == "float"


def test_a_429_then_success_retries_once(server: FakeOpenAI, sleeps: list[float]) -> None:
    server.script(429, 200)
    vectors = embedder(server, sleeps).embed(["alpha"])
    np.testing.assert_array_equal(vectors, expected(["alpha"]))
    assert len(server.requests) == 2
    assert sleeps == [0.001]


def test_retry_after_is_honoured(server: FakeOpenAI, sleeps: list[float]) -> None:
    server.script(Reply(429, headers={"Retry-After": "0.02"}), Reply(503, headers={"retry-after-ms": "30"}))
    embedder(server, sleeps).embed(["alpha"])
    assert sleeps == [0.02, 0.03]
    assert len(server.requests) == 3


def test_a_retry_after_beyond_the_budget_fails_at_once(server: FakeOpenAI, sleeps: list[float]) -> None:
    server.script(Reply(429, headers={"Retry-After": "3600"}, message="slow down"))
    plain = OpenAIEmbedder(base_url=server.url, api_key=KEY, sleep=sleeps.append, timeout=2.0, retries=1)
    with pytest.raises(RagError) as caught:
        plain.embed(["alpha"])
    assert str(caught.value).endswith(
        "batch 1 of 1: HTTP 429 (slow down), and the server asks to wait 3600 s (Retry-After), "
        "more than is left of this embedder's 4.5 s budget for failures; try again later"
    )
    assert len(server.requests) == 1 and sleeps == []


def test_a_persistent_500_names_status_and_attempts(server: FakeOpenAI, sleeps: list[float]) -> None:
    server.script(*[500] * 3)
    with pytest.raises(RagError) as caught:
        embedder(server, sleeps).embed(["alpha"])
    message = str(caught.value)
    embedder_id = f"openai:text-embedding-3-small@{server.url}"
    assert message == (
        f"embedder {embedder_id!r}: batch 1 of 1: HTTP 500 (scripted failure) after 3 attempts; "
        "check the server or try again later (embedding_timeout = 5, embedding_retries = 2)"
    )
    assert len(server.requests) == 3
    assert sleeps == [0.001, 0.002]


def test_batches_follow_embedding_batch_size(server: FakeOpenAI, sleeps: list[float]) -> None:
    texts = [f"text {i}" for i in range(5)]
    vectors = embedder(server, sleeps, batch_size=2).embed(texts)
    assert [request.inputs for request in server.requests] == [texts[0:2], texts[2:4], texts[4:5]]
    np.testing.assert_array_equal(vectors, expected(texts))


def test_rows_follow_index_when_the_server_shuffles(server: FakeOpenAI, sleeps: list[float]) -> None:
    server.script(Reply(shuffle=True))
    texts = ["one", "two", "three"]
    np.testing.assert_array_equal(embedder(server, sleeps).embed(texts), expected(texts))


def test_a_400_fails_at_once_with_the_server_message(server: FakeOpenAI, sleeps: list[float]) -> None:
    server.script(Reply(400, message="'input' must not be empty"))
    with pytest.raises(RagError, match=r"HTTP 400 from the server: 'input' must not be empty$"):
        embedder(server, sleeps).embed(["alpha"])
    assert len(server.requests) == 1 and sleeps == []


def test_the_key_never_appears_in_messages(server: FakeOpenAI, sleeps: list[float]) -> None:
    server.script(Reply(401, message=f"Incorrect API key provided: {KEY}. Also sk-test-****7890."))
    with pytest.raises(RagError) as unauthorized:
        embedder(server, sleeps).embed(["alpha"])
    server.script(*[Reply(500, message=f"bearer {KEY} rejected")] * 3)
    with pytest.raises(RagError) as failing:
        embedder(server, sleeps).embed(["alpha"])
    for error in (unauthorized.value, failing.value):
        assert KEY not in str(error) and "7890" not in str(error)
        assert "SECRET" not in repr(error)
    assert "HTTP 401" in str(unauthorized.value) and "check OPENAI_API_KEY" in str(unauthorized.value)
    assert KEY not in repr(embedder(server, sleeps))


def test_a_timeout_is_retried(server: FakeOpenAI, sleeps: list[float]) -> None:
    server.script(Reply(delay=1.0), 200)
    fast = embedder(server, sleeps)
    fast.timeout = 0.2
    np.testing.assert_array_equal(fast.embed(["alpha"]), expected(["alpha"]))
    assert len(server.requests) == 2 and sleeps == [0.001]


def test_persistent_timeouts_say_timeout(server: FakeOpenAI, sleeps: list[float]) -> None:
    server.script(Reply(delay=1.0), Reply(delay=1.0))
    fast = embedder(server, sleeps)
    fast.timeout, fast.retries = 0.1, 1
    with pytest.raises(RagError, match=r": timeout \(0.1s per request\) after 2 attempts; "):
        fast.embed(["alpha"])


def test_a_refused_connection_is_retried_then_reported(sleeps: list[float]) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    fast = Fast(base_url=f"http://127.0.0.1:{port}/v1", sleep=sleeps.append)
    with pytest.raises(RagError, match=r": connection failed .* after 3 attempts; "):
        fast.embed(["alpha"])
    assert sleeps == [0.001, 0.002]


def test_ids_name_model_and_server() -> None:
    assert OpenAIEmbedder().id == "openai:text-embedding-3-small@api.openai.com"
    assert OpenAIEmbedder("nomic-embed-text", base_url="http://localhost:11434/v1/?x=1").id == (
        "openai:nomic-embed-text@http://localhost:11434/v1"
    )
    assert where("http://localhost:8080") == "http://localhost:8080"


def test_retry_after_forms() -> None:
    assert retry_after({"retry-after": "2"}) == 2.0
    assert retry_after({"retry-after-ms": "250"}) == 0.25
    assert retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert retry_after({"retry-after": "soon"}) is None
    assert retry_after({}) is None


def write_config(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "rag.toml"
    body = ['chunks = "c.jsonl"', 'evalset = "e.jsonl"', *lines, "[retrievers.bm25]", 'type = "bm25"']
    path.write_text("\n".join(body) + "\n", encoding="utf-8")
    return path


def test_config_with_a_base_url_uses_a_dummy_key(server: FakeOpenAI, tmp_path: Path) -> None:
    path = write_config(tmp_path, 'embedding = "openai:"', f'embedding_base_url = "{server.url}"', "embedding_batch_size = 3")
    config = load_config(str(path), tmp_path)
    made = make_embedder(config)
    assert isinstance(made, OpenAIEmbedder)
    assert made.id == f"openai:text-embedding-3-small@{server.url}" and made.batch_size == 3
    made.embed(["a"])
    assert server.requests[0].headers["authorization"] == "Bearer unused"


def test_without_base_url_or_key_the_error_says_set_the_key(server: FakeOpenAI, tmp_path: Path) -> None:
    path = write_config(tmp_path, 'embedding = "openai:text-embedding-3-large"')
    made = make_embedder(load_config(str(path), tmp_path))
    assert made.id == "openai:text-embedding-3-large@api.openai.com"
    with pytest.raises(RagError, match=r"needs an API key: set OPENAI_API_KEY"):
        made.embed(["a"])


def test_a_cached_run_needs_no_key_and_sends_nothing(server: FakeOpenAI, sleeps: list[float], tmp_path: Path) -> None:
    texts = ["alpha", "beta"]
    first = CachedEmbedder(embedder(server, sleeps), Cache(tmp_path))
    first.embed(texts)
    assert len(server.requests) == 1
    keyless = Fast(base_url=server.url, sleep=sleeps.append)
    keyless.base_url = None
    keyless.id = first.id
    second = CachedEmbedder(keyless, Cache(tmp_path, "readonly"))
    np.testing.assert_array_equal(second.embed(texts), expected(texts))
    assert len(server.requests) == 1 and second.stats.embedded == 0


def test_a_trickling_answer_is_cut_at_the_deadline(server: FakeOpenAI, sleeps: list[float]) -> None:
    server.script(Reply(fault="trickle"), 200)
    fast = embedder(server, sleeps, timeout=0.5, retries=1)
    np.testing.assert_array_equal(fast.embed(["alpha"]), expected(["alpha"]))
    assert len(server.requests) == 2 and sleeps == [0.001]


def test_an_answer_cut_in_half_or_a_reset_is_retried_then_named(server: FakeOpenAI, sleeps: list[float]) -> None:
    server.script(Reply(fault="half"), 200)
    np.testing.assert_array_equal(embedder(server, sleeps).embed(["alpha"]), expected(["alpha"]))
    server.script(Reply(fault="reset"), Reply(fault="reset"))
    with pytest.raises(RagError, match=r": batch 1 of 1: connection failed \(.+\) after 2 attempts; "):
        embedder(server, sleeps, retries=1).embed(["alpha"])


def test_an_answer_that_is_not_json_names_the_batch(server: FakeOpenAI, sleeps: list[float]) -> None:
    server.script(200, Reply(fault="garbage"))
    with pytest.raises(RagError) as caught:
        embedder(server, sleeps, batch_size=2).embed(["a", "b", "c"])
    assert str(caught.value).endswith(
        "batch 2 of 2: the server's answer is not JSON (Expecting value: line 1 column 1 (char 0); it begins "
        "'<html><body><h1>502 Bad Gateway</h1></body></html>'); check that embedding_base_url is the server's "
        "OpenAI-compatible address (it usually ends in /v1)"
    )
    assert len(server.requests) == 2 and sleeps == []


def test_an_answer_without_data_names_what_it_holds(server: FakeOpenAI, sleeps: list[float]) -> None:
    server.script(Reply(fault="nodata"))
    with pytest.raises(RagError, match=r": batch 1 of 1: the server's answer has no 'data' list \(its keys: 'model', 'object'\); "):
        embedder(server, sleeps).embed(["alpha"])


def test_a_missing_index_is_named(server: FakeOpenAI, sleeps: list[float]) -> None:
    server.script(Reply(fault="missing"))
    with pytest.raises(RagError, match=r": batch 1 of 1: the server returned embeddings for indices \[1, 2\] when 3 inputs were sent \(missing \[0\]\)"):
        embedder(server, sleeps).embed(["a", "b", "c"])


def test_a_dimension_change_names_both_batches(server: FakeOpenAI, sleeps: list[float]) -> None:
    server.script(200, Reply(dimension=16))
    with pytest.raises(RagError, match=r": batch 2 of 2: the server returned vectors of dimension 16, but batch 1 of 2 had dimension 8; "):
        embedder(server, sleeps, batch_size=1).embed(["a", "b"])
    fast = embedder(server, sleeps)
    fast.embed(["a"])
    server.script(Reply(dimension=16))
    with pytest.raises(RagError, match=r": batch 1 of 1: the server returned vectors of dimension 16, but earlier answers had dimension 8; "):
        fast.embed(["b"])


def test_the_key_is_masked_by_value_before_the_message_is_cut(server: FakeOpenAI, sleeps: list[float]) -> None:
    key = "tei-7f3a9c1e5b2d4f60a8b1"
    server.script(Reply(401, message="x" * 280 + " key {key} is not valid"))
    with pytest.raises(RagError) as caught:
        embedder(server, sleeps, api_key=key).embed(["alpha"])
    message = str(caught.value)
    assert "tei-" not in message and "7f3a" not in message and "x" * 280 + " key *** is not v..." in message
    assert message.endswith("...; check OPENAI_API_KEY")


class Ticks:
    """A clock that moves half a second per reading: failed attempts cost exactly 0.5 s each."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 0.5
        return self.now


def test_failures_across_batches_share_one_budget(server: FakeOpenAI, sleeps: list[float]) -> None:
    fast = embedder(server, sleeps, timeout=0.5, retries=1, batch_size=1, clock=Ticks())
    fast.base_delay = 0.25
    assert fast.budget == 1.25
    server.script(Reply(fault="reset"), 200, Reply(fault="reset"))
    with pytest.raises(RagError) as caught:
        fast.embed(["a", "b"])
    assert ": batch 2 of 2: connection failed (" in str(caught.value)
    assert str(caught.value).endswith(
        "; not retried: this embedder's 1.25 s budget for failures in one session is spent "
        "(embedding_timeout x (embedding_retries + 1), plus backoff)"
    )
    assert len(server.requests) == 3 and sleeps == [0.25]


def test_the_budget_follows_timeout_and_retries() -> None:
    assert OpenAIEmbedder().budget == 30 * 3 + 0.5 + 1.0
    assert OpenAIEmbedder(timeout=2, retries=1).budget == 4.5
    assert OpenAIEmbedder(timeout=10, retries=0).budget == 10


BAD_URLS = [
    ("http://127.0.0.1:1:2/v1", "'http://127.0.0.1:1:2/v1' is not a URL (Port could not be cast to integer value as "
     "'1:2'); write it as http://host:port/path"),
    ("http://[127.0.0.1/v1", "'http://[127.0.0.1/v1' is not a URL (Invalid IPv6 URL); write it as http://host:port/path"),
    ("http://127.0.0.1/v1\nx", "holds a control character (U+000A); write the URL alone"),
    ("http://user:hunter22@127.0.0.1/v1", "holds a user name or password (user:password@), which an HTTP client "
     "sends as Basic auth and a server may echo; remove them (the key goes in OPENAI_API_KEY)"),
]


@pytest.mark.parametrize(("url", "problem"), BAD_URLS)
def test_a_bad_embedding_base_url_is_one_line_naming_the_key(tmp_path: Path, url: str, problem: str) -> None:
    """issue 40, item 11: `embedding_base_url = "http://127.0.0.1:1:2/v1"` (or an unclosed `[`, a line break)
    gave a 90-line traceback from the client; credentials in it were sent as Basic auth."""
    path = write_config(tmp_path, 'embedding = "openai:"', f"embedding_base_url = {json.dumps(url)}")
    with pytest.raises(ConfigError) as caught:
        load_config(str(path), tmp_path)
    assert str(caught.value) == f"{path} key 'embedding_base_url': {problem}"


@pytest.mark.parametrize(("url", "problem"), BAD_URLS)
def test_a_bad_openai_base_url_variable_is_one_line(monkeypatch: pytest.MonkeyPatch, url: str, problem: str) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    with pytest.raises(RagError) as caught:
        OpenAIEmbedder()
    assert str(caught.value) == f"OPENAI_BASE_URL: {problem}"
