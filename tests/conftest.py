"""Shared test set-up.

Compiled modules are imported here, before pytester snapshots sys.modules: pytester removes
modules first imported inside a test, and numpy cannot be imported twice in one process. scipy
too: any gate run with a hybrid or rerank retriever compares it with its sources, with scipy.
"""
from __future__ import annotations

import importlib.util
import signal
from pathlib import Path
from typing import Any

import jieba  # noqa: F401
import numpy  # noqa: F401
import pytest
import scipy.sparse  # noqa: F401
import scipy.stats  # noqa: F401

TEST_EXTRAS = ("hypothesis", "rank_bm25", "pytrec_eval", "yaml", "pytest_timeout")
"""What the `dev` extra brings for the tests alone. The README's first command installs the plugin
without them (and without torch) to run the gate on the sample: there the project's own tests are
not collected, and the header says why and how to install them."""
MISSING = [name for name in TEST_EXTRAS if importlib.util.find_spec(name) is None]
collect_ignore_glob = ["*"] if MISSING else []
if not MISSING:
    import rank_bm25  # noqa: F401


TIER_TIMEOUT = 600
"""Seconds a test of the e2e or fault tier may take (pyproject's `timeout`, 300 s, is every other
test's): their longest run the gate several times in subprocesses, each guarded by its own timeout."""


def pytest_addoption(parser: pytest.Parser) -> None:
    """pyproject's `timeout` is pytest-timeout's, which the dev extra brings. The README's first
    command installs neither: the key is known here so that its run warns of no unknown option."""
    if importlib.util.find_spec("pytest_timeout") is None:
        parser.addini("timeout", "pytest-timeout's per-test limit (unused without the test extras)")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The e2e and fault tiers (marked by their own conftest.py, before this) get TIER_TIMEOUT,
    unless a test names its own limit."""
    for item in items:
        tier = item.get_closest_marker("e2e") or item.get_closest_marker("faults")
        if tier is not None and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(TIER_TIMEOUT))


def pytest_report_header() -> list[str]:
    if not MISSING:
        return []
    return [f"tests/: not collected: the test extras are not installed (no {', '.join(MISSING)}); install them with "
            '`.venv/bin/pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0 && .venv/bin/pip install -e ".[dev]"` (the README\'s second command)']

# A suite started as a background job (`cmd &` in a script) inherits SIGINT ignored, and so would
# every run the tests start and then interrupt: Python installs its Ctrl-C handler only where SIGINT
# is not ignored. Restoring it here gives those runs the disposition a terminal gives them.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def minilm() -> Any:
    """The packaged MiniLM, loaded once per session, before any pytester fixture exists.

    Loading it imports torch, transformers and sentence-transformers outside the inline runs;
    imported inside one, pytester would drop them afterwards and torch cannot load twice.
    Only the end-to-end tests ask for it, so other sessions never pay for torch. Without torch (the
    README's first command installs none) every test that asks for it, the cross-encoder's
    included, is skipped with the reason.
    """
    for module in ("torch", "sentence_transformers"):
        pytest.importorskip(module, reason=f"needs {module}, which the test extras bring: "
                            ".venv/bin/pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0 && .venv/bin/pip install -e \".[dev]\"")
    from pytest_ragretrieval.embedding.sentence_transformers import (
        SentenceTransformerEmbedder,
    )

    embedder = SentenceTransformerEmbedder()
    embedder.embed(["预热"])
    return embedder


@pytest.fixture(autouse=True)
def outside_a_pull_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs as outside a pull request's CI, whatever CI runs the suite: there the gate reads the
    base's exam from the base revision (`glue/trust.py`), which the tests' projects set up themselves."""
    for name in ("GITHUB_BASE_REF", "GITHUB_EVENT_NAME"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def no_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """DOCKER_HOST at a socket nobody listens on: "no Docker engine", whatever this machine has."""
    host = f"unix://{tmp_path}/absent.sock"
    monkeypatch.setenv("DOCKER_HOST", host)
    for name in ("DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH", "DOCKER_CONTEXT"):
        monkeypatch.delenv(name, raising=False)
    return host


@pytest.fixture
def threads_of_this_test(monkeypatch: pytest.MonkeyPatch) -> None:
    """`threading.active_count()` as if this test ran in a fresh process: this thread plus the threads
    started since. core/fork.py forks nothing beside another live thread; in a shared worker an earlier
    test may leave a daemon alive (a reader still waiting on a server it stopped), which would make a
    test of the forked path take the sequential one depending on what ran before it."""
    import threading

    before = {thread.ident for thread in threading.enumerate()}
    monkeypatch.setattr(threading, "active_count",
                        lambda: 1 + sum(1 for thread in threading.enumerate() if thread.ident not in before))
