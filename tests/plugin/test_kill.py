"""SIGKILL at random moments of `--rag-update-baseline`: the baseline is the old file or the new one, never broken."""
from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from projects import baseline_bytes, set_rankings, synthetic, write_project

KILLS = 10
SEED = 20240611


def update(folder: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "pytest", "--rag-update-baseline", "--rag-allow-regression", "-q", "-p", "no:cacheprovider"]
    return subprocess.Popen(command, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_a_killed_update_leaves_the_old_baseline_or_the_new(pytester: pytest.Pytester) -> None:
    chunks, questions, gold = synthetic(150, no_answer=5)
    write_project(pytester.path, chunks=chunks, questions=questions, rankings=gold)
    assert update(pytester.path).wait(timeout=300) == 0
    old = baseline_bytes(pytester.path)
    set_rankings(pytester.path, {qid: list(reversed(ranking)) for qid, ranking in gold.items()}, questions)
    started = time.monotonic()
    assert update(pytester.path).wait(timeout=300) == 0
    duration = time.monotonic() - started
    new = baseline_bytes(pytester.path)
    assert new != old
    target = pytester.path / "baselines" / "retrieval.json"
    moments = random.Random(SEED)
    for attempt in range(KILLS):
        target.write_bytes(old)
        process = update(pytester.path)
        delay = moments.uniform(0.0, duration * 1.2)
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
        found = target.read_bytes()
        assert found in (old, new), f"attempt {attempt}: killed after {delay:.2f}s of {duration:.2f}s, the baseline is broken"
