"""Forked processes, the package's one module for them: where a fork is safe, the rule that says
when one pays, the measurement behind it, the fork, its answer and its end.

Fresh interpreters each load jieba's dictionary again (about a second of CPU each), which on a
2-core CI runner whose cores are busy made two processes slower than one. A forked child
inherits the loaded dictionary, so an extra process costs milliseconds; and it is started only
for a core that stayed idle while this process measured its own speed on the first texts.

A child never outlives the run: on Linux the kernel kills it when the process that forked it
dies (SIGKILL included), and a child forked with `group=True` (tokenizing ahead, which forks
children of its own) leads its own process group and is killed as a group.

A served child (`serve`) hands back one answer after another, each under a deadline of its own: the
team's `python` chunker runs there, one document at a time, so that whatever it does (hang, exit,
crash) is the child's end and one line, never the gate's.
"""
from __future__ import annotations

import gc
import os
import select
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

SPAWNING = ("darwin", "win32")
"""Platforms where multiprocessing's default start method is spawn, not fork: forking a process
that holds system libraries' state is unsafe there (macOS), or there is no fork (Windows), so the
work runs on this process alone."""
PR_SET_PDEATHSIG = 1
"""prctl(2)'s option: the signal a Linux child gets when the thread that forked it ends."""
BESIDE = 3
"""The niceness a process doing work ahead (the corpus's tokens) adds to the gate's: the gate is
embedding meanwhile, which is on the run's path; what the process makes is needed only later."""
MIN_SHARE = 0.5
"""Seconds of work each process must get. Forking and handing the result back take milliseconds;
the margin covers a speed estimate made on the first texts and a core that gets busy meanwhile."""
DONE, FAILED, ANSWER = b"\0", b"\1", b"\2"
"""What a child's pipe holds: its answers (`serve`: ANSWER, a 4-byte length, the bytes), then DONE and
its bytes (`fork`), or FAILED and its error."""


@dataclass(frozen=True)
class Measured:
    """What this process saw while it did the first part of the work alone."""

    seconds: float
    """How long the part it did took."""
    done: int
    """That part's size (characters)."""
    left: int
    """The size of what is left."""
    idle: float | None
    """Cores idle beside this process meanwhile (of those it may run on); None: not measurable
    (no /proc/stat), or forking is unsafe (no fork, another thread alive)."""


def processes(workers: int, measured: Measured) -> int:
    """How many processes, this one included, share the rest: one more for each core that stayed
    idle (rounded), at most `workers`, each with at least MIN_SHARE seconds of the rest at the
    measured speed; one when idleness is unknown."""
    if measured.idle is None or measured.done <= 0 or measured.left <= 0:
        return 1
    rest = measured.seconds * measured.left / measured.done
    return max(1, min(workers, 1 + int(measured.idle + 0.5), int(rest / MIN_SHARE)))


@dataclass(frozen=True)
class CpuTimes:
    idle: int
    total: int
    cpus: int


def forkable() -> bool:
    """Whether a fork is safe here: there is one, the platform forks by default (SPAWNING), and no
    thread other than this one is alive to hold a lock the child would need. When it is not, the
    work is done here, sequentially, with the same result."""
    return hasattr(os, "fork") and sys.platform not in SPAWNING and threading.active_count() == 1


def cpu_times() -> CpuTimes | None:
    """Idle and total time (in clock ticks) of the CPUs this process may run on, from /proc/stat;
    None where there is none (not Linux) or forking is unsafe (`forkable`)."""
    if not forkable():
        return None
    try:
        allowed = os.sched_getaffinity(0)
        lines = Path("/proc/stat").read_text(encoding="ascii").splitlines()
    except (AttributeError, OSError, ValueError):
        return None
    idle = total = cpus = 0
    for line in lines:
        name, *fields = line.split()
        if name[:3] == "cpu" and name[3:].isdigit() and int(name[3:]) in allowed:
            ticks = [int(field) for field in fields[:8]]  # user nice system idle iowait irq softirq steal
            idle += ticks[3] + ticks[4]
            total += sum(ticks)
            cpus += 1
    return CpuTimes(idle, total, cpus) if cpus else None


def idle_cores(before: CpuTimes | None, after: CpuTimes | None) -> float | None:
    """Cores idle between two readings (this process was busy on one of them); None without both,
    or when the window is under 5 clock ticks per CPU (too short to say)."""
    if before is None or after is None or before.cpus != after.cpus:
        return None
    total = after.total - before.total
    if total < 5 * after.cpus:
        return None
    return after.cpus * (after.idle - before.idle) / total


class ChildFailed(Exception):
    """A forked process raised, was killed, or handed back nothing."""


@dataclass(frozen=True)
class Child:
    pid: int
    fd: int
    group: bool = False
    """Whether it leads its own process group (its own children are in it): killed as a group."""


def fork(task: Callable[[], bytes], nice: int = 0, group: bool = False) -> Child:
    """A child process running `task` on what this one holds now, its bytes coming back through a pipe;
    `nice`: how much lower its priority is than this one's (work done beside this one's own, which
    must not slow it); `group`: the child leads a process group of its own, so the children it forks
    die with it (`stop`, a missed deadline)."""
    return _fork(lambda write: task(), nice, group)


def serve(task: Callable[[Callable[[bytes], None]], None]) -> Child:
    """A child process running `task` on what this one holds now, which hands back its answers one at a
    time through the function it is given (the team's chunker: one per document); read each with
    `answer`, under a deadline of its own."""
    def body(write: int) -> bytes:
        gc.freeze()  # what it inherited stays untouched (not copied); the team's own garbage is collected
        gc.enable()
        task(lambda data: _write_all(write, ANSWER + len(data).to_bytes(4, "big") + data))
        return b""

    return _fork(body, 0, False)


def _fork(task: Callable[[int], bytes], nice: int, group: bool) -> Child:
    read, write = os.pipe()
    parent = os.getpid()
    with warnings.catch_warnings():
        # Python 3.12+ warns about any thread, BLAS's idle pool included; cpu_times already
        # refused when another Python thread is alive, and the child calls into no library pool.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        _child(task, read, write, nice, parent, group)
    os.close(write)
    if group:
        try:
            os.setpgid(pid, pid)  # here too, so no kill finds it before the child did it itself
        except OSError:
            pass  # the child did it already (EACCES once it runs its task), or it has ended
    return Child(pid, read, group)


def _die_with(parent: int) -> None:
    """Linux: the kernel sends this process SIGKILL when the one that forked it ends, however it ends
    (a SIGKILLed gate runs no cleanup); it leaves at once when that happened before the ask."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _child(task: Callable[[int], bytes], read: int, write: int, nice: int, parent: int, group: bool) -> NoReturn:
    """Runs in the child: it dies with its parent, leads its own process group when asked; the parent's
    signal handlers (the gate's cleanup) and its garbage collector (which would touch, and so copy, every
    page) are off; it leaves by os._exit, so no atexit hook or finalizer of the parent's (a database
    connection's goodbye) runs here."""
    code = 1
    try:
        os.close(read)
        if group:
            os.setpgid(0, 0)
        _die_with(parent)
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, signal.SIG_DFL)
        gc.disable()
        if nice:
            os.nice(nice)
        data = DONE + task(write)
        code = 0
    except BaseException as exc:  # noqa: BLE001 - everything goes back to the parent as one line
        data = FAILED + f"{type(exc).__name__}: {exc}".encode("utf-8", "replace")
    try:
        _write_all(write, data)
    finally:
        os._exit(code)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def result(child: Child, deadline: float) -> bytes:
    """The child's bytes, once it ended; ChildFailed with its error or how it ended, or when it is
    not done by `deadline` (time.monotonic(); it is killed then)."""
    chunks = []
    with os.fdopen(child.fd, "rb", buffering=0) as stream:
        while select.select([stream], [], [], max(0.0, deadline - time.monotonic()))[0]:
            chunk = stream.read(1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        else:
            _kill(child)
            os.waitpid(child.pid, 0)
            raise ChildFailed("it was not done in time (killed)")
    data = b"".join(chunks)
    _, status = os.waitpid(child.pid, 0)
    if data[:1] == FAILED:
        raise ChildFailed(_last_line(data[1:]))
    if status != 0 or data[:1] != DONE:
        raise ChildFailed(f"it ended with {_ended(status)} and handed back nothing")
    return data[1:]


def answer(child: Child, deadline: float) -> bytes | None:
    """A served child's next answer (`serve`); None once it has ended as it should. ChildFailed when
    it raised or ended otherwise (an exit, a signal), TooLate when no answer came by `deadline`
    (time.monotonic(); it is killed then): either way it has been reaped."""
    kind = _read(child, 1, deadline)
    if kind == ANSWER:
        head = _read(child, 4, deadline)
        data = _read(child, int.from_bytes(head, "big"), deadline) if len(head) == 4 else b""
        if len(head) == 4 and len(data) == int.from_bytes(head, "big"):
            return data
        kind = b""  # it ended halfway through an answer
    rest = b""
    if kind == FAILED:
        while chunk := _read(child, 1 << 16, deadline, some=True):
            rest += chunk
    os.close(child.fd)
    _, status = os.waitpid(child.pid, 0)
    if kind == DONE and status == 0:
        return None
    if kind == FAILED:
        raise ChildFailed(_last_line(rest))
    raise ChildFailed(f"it ended with {_ended(status)} before its answer")


class TooLate(ChildFailed):
    """A served child did not answer by its deadline (it was killed)."""


def _read(child: Child, size: int, deadline: float, some: bool = False) -> bytes:
    """`size` bytes from the child (`some`: up to `size`, b"" at its end); b"" where it ended first."""
    found = b""
    while len(found) < size:
        if not select.select([child.fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
            os.close(child.fd)
            _kill(child)
            os.waitpid(child.pid, 0)
            raise TooLate("it was not done in time (killed)")
        chunk = os.read(child.fd, size - len(found))
        if not chunk or some:
            return found + chunk
        found += chunk
    return found


def _last_line(data: bytes) -> str:
    lines = data.decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else "no message"


def _ended(status: int) -> str:
    code = os.waitstatus_to_exitcode(status)
    return f"signal {-code}" if code < 0 else f"exit status {code}"


def stop(children: Sequence[Child]) -> None:
    """Kill and reap children whose result was not read (this process is unwinding)."""
    for child in children:
        try:
            _kill(child)
            os.waitpid(child.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        try:
            os.close(child.fd)
        except OSError:
            pass


def _kill(child: Child) -> None:
    """SIGKILL to the child, and to its process group when it leads one (its own children)."""
    if child.group:
        try:
            os.killpg(child.pid, signal.SIGKILL)
            return
        except ProcessLookupError:
            pass  # the group is empty already; the child may be a zombie still, reaped by the caller
    os.kill(child.pid, signal.SIGKILL)
