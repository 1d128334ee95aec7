"""SIGTERM handled like Ctrl-C while the gate runs, then held while it writes, reports and cleans up.

CI timeouts, `timeout` and `docker stop` send SIGTERM, whose default ends the process on the
spot: the embedded Postgres would keep running, a `url` schema and a container would stay. From
the moment the gate is configured, before the team's code runs (a `python` chunker is run while the
config is loaded), SIGTERM raises KeyboardInterrupt in the main thread instead, so pytest unwinds
exactly as for Ctrl-C and the session's cleanup runs. While the run writes its results, and while it
cleans up, a signal is remembered, not raised: the files are finished whole and the cleanup is not
cut short, and the run still ends as interrupted. Between the two (other plugins' hooks, the summary
printed) a signal ends the run at once through `end`, the cleanup first. Which signal came is kept,
so the gate's own line says so at any phase.
A signal the parent set to be ignored (a background job of a script ignores SIGINT) stays ignored:
that choice is the caller's.
"""
from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

STOPPING = (signal.SIGINT, signal.SIGTERM)


class Watch:
    """The gate's handlers: SIGTERM raises `raising` (a KeyboardInterrupt) until `hold`, after which
    SIGINT and SIGTERM are only remembered, until `end` names what a signal calls instead; `received`
    names the first that came; `stop` puts the previous handlers back."""

    def __init__(self, raising: type[KeyboardInterrupt] = KeyboardInterrupt) -> None:
        self.raising = raising
        self.received: str | None = None
        self.holding = False
        self._ending: Callable[[str], None] | None = None
        self._previous: dict[int, Any] = {}

    def start(self) -> None:
        """SIGTERM raises from now on (in the main thread, unless it is ignored)."""
        self._install(signal.SIGTERM)

    def hold(self) -> None:
        """From now on SIGINT and SIGTERM are remembered, not raised: what runs now must finish."""
        self.holding = True
        for number in STOPPING:
            self._install(number)

    def end(self, ending: Callable[[str], None]) -> None:
        """From now on SIGINT and SIGTERM call `ending` with the signal's name (it ends the process)."""
        self.hold()
        self.holding = False
        self._ending = ending

    def stop(self) -> None:
        for number, previous in self._previous.items():
            signal.signal(number, signal.SIG_DFL if previous is None else previous)
        self._previous.clear()

    def _install(self, number: int) -> None:
        if threading.current_thread() is not threading.main_thread() or number in self._previous:
            return
        previous = signal.getsignal(number)
        if previous is not signal.SIG_IGN:
            self._previous[number] = previous
            signal.signal(number, self._handle)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        self.received = self.received or name
        if self.holding:
            return
        if self._ending is not None:
            self._ending(name)
        raise self.raising(f"received {name}")
