"""A local stand-in for `POST /rerank`, in TEI's or Cohere's shape, scripted per test.

Scores are deterministic (a hash of query and text), so a test can compute what the client
must return; replies come from a queue (`server.script(Reply(429), ...)`), an empty queue
answers 200. Every request is recorded.
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


def fake_score(query: str, text: str) -> float:
    digest = hashlib.sha256(f"{query}\0{text}".encode()).digest()
    return round(int.from_bytes(digest[:4], "big") / 2**32 * 10 - 5, 6)


@dataclass(frozen=True)
class Reply:
    status: int = 200
    delay: float = 0.0
    headers: Mapping[str, str] = field(default_factory=dict)
    body: Any = None  # replaces the computed body when given
    keep: int | None = None  # answer only the best `keep` documents, as a top_n-ignoring server
    trickle: bool = False  # the body one byte every 0.2 s, as a server that never trips a per-read timeout


@dataclass(frozen=True)
class Request:
    path: str
    headers: Mapping[str, str]
    body: Mapping[str, Any]

    @property
    def documents(self) -> list[str]:
        return list(self.body.get("documents", self.body.get("texts", [])))


class FakeReranker:
    """`with FakeReranker("cohere") as server:` serves on 127.0.0.1 at `server.url` (…/rerank)."""

    def __init__(self, api: str = "cohere") -> None:
        self.api = api
        self.requests: list[Request] = []
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self.stopping = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        assert isinstance(host, str)  # an AF_INET server's address
        return f"http://{host}:{port}/rerank"

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def next_reply(self) -> Reply:
        with self._lock:
            return self._replies.popleft() if self._replies else Reply()

    def __enter__(self) -> FakeReranker:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


def _handler(server: FakeReranker) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            server.requests.append(Request(self.path, dict(self.headers), body))
            reply = server.next_reply()
            if reply.delay:
                time.sleep(reply.delay)
            if reply.body is not None:
                payload = reply.body
            elif reply.status != 200:
                payload = {"error": f"scripted {reply.status}", "error_type": "overloaded"}
            else:
                payload = _answer(server.api, body, reply.keep)
            data = json.dumps(payload).encode("utf-8")
            try:
                self.send_response(reply.status)
                for name, value in {"Content-Type": "application/json", **reply.headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if not reply.trickle:
                    self.wfile.write(data)
                for index in range(len(data) if reply.trickle else 0):
                    if server.stopping.wait(0.2):
                        return
                    self.wfile.write(data[index:index + 1])
            except (BrokenPipeError, ConnectionResetError):  # the client timed out first
                pass

    return Handler


def _answer(api: str, body: Mapping[str, Any], keep: int | None) -> Any:
    """Results sorted best first, as real servers send them: the client must restore input order."""
    texts = body["texts"] if api == "tei" else body["documents"]
    ranked = sorted(((fake_score(body["query"], t), i) for i, t in enumerate(texts)), reverse=True)[:keep]
    if api == "tei":
        return [{"index": i, "score": s} for s, i in ranked]
    results = [{"index": i, "relevance_score": s, "document": {"text": texts[i]}} for s, i in ranked]
    return {"id": "rerank-1", "model": body.get("model", "m"), "results": results, "usage": {"total_tokens": 1}}
