"""`openai:<model>`: OpenAI's embeddings API, or any compatible server (vLLM, Ollama, TEI) at base_url.

The client runs with max_retries=0 and we retry ourselves, so the policy is deterministic and
testable: 429, 5xx, timeouts and connection errors back off exponentially (Retry-After wins,
capped); any other 4xx fails at once. The API key never appears in a message.
"""
from __future__ import annotations

import base64
import email.utils
import os
import re
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from ..errors import RagError
from .base import EmbedderSettings, check_vectors
from .prompts import Prompts, Side

DEFAULT_MODEL = "text-embedding-3-small"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
_KEY_LIKE = re.compile(r"\bsk-[A-Za-z0-9_*.\-]{3,}")
_HINTS = {
    401: "; check OPENAI_API_KEY",
    403: "; check OPENAI_API_KEY and the key's permissions",
    404: "; check the model name and embedding_base_url",
}


def where(base_url: str | None) -> str:
    """The server as the id names it: no credentials, query or trailing slash."""
    if not base_url:
        return "api.openai.com"
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path.rstrip('/')}" if parts.scheme else base_url.rstrip("/")


class OpenAIEmbedder:
    """Batches of `batch_size` texts, each retried up to `max_attempts` times."""

    base_delay: float = 0.5
    max_attempts: int = 5
    max_retry_after: float = 30.0
    timeout: float = 60.0

    def __init__(
        self,
        model: str = "",
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        batch_size: int = 64,
        id: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
        prompts: Prompts | None = None,
    ) -> None:
        self.model = model or DEFAULT_MODEL
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or "").rstrip("/") or None
        self.batch_size = batch_size
        self.prompts = prompts or Prompts()
        self.id = self.prompts.full_id(id or f"openai:{self.model}@{where(self.base_url)}")
        self.sleep = sleep
        self._api_key = api_key
        self._secret = ""
        self._client: Any = None

    def embed(self, texts: list[str], side: Side = "passage") -> np.ndarray:
        """The side's prompt goes before each text; its `input_type`, when set, goes in the request body."""
        client = self._connect()
        texts = self.prompts.apply(list(texts), side)
        extra = {"input_type": kind} if (kind := self.prompts.input_type(side)) else None
        starts = range(0, len(texts), self.batch_size)
        parts = [self._batch(client, texts[start:start + self.batch_size], extra) for start in starts]
        if not parts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.concatenate(parts)

    def _connect(self) -> Any:
        if self._client is not None:
            return self._client
        key = self._api_key or os.environ.get("OPENAI_API_KEY") or ("unused" if self.base_url else "")
        if not key:
            raise RagError(
                f"embedder {self.id!r} needs an API key: set OPENAI_API_KEY, "
                "or set embedding_base_url to an OpenAI-compatible server"
            )
        try:
            import openai
        except ImportError as exc:
            raise RagError(
                f"embedder {self.id!r} needs the openai client ({exc}); pip install 'pytest-ragretrieval[openai]'"
            ) from None
        self._secret = key
        self._client = openai.OpenAI(
            base_url=self.base_url or DEFAULT_BASE_URL, api_key=key, max_retries=0, timeout=self.timeout
        )
        return self._client

    def _batch(self, client: Any, batch: list[str], extra: dict[str, str] | None = None) -> np.ndarray:
        import openai

        failure = ""
        for attempt in range(1, self.max_attempts + 1):
            wait: float | None = None
            try:
                response = client.embeddings.create(
                    model=self.model, input=batch, encoding_format="float", extra_body=extra
                )
                return self._vectors(response, len(batch))
            except openai.APIStatusError as exc:
                status = exc.status_code
                if status != 429 and status < 500:
                    raise RagError(
                        f"embedder {self.id!r}: HTTP {status} from the server: "
                        f"{self._message(exc)}{_HINTS.get(status, '')}"
                    ) from None
                failure = f"HTTP {status} ({self._message(exc)})"
                wait = retry_after(exc.response.headers)
            except openai.APITimeoutError:
                failure = f"timeout ({self.timeout:g}s per request)"
            except openai.APIConnectionError as exc:
                failure = f"connection failed ({self._redact(str(exc.__cause__ or exc))})"
            except openai.OpenAIError as exc:
                raise RagError(f"embedder {self.id!r}: {self._redact(type(exc).__name__ + ': ' + str(exc))}") from None
            if attempt < self.max_attempts:
                delay = wait if wait is not None else self.base_delay * 2 ** (attempt - 1)
                self.sleep(min(delay, self.max_retry_after))
        raise RagError(
            f"embedder {self.id!r}: {failure} after {self.max_attempts} attempts; "
            "check the server or try again later"
        )

    def _vectors(self, response: Any, rows: int) -> np.ndarray:
        """Rows in input order: servers may return `data` in any order, each tagged with `index`."""
        data = sorted(response.data, key=lambda item: item.index)
        indices = [item.index for item in data]
        if indices != list(range(rows)):
            raise RagError(
                f"embedder {self.id!r}: the server returned embeddings for indices {indices[:10]} "
                f"when {rows} inputs were sent; it must return one per input"
            )
        return check_vectors(self.id, [_decode(item.embedding) for item in data], rows)

    def _message(self, exc: Any) -> str:
        body = exc.body
        if isinstance(body, dict):
            inner = body.get("error", body)
            text = inner.get("message") if isinstance(inner, dict) else inner
            text = str(text if text is not None else body)
        else:
            text = str(body) if body else exc.message
        text = " ".join(text.split())
        return self._redact(text[:300] + ("..." if len(text) > 300 else ""))

    def _redact(self, text: str) -> str:
        if self._secret:
            text = text.replace(self._secret, "***")
        return " ".join(_KEY_LIKE.sub("sk-***", text).split())


def make(model: str, settings: EmbedderSettings) -> OpenAIEmbedder:
    return OpenAIEmbedder(
        model, base_url=settings.base_url, batch_size=settings.batch_size, id=settings.id, prompts=settings.prompts()
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
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(moment.timestamp() - time.time(), 0.0)


def _decode(embedding: Any) -> Any:
    """A row as sent: a list of floats, or base64 float32 from servers that ignore encoding_format."""
    if isinstance(embedding, str):
        return np.frombuffer(base64.b64decode(embedding), dtype="<f4")
    return embedding
