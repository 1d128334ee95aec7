"""One outside call held to a deadline over the whole answer, slow reads included.

HTTP clients' timeouts bound each read, so a server that sends one byte a second never trips them:
a judge server doing so ran 200 s past a 20 s budget. `within` runs the call in a daemon thread and
stops waiting at the deadline; the abandoned call ends with its socket, and the process never waits
for it.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class Late(Exception):
    """A call still unanswered when its deadline passed."""


def within(call: Callable[[], T], seconds: float, name: str) -> T:
    """`call()`'s value or its exception, or `Late` once `seconds` have passed without either."""
    outcome: list[tuple[bool, object]] = []
    done = threading.Event()

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as exc:  # handed to the caller's thread as it is
            outcome.append((False, exc))
        finally:
            done.set()

    threading.Thread(target=run, name=name, daemon=True).start()
    if not done.wait(max(seconds, 0.0)):
        raise Late()
    ok, value = outcome[0]
    if not ok:
        assert isinstance(value, BaseException)
        raise value
    return value  # type: ignore[return-value]
