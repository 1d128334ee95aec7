"""The openai: embedder through the real openai client against a local scripted server."""
from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from openai_server import FakeOpenAI, Reply, fake_vector

from pytest_ragretrieval.cache import Cache
from pytest_ragretrieval.config.settings import load_config
from pytest_ragretrieval.embedding import make_embedder
from pytest_ragretrieval.embedding.cached import CachedEmbedder
from pytest_ragretrieval.embedding.openai import OpenAIEmbedder, retry_after, where
from pytest_ragretrieval.errors import RagError

KEY = "sk-test-SECRET1234567890"


class Fast(OpenAIEmbedder):
    """Tiny delays so retry tests take milliseconds."""

    base_delay = 0.001
    max_retry_after = 0.05
    timeout = 5.0


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
    options: dict[str, object] = {"base_url": server.url, "api_key": KEY, "sleep": sleeps.append}
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


def test_retry_after_is_honoured_and_capped(server: FakeOpenAI, sleeps: list[float]) -> None:
    server.script(
        Reply(429, headers={"Retry-After": "0.02"}),
        Reply(503, headers={"Retry-After": "600"}),
        Reply(429, headers={"retry-after-ms": "30"}),
    )
    embedder(server, sleeps).embed(["alpha"])
    assert sleeps == [0.02, 0.05, 0.03]
    assert len(server.requests) == 4


def test_a_persistent_500_names_status_and_attempts(server: FakeOpenAI, sleeps: list[float]) -> None:
    server.script(*[500] * 5)
    with pytest.raises(RagError) as caught:
        embedder(server, sleeps).embed(["alpha"])
    message = str(caught.value)
    embedder_id = f"openai:text-embedding-3-small@{server.url}"
    assert message.startswith(f"embedder {embedder_id!r}: HTTP 500 (scripted failure) after 5 attempts")
    assert "\n" not in message
    assert len(server.requests) == 5
    assert sleeps == [0.001, 0.002, 0.004, 0.008]


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
    server.script(*[Reply(500, message=f"bearer {KEY} rejected")] * 5)
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
    fast.timeout, fast.max_attempts = 0.1, 2
    with pytest.raises(RagError, match=r": timeout \(0.1s per request\) after 2 attempts; "):
        fast.embed(["alpha"])


def test_a_refused_connection_is_retried_then_reported(sleeps: list[float]) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    fast = Fast(base_url=f"http://127.0.0.1:{port}/v1", sleep=sleeps.append)
    fast.max_attempts = 3
    with pytest.raises(RagError, match=r": connection failed .* after 3 attempts; "):
        fast.embed(["alpha"])
    assert sleeps == [0.001, 0.002]


def test_ids_name_model_and_server() -> None:
    assert OpenAIEmbedder().id == "openai:text-embedding-3-small@api.openai.com"
    assert OpenAIEmbedder("nomic-embed-text", base_url="http://user:pw@localhost:11434/v1/?x=1").id == (
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
