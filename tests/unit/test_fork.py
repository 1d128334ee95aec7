"""Tokenizing on forked processes: the rule that chooses how many (measurements injected, no timing),
and the same tokens and the same pack bytes whatever the split."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from pytest_ragretrieval.cache.store import Cache
from pytest_ragretrieval.core import fork as forking
from pytest_ragretrieval.core.errors import RagError
from pytest_ragretrieval.core.fork import ChildFailed, CpuTimes, Measured, idle_cores, processes
from pytest_ragretrieval.retrievers import corpus_tokens as module
from pytest_ragretrieval.retrievers.corpus_tokens import cached_tokens, tokenizer_id
from pytest_ragretrieval.retrievers.tokens import tokenizer

# Forking needs this thread alone: threads an earlier test in this worker left alive must not count
# (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("threads_of_this_test")

TEXTS = [f"{text}，第{i}条" for i, text in enumerate(
    ["一线城市住宿标准为每晚600元", "出差结束后提交报销单并附发票", "ORDER-2024 表示订单已超时关闭", "一线城市"] * 4
)]


def namespace(folder: Path):  # type: ignore[no-untyped-def]
    return Cache(folder, "readwrite").namespace("tokens", tokenizer_id("jieba"), dtype="<i4")


def measured(idle: float | None, seconds: float = 1.0, done: int = 100, left: int = 900) -> Measured:
    return Measured(seconds=seconds, done=done, left=left, idle=idle)


def test_no_idle_core_means_one_process_whatever_workers_says() -> None:
    assert processes(2, measured(idle=0.0)) == 1
    assert processes(16, measured(idle=0.4)) == 1  # 0.4 rounds down: the other core is mostly busy
    assert processes(2, measured(idle=None)) == 1  # not measurable, or forking unsafe


def test_each_idle_core_gets_a_process_up_to_workers() -> None:
    assert processes(2, measured(idle=1.0)) == 2
    assert processes(2, measured(idle=0.5)) == 2
    assert processes(8, measured(idle=2.6)) == 4  # this one and 3 idle cores (rounded)
    assert processes(3, measured(idle=7.0)) == 3
    assert processes(1, measured(idle=7.0)) == 1


def test_each_process_gets_at_least_half_a_second_of_the_rest() -> None:
    # 100 characters took 0.1 s, so 900 left take 0.9 s: one share of 0.5 s fits, two do not.
    assert processes(4, measured(idle=3.0, seconds=0.1)) == 1
    # 1,100 left take 1.1 s: two shares.
    assert processes(4, measured(idle=3.0, seconds=0.1, left=1100)) == 2
    assert processes(4, measured(idle=3.0, left=0)) == 1
    assert processes(4, measured(idle=3.0, done=0)) == 1


def test_idle_cores_from_two_readings() -> None:
    before = CpuTimes(idle=1000, total=4000, cpus=2)
    # 50 ticks on each of 2 CPUs, 60 of the 100 idle: 1.2 cores idle.
    assert idle_cores(before, CpuTimes(idle=1060, total=4100, cpus=2)) == pytest.approx(1.2)
    assert idle_cores(before, CpuTimes(idle=1000, total=4100, cpus=2)) == 0.0
    assert idle_cores(before, CpuTimes(idle=1005, total=4009, cpus=2)) is None  # under 5 ticks a CPU
    assert idle_cores(None, before) is None
    assert idle_cores(before, CpuTimes(idle=1060, total=4100, cpus=3)) is None


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="reads Linux's /proc/stat")
def test_cpu_times_reads_the_cpus_this_process_may_use_and_refuses_beside_a_thread() -> None:
    # A fresh interpreter has one thread; this one may hold threads earlier tests left (a daemon
    # still waiting on a hanging server), which is exactly what makes cpu_times refuse.
    check = (
        "import os; from pytest_ragretrieval.core import fork; found = fork.cpu_times(); "
        "assert found is not None and found.cpus == len(os.sched_getaffinity(0)), found; "
        "assert 0 <= found.idle <= found.total, found"
    )
    subprocess.run([sys.executable, "-c", check], check=True, capture_output=True, timeout=60)
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert forking.cpu_times() is None
    finally:
        release.set()
        other.join()


def stepping_clock(monkeypatch: pytest.MonkeyPatch, step: float) -> None:
    """Every look at the clock is `step` seconds later: the probe ends after a known number of blocks."""
    now = [0.0]

    def perf_counter() -> float:
        now[0] += step
        return now[0]

    monkeypatch.setattr(module, "time", SimpleNamespace(perf_counter=perf_counter, monotonic=time.monotonic))


def counted_forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    forks: list[int] = []
    real = forking.fork

    def fork(task: Callable[[], bytes]) -> forking.Child:
        forks.append(1)
        return real(task)

    monkeypatch.setattr(module, "fork", fork)
    return forks


@pytest.mark.parametrize(("idle", "expected"), [(0.0, 0), (1.0, 1)])
def test_the_measured_idle_cores_decide_whether_a_process_is_forked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, idle: float, expected: int
) -> None:
    """The dictionary loads and the probe tokenizes one block of 2 texts in 0.3 s (so the 14 left
    take about 2.1 s): time enough for 2 processes; only the measured idleness differs."""
    stepping_clock(monkeypatch, 0.15)
    monkeypatch.setattr(module, "BLOCK", 2)
    monkeypatch.setattr(module, "idle_cores", lambda before, after: idle)
    forks = counted_forks(monkeypatch)
    vocabulary, rows = cached_tokens(TEXTS, "jieba", namespace(tmp_path), workers=2)
    assert len(forks) == expected
    assert [[vocabulary[i] for i in row] for row in rows] == [tokenizer("jieba")(text) for text in TEXTS]


def split_run(folder: Path, monkeypatch: pytest.MonkeyPatch, count: int, step: float | None) -> tuple[object, bytes]:
    """Tokens and pack bytes with `count` processes; `step`: the probe's clock (None: no probe)."""
    with monkeypatch.context() as patch:
        patch.setattr(module, "BLOCK", 3)
        patch.setattr(module, "processes", lambda workers, measured: count)
        if step is None:
            patch.setattr(module, "PROBE_SECONDS", 0.0)
        else:
            stepping_clock(patch, step)
        vocabulary, rows = cached_tokens(TEXTS, "jieba", namespace(folder), workers=count)
    (pack,) = namespace(folder).folder.glob("*.pack")
    return (vocabulary, [row.tolist() for row in rows]), pack.read_bytes()


def test_the_tokens_and_the_pack_are_byte_identical_whatever_the_split(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reference = split_run(tmp_path / "one", monkeypatch, 1, None)
    forks = counted_forks(monkeypatch)
    for name, count, step in [("two", 2, None), ("three", 3, None), ("probed", 3, 0.1), ("all-probed", 2, 1e-9)]:
        assert split_run(tmp_path / name, monkeypatch, count, step) == reference, name
    assert len(forks) == 1 + 2 + 2  # all-probed: the probe tokenized every text, nothing was left to share


def test_a_failing_child_is_one_line_naming_the_tokenizer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = module.tokenize_batch

    def tokenize_batch(name: str, texts: list[str]) -> tuple[list[str], list[np.ndarray]]:
        if any("BOOM" in text for text in texts):
            raise ValueError("cannot tokenize BOOM")
        return real(name, texts)

    monkeypatch.setattr(module, "tokenize_batch", tokenize_batch)
    monkeypatch.setattr(module, "PROBE_SECONDS", 0.0)
    monkeypatch.setattr(module, "BLOCK", 2)  # the probe takes one block, whatever the clock says
    monkeypatch.setattr(module, "processes", lambda workers, measured: 2)
    with pytest.raises(RagError, match=r"^tokenizing the corpus with jieba in a worker process failed: "
                                       r"ValueError: cannot tokenize BOOM$"):
        cached_tokens([*TEXTS, "BOOM"], "jieba", namespace(tmp_path), workers=2)
    assert not namespace(tmp_path).folder.exists() or not list(namespace(tmp_path).folder.glob("*.pack"))


def test_a_killed_child_says_how_it_ended_and_a_late_one_is_killed() -> None:
    later = time.monotonic() + 60
    def killed() -> bytes:
        os.kill(os.getpid(), signal.SIGKILL)
        return b""

    def asleep() -> bytes:
        time.sleep(60)
        return b""

    child = forking.fork(killed)
    with pytest.raises(ChildFailed, match=r"^it ended with signal 9 and handed back nothing$"):
        forking.result(child, later)
    assert forking.result(forking.fork(lambda: b"answer" * 300_000), later) == b"answer" * 300_000
    slow = forking.fork(asleep)
    with pytest.raises(ChildFailed, match=r"^it was not done in time \(killed\)$"):
        forking.result(slow, time.monotonic() + 0.2)
    with pytest.raises(ProcessLookupError):
        os.kill(slow.pid, 0)


def test_a_process_doing_work_ahead_runs_at_a_lower_priority() -> None:
    """The gate embeds meanwhile, which is on the run's path: the forked process yields to it."""
    later = time.monotonic() + 60
    own = os.nice(0)
    assert forking.result(forking.fork(lambda: str(os.nice(0)).encode()), later) == str(own).encode()
    assert forking.result(forking.fork(lambda: str(os.nice(0)).encode(), nice=forking.BESIDE), later) == (
        str(min(19, own + forking.BESIDE)).encode()
    )


def test_core_fork_is_the_one_module_that_forks() -> None:
    """Forking, process groups and process pools live in core/fork.py alone, where their safety is decided once."""
    package = Path(forking.__file__).parents[1]
    pattern = re.compile(r"\bos\.fork\b|\bsetpgid\b|\bkillpg\b|\bmultiprocessing\b|ProcessPoolExecutor|start_new_session")
    found = [f"{path.relative_to(package)}:{number}" for path in sorted(package.rglob("*.py"))
             if path != Path(forking.__file__)
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
             if pattern.search(line)]
    assert found == []


def test_a_child_dies_with_its_parent_and_a_group_with_its_leader(tmp_path: Path) -> None:
    """A process forked with group=True leads its own group; what it forks is in that group, and
    killing the group (stop) ends them all; on Linux a child also dies with the process that forked it."""
    pids = tmp_path / "pids"

    def grandchild() -> bytes:
        time.sleep(60)
        return b""

    def leader() -> bytes:
        inner = forking.fork(grandchild)
        pids.write_text(f"{os.getpid()} {inner.pid} {os.getpgid(inner.pid)}", encoding="utf-8")
        time.sleep(60)
        return b""

    child = forking.fork(leader, group=True)
    deadline = time.monotonic() + 30
    while not pids.exists() or len(pids.read_text(encoding="utf-8").split()) < 3:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    own, inner, group = map(int, pids.read_text(encoding="utf-8").split())
    assert own == child.pid == group != os.getpgid(0)
    forking.stop([child])
    deadline = time.monotonic() + 30
    while _running(inner):
        assert time.monotonic() < deadline, "the leader's own child outlived the group's kill"
        time.sleep(0.01)


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_served_child_hands_back_its_answers_one_at_a_time() -> None:
    def task(send: Callable[[bytes], None]) -> None:
        send(b"first")
        send(b"")
        send(b"x" * 200_000)

    child = forking.serve(task)
    deadline = time.monotonic() + 30
    assert [forking.answer(child, deadline) for _ in range(4)] == [b"first", b"", b"x" * 200_000, None]
    with pytest.raises(ChildProcessError):
        os.waitpid(child.pid, os.WNOHANG)  # reaped


def exiting(send: Callable[[bytes], None]) -> None:
    send(b"one")
    os._exit(0)


def killed(send: Callable[[bytes], None]) -> None:
    send(b"one")
    os.kill(os.getpid(), signal.SIGKILL)


def raising(send: Callable[[bytes], None]) -> None:
    send(b"one")
    int("x")


def late(send: Callable[[bytes], None]) -> None:
    send(b"one")
    time.sleep(60)


@pytest.mark.parametrize(("task", "message"), [
    (exiting, "it ended with exit status 0 before its answer"),
    (killed, "it ended with signal 9 before its answer"),
    (raising, "ValueError: invalid literal for int() with base 10: 'x'"),
])
def test_a_served_child_that_ends_otherwise_is_named_and_reaped(
        task: Callable[[Callable[[bytes], None]], None], message: str) -> None:
    child = forking.serve(task)
    assert forking.answer(child, time.monotonic() + 30) == b"one"
    with pytest.raises(ChildFailed, match=re.escape(message)):
        forking.answer(child, time.monotonic() + 30)
    with pytest.raises(ChildProcessError):
        os.waitpid(child.pid, os.WNOHANG)


def test_a_served_child_late_with_its_answer_is_killed() -> None:
    child = forking.serve(late)
    assert forking.answer(child, time.monotonic() + 30) == b"one"
    started = time.monotonic()
    with pytest.raises(forking.TooLate):
        forking.answer(child, time.monotonic() + 0.3)
    assert time.monotonic() - started < 30  # a guard: the deadline, not the sleep
    with pytest.raises(ChildProcessError):
        os.waitpid(child.pid, os.WNOHANG)
