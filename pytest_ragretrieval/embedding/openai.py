"""`openai:<model>`: OpenAI's embeddings API, or any compatible server (vLLM, Ollama, TEI) at base_url.

The client runs with max_retries=0 and we retry ourselves, so the policy is deterministic and
testable. Every request has a deadline (`embedding_timeout`, the whole answer included, so a
server that trickles bytes cannot hold the run); 429, 5xx, timeouts and lost connections are
tried `embedding_retries` more times with exponential backoff (Retry-After wins); any other 4xx,
and any 200 whose body is not an embeddings answer, fails at once with a line naming the batch.
Across the session the embedder may lose at most `budget` seconds to failures (one request's
attempts and waits); a Retry-After beyond that fails at once. The key sent is masked by value before
any message is cut; a base_url with credentials in it is refused (`core/urls.py`).
"""
from __future__ import annotations

import base64
import binascii
import email.utils
import json
import os
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from ..core.deadline import Late, within
from ..core.errors import RagError
from ..core.optional import need
from ..core.redact import mask, safe_line
from ..core.urls import url_problem
from .base import DEFAULT_RETRIES, DEFAULT_TIMEOUT, EmbedderSettings, check_vectors
from .prompts import Prompts, Side

DEFAULT_MODEL = "text-embedding-3-small"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
PLACEHOLDER_KEY = "unused"
"""Sent to servers at embedding_base_url when no key is set: they need none, the client needs one."""
SERVER_TEXT = 300
"""How much of a server's own message a line quotes, after masking."""
RETRIED = {408, 409, 429}
_HINTS = {
    401: "; check OPENAI_API_KEY",
    403: "; check OPENAI_API_KEY and the key's permissions",
    404: "; check the model name and embedding_base_url",
}
_ANSWER_SHAPE = '{"data": [{"index": 0, "embedding": [...]}, ...]}'


def where(base_url: str | None) -> str:
    """The server as the id names it: no credentials, query or trailing slash."""
    if not base_url:
        return "api.openai.com"
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path.rstrip('/')}" if parts.scheme else base_url.rstrip("/")


class OpenAIEmbedder:
    """Batches of `batch_size` texts; each request has a deadline, and every failure spends one budget."""

    base_delay: float = 0.5
    max_delay: float = 8.0

    def __init__(
        self,
        model: str = "",
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        batch_size: int = 64,
        id: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        prompts: Prompts | None = None,
    ) -> None:
        self.model = model or DEFAULT_MODEL
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or "").rstrip("/") or None
        problem = url_problem(self.base_url, "the key goes in OPENAI_API_KEY") if self.base_url else None
        if problem is not None:
            raise RagError(f"{'embedding_base_url' if base_url else 'OPENAI_BASE_URL'}: {problem}")
        self.batch_size = batch_size
        self.prompts = prompts or Prompts()
        self.id = self.prompts.full_id(id or f"openai:{self.model}@{where(self.base_url)}")
        self.timeout = timeout
        self.retries = retries
        self.sleep = sleep
        self.clock = clock
        self.lost = 0.0
        """Seconds this session lost to failed attempts and waits, against `budget`."""
        self._api_key = api_key
        self._secret = ""
        self._client: Any = None
        self._dimension: tuple[int, str] | None = None
        self._extra: dict[str, str] | None = None
        """The body fields of the side being embedded (`input_type`), sent with each request."""

    @property
    def attempts(self) -> int:
        return self.retries + 1

    def backoff(self, attempt: int) -> float:
        """The wait after failed attempt `attempt` (from 1) when the server names none."""
        return float(min(self.base_delay * 2 ** (attempt - 1), self.max_delay))

    @property
    def budget(self) -> float:
        """What the embedder may lose to failures in one session: one request's attempts and waits."""
        return self.timeout * self.attempts + sum(self.backoff(n) for n in range(1, self.attempts))

    def embed(self, texts: list[str], side: Side = "passage") -> np.ndarray:
        """The side's prompt goes before each text; its `input_type`, when set, goes in the request body."""
        client = self._connect()
        texts = self.prompts.apply(list(texts), side)
        self._extra = {"input_type": kind} if (kind := self.prompts.input_type(side)) else None
        starts = range(0, len(texts), self.batch_size)
        if self._dimension is not None:
            self._dimension = (self._dimension[0], "earlier answers")
        parts = []
        for number, start in enumerate(starts, 1):
            label = f"batch {number} of {len(starts)}"
            parts.append(self._batch(client, texts[start:start + self.batch_size], label))
        if not parts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.concatenate(parts)

    def _connect(self) -> Any:
        if self._client is not None:
            return self._client
        key = self._api_key or os.environ.get("OPENAI_API_KEY") or (PLACEHOLDER_KEY if self.base_url else "")
        if not key:
            raise RagError(
                f"embedder {self.id!r} needs an API key: set OPENAI_API_KEY, "
                "or set embedding_base_url to an OpenAI-compatible server"
            )
        openai = need("openai", f"embedder {self.id!r}")
        self._secret = "" if key == PLACEHOLDER_KEY else key
        self._client = openai.OpenAI(
            base_url=self.base_url or DEFAULT_BASE_URL, api_key=key, max_retries=0, timeout=self.timeout
        )
        return self._client

    @property
    def _secrets(self) -> list[str]:
        """The values no message may show: the key we sent (base_url holds no credentials: `url_problem`)."""
        return [self._secret] if self._secret else []

    def _error(self, detail: str) -> RagError:
        return RagError(mask(f"embedder {self.id!r}: {detail}", self._secrets))

    def _batch(self, client: Any, batch: list[str], label: str) -> np.ndarray:
        for attempt in range(1, self.attempts + 1):
            started = self.clock()
            answer = self._attempt(client, batch, label)
            if isinstance(answer, bytes):
                return self._vectors(answer, len(batch), label)
            failure, wait = answer
            self.lost += self.clock() - started
            if attempt == self.attempts:
                break
            left = self.budget - self.lost
            if wait is not None and wait > left:
                raise self._error(
                    f"{label}: {failure}, and the server asks to wait {wait:g} s (Retry-After), more than is left "
                    f"of this embedder's {self.budget:g} s budget for failures; try again later"
                )
            if left <= 0:
                raise self._error(
                    f"{label}: {failure}; not retried: this embedder's {self.budget:g} s budget for failures "
                    "in one session is spent (embedding_timeout x (embedding_retries + 1), plus backoff)"
                )
            delay = min(wait if wait is not None else self.backoff(attempt), left)
            self.sleep(delay)
            self.lost += delay
        raise self._error(
            f"{label}: {failure} after {self.attempts} attempts; check the server or try again later "
            f"(embedding_timeout = {self.timeout:g}, embedding_retries = {self.retries})"
        )

    def _attempt(self, client: Any, batch: list[str], label: str) -> bytes | tuple[str, float | None]:
        """The answer's body, or (what went wrong, the server's Retry-After) for a failure worth retrying."""
        import openai

        try:
            return self._send(client, batch)
        except openai.APIStatusError as exc:
            status = exc.status_code
            if status not in RETRIED and status < 500:
                raise self._error(
                    f"{label}: HTTP {status} from the server: {self._message(exc)}{_HINTS.get(status, '')}"
                ) from None
            return f"HTTP {status} ({self._message(exc)})", retry_after(exc.response.headers)
        except (openai.APITimeoutError, Late):
            return f"timeout ({self.timeout:g}s per request)", None
        except openai.APIConnectionError as exc:
            return f"connection failed ({safe_line(str(exc.__cause__ or exc), self._secrets, SERVER_TEXT)})", None
        except openai.OpenAIError as exc:
            raise self._error(f"{label}: {safe_line(f'{type(exc).__name__}: {exc}', self._secrets)}") from None

    def _send(self, client: Any, batch: list[str]) -> bytes:
        """One request, abandoned at the deadline (`core/deadline.py`): the client's own timeouts are per read."""
        return within(lambda: bytes(client.embeddings.with_raw_response.create(
            model=self.model, input=batch, encoding_format="float", timeout=self.timeout, extra_body=self._extra,
        ).content), self.timeout, "rag-embedding-request")

    def _vectors(self, body: bytes, rows: int, label: str) -> np.ndarray:
        """Rows in input order: servers may return `data` in any order, each tagged with `index`."""
        try:
            document = json.loads(body)
        except (ValueError, RecursionError) as exc:
            raise self._error(
                f"{label}: the server's answer is not JSON ({safe_line(str(exc), self._secrets, 120)}; "
                f"it begins {self._preview(body)}); check that embedding_base_url is the server's "
                "OpenAI-compatible address (it usually ends in /v1)"
            ) from None
        data = document.get("data") if isinstance(document, dict) else None
        if not isinstance(data, list):
            raise self._error(f"{label}: the server's answer has no 'data' list ({self._holds(document)}); "
                              f"an OpenAI-compatible server answers {_ANSWER_SHAPE}")
        if not all(isinstance(item, dict) and type(item.get("index")) is int and "embedding" in item for item in data):
            raise self._error(f"{label}: an entry of the answer's 'data' list lacks an integer 'index' or an "
                              f"'embedding'; an OpenAI-compatible server answers {_ANSWER_SHAPE}")
        data = sorted(data, key=lambda item: int(item["index"]))
        indices = [item["index"] for item in data]
        if indices != list(range(rows)):
            missing = sorted(set(range(rows)) - set(indices))
            raise self._error(
                f"{label}: the server returned embeddings for indices {indices[:10]} when {rows} inputs were sent "
                f"(missing {missing[:10]}); it must return one per input"
            )
        try:
            vectors = check_vectors(self.id, [_decode(item["embedding"]) for item in data], rows)
        except (ValueError, binascii.Error):
            raise self._error(f"{label}: an embedding is neither a list of numbers nor base64 float32") from None
        except RagError as exc:
            raise self._error(f"{label}: {str(exc).removeprefix(f'embedder {self.id!r} ')}") from None
        if self._dimension is None:
            self._dimension = (vectors.shape[1], label)
        elif vectors.shape[1] != self._dimension[0]:
            raise self._error(
                f"{label}: the server returned vectors of dimension {vectors.shape[1]}, but {self._dimension[1]} "
                f"had dimension {self._dimension[0]}; one model must always give one dimension "
                "(are several models behind this address?)"
            )
        return vectors

    def _holds(self, document: Any) -> str:
        if not isinstance(document, dict):
            return f"it is a JSON {type(document).__name__}"
        error = document.get("error")
        if error is not None:
            text = error.get("message", error) if isinstance(error, dict) else error
            return f"it holds an error: {safe_line(str(text), self._secrets, SERVER_TEXT)}"
        keys = ", ".join(map(repr, sorted(document)[:8])) or "nothing"
        return f"its keys: {safe_line(keys, self._secrets, SERVER_TEXT)}"

    def _preview(self, body: bytes) -> str:
        return repr(safe_line(body[:2000].decode("utf-8", errors="replace"), self._secrets, 60))

    def _message(self, exc: Any) -> str:
        """The server's own message, masked whole and only then cut."""
        body = exc.body
        if isinstance(body, dict):
            inner = body.get("error", body)
            text = inner.get("message") if isinstance(inner, dict) else inner
            text = str(text if text is not None else body)
        else:
            text = str(body) if body else exc.message
        return safe_line(text, self._secrets, SERVER_TEXT)


def make(model: str, settings: EmbedderSettings) -> OpenAIEmbedder:
    return OpenAIEmbedder(
        model, base_url=settings.base_url, batch_size=settings.batch_size, id=settings.id,
        timeout=settings.timeout, retries=settings.retries, prompts=settings.prompts(),
    )


def retry_after(headers: Any) -> float | None:
    """Seconds the server asked us to wait (`retry-after-ms`, `retry-after` seconds or date)."""
    value = headers.get("retry-after-ms")
    if value:
        try:
            return max(float(value) / 1000, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return None if seconds != seconds else max(seconds, 0.0)
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(moment.timestamp() - time.time(), 0.0)


def _decode(embedding: Any) -> Any:
    """A row as sent: a list of floats, or base64 float32 from servers that ignore encoding_format."""
    if isinstance(embedding, str):
        return np.frombuffer(base64.b64decode(embedding, validate=True), dtype="<f4")
    return embedding
