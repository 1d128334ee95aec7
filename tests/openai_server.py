"""A local stand-in for `POST /v1/embeddings`, scripted per test, for the real openai client.

Replies are taken from a queue (`server.script(429, 200)` or `Reply(...)` items); an empty
queue answers 200. Vectors are derived from the text's hash, so they are deterministic and
tests can compute the expected rows with `fake_vector`.
"""
from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DIMENSION = 8


def fake_vector(text: str, dimension: int = DIMENSION) -> list[float]:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return [(digest[i % len(digest)] - 127.5) / 127.5 for i in range(dimension)]


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a status, an optional delay before it, extra headers, shuffled data."""

    status: int = 200
    delay: float = 0.0
    headers: Mapping[str, str] = field(default_factory=dict)
    shuffle: bool = False
    message: str = "scripted failure"


@dataclass(frozen=True)
class Request:
    path: str
    headers: Mapping[str, str]
    body: Mapping[str, Any]

    @property
    def inputs(self) -> list[str]:
        value = self.body.get("input", [])
        return [value] if isinstance(value, str) else list(value)


class FakeOpenAI:
    """`with FakeOpenAI() as server:` serves on 127.0.0.1 at `server.url` (ends in /v1)."""

    def __init__(self, dimension: int = DIMENSION) -> None:
        self.dimension = dimension
        self.requests: list[Request] = []
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def script(self, *replies: int | Reply) -> None:
        with self._lock:
            self._replies.extend(item if isinstance(item, Reply) else Reply(status=item) for item in replies)

    def reset(self) -> None:
        with self._lock:
            self._replies.clear()
            self.requests.clear()

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, request: Request) -> tuple[Reply, dict[str, Any]]:
        with self._lock:
            self.requests.append(request)
            reply = self._replies.popleft() if self._replies else Reply()
        if request.path != "/v1/embeddings":
            return Reply(status=404), _error(f"no route {request.path}", "invalid_request_error")
        if reply.status != 200:
            return reply, _error(reply.message, "rate_limit_exceeded" if reply.status == 429 else "server_error")
        data = [
            {"object": "embedding", "index": index, "embedding": fake_vector(text, self.dimension)}
            for index, text in enumerate(request.inputs)
        ]
        if reply.shuffle:
            data.reverse()
        tokens = sum(len(text.split()) for text in request.inputs)
        return reply, {
            "object": "list",
            "data": data,
            "model": request.body.get("model", ""),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def _handler(server: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            request = Request(self.path, {k.lower(): v for k, v in self.headers.items()}, json.loads(raw or b"{}"))
            reply, body = server.answer(request)
            if reply.delay:
                time.sleep(reply.delay)
            payload = json.dumps(body).encode("utf-8")
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
