"""The Docker engine the docker-mode tests need, and the small projects they run against it.

Without an engine those tests skip with the reason; with RAG_EVAL_REQUIRE_DOCKER=1 (CI that
brought an engine up, and GitHub) a missing engine fails them instead, so CI cannot skip them
unnoticed.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from projects import CHUNKS, retriever, write_project

from pytest_ragretrieval.database.docker import docker_answers
from pytest_ragretrieval.database.reclaim import PID_LABEL

REQUIRE = "RAG_EVAL_REQUIRE_DOCKER"
STANDIN = 'eval "$(bash .ci/docker-standin.sh .venv/bin/python)" (as root)'


def engine_or_skip() -> Any:
    """A Docker SDK client on the engine the plugin would use, or a skip (a failure under RAG_EVAL_REQUIRE_DOCKER=1)."""
    answers, seen = docker_answers()
    if not answers:
        if os.environ.get(REQUIRE, "") not in ("", "0"):
            pytest.fail(f"{REQUIRE}={os.environ[REQUIRE]} but {seen}; the docker-mode tests must run here", pytrace=False)
        pytest.skip(f"{seen}; start Docker, or on Linux without it bring podman up: {STANDIN}")
    import docker

    return docker.from_env()


def containers_of(client: Any, pid: int) -> list[str]:
    """Ids of the containers our plugin started from process `pid`, whatever their state."""
    return [row["Id"][:12] for row in client.api.containers(all=True, filters={"label": f"{PID_LABEL}={pid}"})]


TOY_EMBEDDER = '''
def embed(texts):
    """Character counts folded into 16 buckets: deterministic, no model."""
    vectors = []
    for text in texts:
        vector = [0.0] * 16
        for char in text:
            vector[ord(char) % 16] += 1.0
        vectors.append(vector)
    return vectors
'''

BLOCKER = '''
import os
import time
from pathlib import Path

HERE = Path(__file__).parent


def make(ctx):
    """Starts and seeds the database; with RAG_TEST_BLOCK set, then says so in a file and waits to be killed."""
    ctx.connect().close()
    if os.environ.get("RAG_TEST_BLOCK"):
        (HERE / "blocked").write_text(str(os.getpid()), encoding="utf-8")
        time.sleep(600)
    ids = sorted(chunk.id for chunk in ctx.chunks)
    return lambda query, k: ids[:k]
'''


def write_docker_project(folder: Path) -> Path:
    """A project whose one retriever starts the database (docker mode) and can block while its container runs."""
    (folder / "toy_embed.py").write_text(TOY_EMBEDDER, encoding="utf-8")
    (folder / "blocker.py").write_text(BLOCKER, encoding="utf-8")
    return write_project(
        folder,
        retrievers=retriever("blocker", "python", factory="blocker:make"),
        settings='db = "docker"\nembedding = "python:toy_embed:embed"\nembedding_id = "toy@1"\ncache = ".rag-cache"',
        chunks=CHUNKS,
    )
