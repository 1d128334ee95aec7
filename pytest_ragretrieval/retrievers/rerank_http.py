"""Reranking by an HTTP service: TEI's `/rerank`, or the Cohere shape that Cohere, Jina and vLLM speak.

Requests, by `api`:
  - "cohere" (Cohere /v1|v2/rerank, Jina /v1/rerank, vLLM /rerank|/v1/rerank|/v2/rerank):
    {"model", "query", "documents": [...], "top_n": n}
  - "tei" (text-embeddings-inference /rerank): {"query", "texts": [...], "raw_scores": false}
Either response is understood: {"results": [{"index", "relevance_score"}, ...]} or
[{"index", "score"}, ...]; every document sent must come back exactly once.

Only the standard library is used (urllib), so the extra needs nothing new. Each request has
`timeout` seconds for its whole answer (urllib's bounds each read: a server trickling bytes would
hold the run; `core/deadline.py`), so a batch takes at most `max_attempts` x `timeout` plus
`max_wait`. Retries follow the OpenAI embedder: 429, 5xx, timeouts and connection errors back off
exponentially (Retry-After wins, capped), up to `max_attempts` per batch and `max_wait` seconds lost
to failed attempts and waits per run (the run's total budget for failures); any other status fails
at once naming it. The API key is read from the environment variable the
config names and never appears in a message.
"""
from __future__ import annotations

import io
import json
import math
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from ..core.deadline import Late, within
from ..core.errors import RetrieverError, RetrieverUnavailable
from ..embedding.openai import retry_after

_HINTS = {
    401: "; check the API key variable named in api_key_env",
    403: "; check the API key and its permissions",
    404: "; check `endpoint` (the full URL, e.g. http://host:8080/rerank) and `model`",
    413: "; lower batch_size (TEI accepts 32 texts per request unless --max-client-batch-size is raised)",
    422: "; check `api`: TEI wants api = \"tei\", Cohere, Jina and vLLM want api = \"cohere\"",
}


def _post(request: urllib.request.Request, timeout: float) -> bytes:
    """The answer's body; an error status's body is read here too, so that it is within the deadline."""
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return bytes(response.read())
    except urllib.error.HTTPError as exc:
        try:
            body = exc.read()
        except OSError:
            body = b""
        raise urllib.error.HTTPError(exc.url, exc.code, exc.msg, exc.headers, io.BytesIO(body)) from None


def where(endpoint: str) -> str:
    """The endpoint as ids and messages name it: no credentials, query or fragment."""
    parts = urlsplit(endpoint)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname or ''}{port}{parts.path}"


def scorer_id(api: str, endpoint: str, model: str | None) -> str:
    """Names the score cache: the same endpoint, api and model give the same scores."""
    return f"http-{api}:{model or 'default'}@{where(endpoint)}"


class HttpRerankScorer:
    """`scorer(pairs) -> scores`, the CrossEncoderScorer interface; pairs sharing a query share requests."""

    base_delay: float = 0.5
    max_attempts: int = 5
    max_retry_after: float = 30.0
    max_wait: float = 120.0

    def __init__(
        self,
        endpoint: str,
        *,
        api: str = "cohere",
        model: str | None = None,
        batch_size: int = 32,
        timeout: float = 60.0,
        api_key_env: str | None = None,
        environ: Mapping[str, str] = os.environ,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.endpoint = endpoint
        self.api = api
        self.model = model
        self.batch_size = batch_size
        self.timeout = timeout
        self.id = scorer_id(api, endpoint, model)
        self.sleep = sleep
        self.clock = clock
        self.waited = 0.0
        """Seconds this run lost to failed attempts and to waits between them, against `max_wait`."""
        self.requests = 0
        self.api_key_env = api_key_env
        self._key = environ.get(api_key_env, "") if api_key_env else ""

    def __call__(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        scores: list[float] = []
        start = 0
        while start < len(pairs):
            query = pairs[start][0]
            end = start
            while end < len(pairs) and end - start < self.batch_size and pairs[end][0] == query:
                end += 1
            scores.extend(self._batch(query, [text for _, text in pairs[start:end]]))
            start = end
        return scores

    def _body(self, query: str, texts: list[str]) -> dict[str, Any]:
        if self.api == "tei":
            return {"query": query, "texts": texts, "raw_scores": False}
        body: dict[str, Any] = {"query": query, "documents": texts, "top_n": len(texts)}
        if self.model:
            body["model"] = self.model
        return body

    def _batch(self, query: str, texts: list[str]) -> list[float]:
        if self.api_key_env and not self._key:
            raise RetrieverUnavailable(
                f"reranker {self.id!r} needs an API key in ${self.api_key_env}, which is not set"
            )
        data = json.dumps(self._body(query, texts)).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        failure = ""
        for attempt in range(1, self.max_attempts + 1):
            wait: float | None = None
            request = urllib.request.Request(self.endpoint, data=data, headers=headers, method="POST")
            self.requests += 1
            started = self.clock()
            try:
                payload = within(partial(_post, request, self.timeout), self.timeout, "rag-rerank-request")
                return self._scores(payload, len(texts))
            except urllib.error.HTTPError as exc:
                status = exc.code
                message = self._message(exc)
                if status != 429 and status < 500:
                    raise RetrieverError(
                        f"reranker {self.id!r}: HTTP {status} from the server: {message}{_HINTS.get(status, '')}"
                    ) from None
                failure = f"HTTP {status} ({message})"
                wait = retry_after(exc.headers)
            except (TimeoutError, Late):
                failure = f"timeout ({self.timeout:g}s per request)"
            except urllib.error.URLError as exc:
                reason = exc.reason
                if isinstance(reason, TimeoutError):
                    failure = f"timeout ({self.timeout:g}s per request)"
                else:
                    failure = f"connection failed ({self._redact(str(reason))})"
            except (ConnectionError, OSError) as exc:  # RemoteDisconnected, resets mid-response
                failure = f"connection failed ({self._redact(type(exc).__name__ + ': ' + str(exc))})"
            self.waited += self.clock() - started
            if attempt == self.max_attempts:
                break
            delay = min(wait if wait is not None else self.base_delay * 2 ** (attempt - 1), self.max_retry_after)
            if self.waited + delay > self.max_wait:
                failure += (f"; gave up after losing {self.waited:g}s in all to failed attempts and waits "
                            f"(max_wait {self.max_wait:g}s)")
                break
            self.waited += delay
            self.sleep(delay)
        raise RetrieverError(
            f"reranker {self.id!r}: {failure} after {attempt} attempt{'s' if attempt > 1 else ''}; "
            "check the server or try again later"
        )

    def _scores(self, payload: bytes, rows: int) -> list[float]:
        """Scores in input order from either response shape; anything else is one clear error."""
        try:
            body = json.loads(payload)
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise RetrieverError(f"reranker {self.id!r}: the response is not JSON: {payload[:80]!r}") from None
        if isinstance(body, dict) and isinstance(body.get("results"), list):
            items, field = body["results"], "relevance_score"
        elif isinstance(body, list):
            items, field = body, "score"
        else:
            raise RetrieverError(
                f"reranker {self.id!r}: unexpected response {str(body)[:120]!r}; expected "
                "{\"results\": [{\"index\", \"relevance_score\"}]} or [{\"index\", \"score\"}]"
            )
        scores: dict[int, float] = {}
        for item in items:
            index = item.get("index") if isinstance(item, dict) else None
            value = item.get(field) if isinstance(item, dict) else None
            if (
                not isinstance(index, int)
                or isinstance(index, bool)
                or not isinstance(value, (int, float))
                or isinstance(value, bool)
                or not math.isfinite(value)
                or index in scores
            ):
                raise RetrieverError(
                    f"reranker {self.id!r}: bad result {str(item)[:120]!r}; each needs a unique integer "
                    f"'index' and a finite '{field}'"
                )
            scores[index] = float(value)
        if sorted(scores) != list(range(rows)):
            raise RetrieverError(
                f"reranker {self.id!r}: the server scored indices {sorted(scores)[:10]} of {rows} documents sent; "
                "it must score every one (is top_n honoured?)"
            )
        return [scores[i] for i in range(rows)]

    def _message(self, exc: urllib.error.HTTPError) -> str:
        try:
            raw = exc.read().decode("utf-8", "replace")
        except OSError:
            raw = ""
        text = raw
        try:
            body = json.loads(raw)
            if isinstance(body, dict):
                inner = body.get("error", body.get("message", body.get("detail", body)))
                if isinstance(inner, dict):
                    inner = inner.get("message", inner)
                text = str(inner)
        except json.JSONDecodeError:
            pass
        text = " ".join(text.split()) or exc.reason or ""
        return self._redact(text[:300] + ("..." if len(text) > 300 else ""))

    def _redact(self, text: str) -> str:
        return text.replace(self._key, "***") if self._key else text

