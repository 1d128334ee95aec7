"""Where forking is off (core/fork.py: a platform that spawns, such as macOS, or no `os.fork`) the run is
the sequential one, with the same results file and token pack as a forked run; `workers = 1` forks
nothing (issue 41, item 6)."""
from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from projects import CHUNKS, RUN, retriever, without_timings, write_project

from pytest_ragretrieval.core import fork as forking
from pytest_ragretrieval.retrievers import corpus_tokens

# The runs are in-process (pytester): the threads an earlier test in this worker left alive must not
# turn the forked path into the sequential one (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("threads_of_this_test")

MORE = [{"id": f"extra-{i:03d}", "doc": "extra.md", "text": f"第{i}条补充说明：报销单据需在月底前提交，逾期{i}天不予受理。"}
        for i in range(150)]


def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every fork the run makes (as many processes as `workers` allows: no idle core is waited for)."""
    forks: list[int] = []
    real: Callable[..., forking.Child] = forking.fork

    def fork(task: Callable[[], bytes], nice: int = 0, group: bool = False) -> forking.Child:
        forks.append(1)
        return real(task, nice, group)

    monkeypatch.setattr(corpus_tokens, "fork", fork)
    monkeypatch.setattr(corpus_tokens, "processes", lambda workers, measured: workers)
    monkeypatch.setattr(corpus_tokens, "PROBE_SECONDS", 0.0)
    return forks


def gate(pytester: pytest.Pytester, folder: str, workers: int) -> tuple[dict[str, object], list[bytes]]:
    """A cold bm25 run in its own folder: its results file without timings, and its token packs."""
    path = pytester.mkdir(folder)
    write_project(path, retrievers=retriever("bm25", "bm25"), settings=f'cache = "cache"\nworkers = {workers}',
                  chunks=[*CHUNKS, *MORE])
    os.chdir(path)
    result = pytester.runpytest("--rag-update-baseline", "--rag-json", "r.json", "--rag-no-reuse", *RUN)
    assert result.ret == 0, result.stdout.str()[-2000:]
    packs = sorted(pack.read_bytes() for pack in (path / "cache").glob("tokens/**/*.pack"))
    assert packs
    return without_timings(path / "r.json"), packs


def test_the_run_where_forking_is_off_is_the_sequential_one_with_the_same_bytes(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    forks = counted(monkeypatch)
    forked = gate(pytester, "forked", workers=3)
    assert len(forks) == 2, "the forked run did not fork"
    monkeypatch.setattr(forking, "SPAWNING", (sys.platform,))  # as on macOS
    assert not forking.forkable()
    assert corpus_tokens.tokenize_ahead(["新的文字"], "jieba", _namespace(pytester.path), workers=3) is None
    alone = gate(pytester, "alone", workers=3)
    assert len(forks) == 2, "a run where forking is off forked"
    assert json.dumps(alone[0], sort_keys=True) == json.dumps(forked[0], sort_keys=True)
    assert alone[1] == forked[1]


def test_a_run_without_os_fork_is_the_sequential_one(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "fork")
    assert not forking.forkable()
    gate(pytester, "alone", workers=3)


def test_workers_1_forks_nothing(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    def fork() -> int:
        raise AssertionError("workers = 1 forked")

    counted(monkeypatch)
    monkeypatch.setattr(os, "fork", fork)
    assert forking.forkable()
    gate(pytester, "one", workers=1)
    assert corpus_tokens.tokenize_ahead(["一段文字"], "jieba", _namespace(pytester.path), workers=1) is None


def _namespace(folder: Path):  # type: ignore[no-untyped-def]
    from pytest_ragretrieval.cache.store import Cache

    return Cache(folder / "c", "readwrite").namespace("tokens", corpus_tokens.tokenizer_id("jieba"), dtype="<i4")
