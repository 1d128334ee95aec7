"""SIGTERM handled like Ctrl-C while the gate runs, and a cleanup that a second signal cannot cut short.

CI timeouts, `timeout` and `docker stop` send SIGTERM, whose default ends the process on the
spot: the embedded Postgres would keep running, a `url` schema and a container would stay. While
the gate runs, SIGTERM raises KeyboardInterrupt in the main thread instead, so pytest unwinds
exactly as for Ctrl-C and the session's cleanup runs. A signal the parent set to be ignored
(a background job of a script ignores SIGINT) stays ignored: that choice is the caller's.
"""
from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

STOPPING = (signal.SIGINT, signal.SIGTERM)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"received {signal.Signals(signum).name}")


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _restorer(number: int, previous: Any) -> Callable[[], None]:
    def restore() -> None:
        signal.signal(number, signal.SIG_DFL if previous is None else previous)

    return restore


def handle_sigterm() -> Callable[[], None] | None:
    """SIGTERM raises KeyboardInterrupt from now on; returns what puts the previous handler back."""
    if not _in_main_thread():
        return None
    previous = signal.getsignal(signal.SIGTERM)
    if previous is signal.SIG_IGN:
        return None
    signal.signal(signal.SIGTERM, _interrupt)
    return _restorer(signal.SIGTERM, previous)


@contextmanager
def deferred() -> Iterator[None]:
    """SIGINT and SIGTERM cannot cut the block (the cleanup) short; the run is ending anyway."""
    if not _in_main_thread():
        yield
        return
    restore = []
    for number in STOPPING:
        previous = signal.getsignal(number)
        if previous is not signal.SIG_IGN:
            signal.signal(number, lambda signum, frame: None)
            restore.append(_restorer(number, previous))
    try:
        yield
    finally:
        for put_back in restore:
            put_back()
