"""A local stand-in for `POST /v1/embeddings` and `POST /v1/chat/completions`, scripted per test, for
the real openai client. A chat answer is `server.chat(prompt)` (the last user message's text).

Replies are taken from a queue (`server.script(429, 200)` or `Reply(...)` items); an empty
queue answers `server.default` (200 unless set). Vectors are derived from the text's hash, so
they are deterministic and tests can compute the expected rows with `fake_vector`.

A reply's `fault` makes the server misbehave the way real ones do: `hang` (never answers),
`trickle` (a byte every 0.2 s), `half` (closes after half the body), `reset` (RST instead of an
answer), `garbage` (200 with an HTML page), `nodata` (200 without `data`), `missing` (one index
left out). `dimension` changes the vectors' length; `{key}` in `message` echoes the key sent.
"""
from __future__ import annotations

import hashlib
import json
import socket
import struct
import threading
from collections import deque
from collections.abc import Callable, Mapping
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
    fault: str = ""
    dimension: int | None = None


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
        self.default = Reply()
        self.chat: Callable[[str], str] = lambda prompt: "##final score: 0"
        self.stopping = threading.Event()
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        assert isinstance(host, str)  # an AF_INET server's address
        return f"http://{host}:{port}/v1"

    def script(self, *replies: int | Reply) -> None:
        with self._lock:
            self._replies.extend(item if isinstance(item, Reply) else Reply(status=item) for item in replies)

    def reset(self) -> None:
        with self._lock:
            self._replies.clear()
            self.requests.clear()
            self.default = Reply()

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def answer(self, request: Request) -> tuple[Reply, dict[str, Any]]:
        with self._lock:
            self.requests.append(request)
            reply = self._replies.popleft() if self._replies else self.default
        if request.path == "/v1/chat/completions" and reply.status == 200:
            return reply, _completion(self.chat(request.body["messages"][-1]["content"]), request)
        if request.path not in ("/v1/embeddings", "/v1/chat/completions"):
            return Reply(status=404), _error(f"no route {request.path}", "invalid_request_error")
        if reply.status != 200:
            key = request.headers.get("authorization", "").removeprefix("Bearer ")
            message = reply.message.replace("{key}", key)
            return reply, _error(message, "rate_limit_exceeded" if reply.status == 429 else "server_error")
        dimension = reply.dimension or self.dimension
        data = [
            {"object": "embedding", "index": index, "embedding": fake_vector(text, dimension)}
            for index, text in enumerate(request.inputs)
        ]
        if reply.shuffle:
            data.reverse()
        if reply.fault == "missing":
            data = data[1:]
        if reply.fault == "nodata":
            return reply, {"object": "list", "model": request.body.get("model", "")}
        tokens = sum(len(text.split()) for text in request.inputs)
        return reply, {
            "object": "list",
            "data": data,
            "model": request.body.get("model", ""),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }


def _completion(text: str, request: Request) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": request.body.get("model", ""),
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
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
                server.stopping.wait(reply.delay)
            if reply.fault == "hang":
                server.stopping.wait(120)
                return
            if reply.fault == "reset":
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.close_connection = True
                self.connection.close()
                return
            payload = json.dumps(body).encode("utf-8")
            kind = "application/json"
            if reply.fault == "garbage":
                payload, kind = b"<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html"
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(payload)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self._body(reply, payload)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def _body(self, reply: Reply, payload: bytes) -> None:
            if reply.fault == "half":
                self.wfile.write(payload[: len(payload) // 2])
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
            elif reply.fault == "trickle":
                for index in range(len(payload)):
                    if server.stopping.wait(0.2):
                        return
                    self.wfile.write(payload[index:index + 1])
            else:
                self.wfile.write(payload)

        def finish(self) -> None:
            try:
                super().finish()
            except OSError:
                pass

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
