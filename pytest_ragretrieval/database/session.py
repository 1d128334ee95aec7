"""A session on the team's own server: its limits, the client-side deadline on every read, and the
corpus a run reads from the team's table (`TeamCorpus`).

`database.team` opens the sessions and reads the corpus; the `table` and `sql` retriever types
(`retrievers.table`) ask their queries under the same limits and deadline. Nothing here loads a
database driver when imported: the config and the judge reach `TeamCorpus` through their imports.
"""
from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

from ..core.errors import DatabaseError
from ..core.optional import need
from ..files.jsontext import escaped

CHEAP = "count_and_max:"
"""The prefix of `digest = "count_and_max:COLUMN"`: the corpus's digest is its row count and the largest
value of COLUMN, not md5 over every row."""
SESSION = {"statement_timeout": "5min", "lock_timeout": "10s", "idle_in_transaction_session_timeout": "1min"}
"""The server-side limits of every session on the team's server (`database.team` sets them), whatever
the role's own: a statement runs at most 5 minutes, waits at most 10 s for a lock, and a session
left inside a transaction is ended after a minute."""
DEADLINE = 330.0
"""Seconds the client waits for one unit of work on the team's server (a statement and its rows, a
rollback): statement_timeout and 30 s more. A server that has not answered by then is stopped or
cut off (its own limit would have ended the statement): the statement is cancelled, the socket shut."""
CANCEL = 5.0
"""Seconds a cancel request waits for the server once the deadline has passed."""


def limits_note(exc: BaseException) -> str:
    """Which of the session's limits ended a statement, as the message's note ('' when none did)."""
    kind = type(exc).__name__
    if kind == "QueryCanceled":
        return f" (the plugin's sessions run with statement_timeout = {SESSION['statement_timeout']})"
    if kind == "LockNotAvailable":
        return f" (the plugin's sessions run with lock_timeout = {SESSION['lock_timeout']})"
    return ""


def shut(conn: Any) -> None:
    """Shut the connection's socket: a thread waiting on it wakes at once with an error."""
    import socket  # here: the judge reaches this module through the config, and no I/O library

    with suppress(Exception), socket.socket(fileno=os.dup(conn.fileno())) as sock:
        sock.shutdown(socket.SHUT_RDWR)


def cut(conn: Any) -> None:
    """Ask the server to cancel the statement (libpq's non-blocking cancel, at most CANCEL seconds: a
    stopped server never answers), then `shut` the connection."""
    import psycopg

    with suppress(Exception):
        if psycopg.capabilities.has_cancel_safe():  # the older, blocking cancel could hang this process
            conn.cancel_safe(timeout=CANCEL)
    shut(conn)


class Armed:
    """One connection watched until `at` (time.monotonic); `fired` once it was cut."""

    __slots__ = ("at", "conn", "fired")

    def __init__(self, conn: Any, at: float) -> None:
        self.conn = conn
        self.at = at
        self.fired = False


class Watchdog:
    """One daemon thread for the process's deadlines (a thread per statement costs 0.1 ms): it cuts
    each connection whose unit of work outlives its deadline, each cut in a thread of its own."""

    def __init__(self) -> None:
        self._armed: dict[int, Armed] = {}
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None
        self._wakes = math.inf
        """When the watching thread wakes next: an earlier deadline wakes it at once."""

    def arm(self, conn: Any, seconds: float) -> Armed:
        armed = Armed(conn, time.monotonic() + seconds)
        with self._changed:
            self._armed[id(armed)] = armed
            if self._thread is None:
                self._thread = threading.Thread(target=self._watch, name="rag-deadlines", daemon=True)
                self._thread.start()
            if armed.at < self._wakes:
                self._changed.notify()
        return armed

    def disarm(self, armed: Armed) -> None:
        with self._changed:
            self._armed.pop(id(armed), None)

    def _watch(self) -> None:
        while True:
            with self._changed:
                if not self._armed:  # nothing to watch: end, so no idle thread stays beside the run (a
                    self._thread = None  # live thread turns off forking, core/fork.py); `arm` starts one again
                    return
                now = time.monotonic()
                late = [self._armed.pop(key) for key, armed in list(self._armed.items()) if armed.at <= now]
                if not late:
                    self._wakes = min((armed.at for armed in self._armed.values()), default=math.inf)
                    self._changed.wait(None if self._wakes == math.inf else self._wakes - now)
                    self._wakes = -math.inf  # awake: arming needs no notice
            for armed in late:
                armed.fired = True
                threading.Thread(target=cut, args=(armed.conn,), name="rag-cut", daemon=True).start()


WATCHDOG = Watchdog()


@contextmanager
def deadline(conn: Any, what: str, seconds: float = DEADLINE) -> Iterator[None]:
    """The block's reads on `conn` end within `seconds` (and CANCEL more): past them the connection is
    cut (`cut`, by the WATCHDOG) and the block's error becomes one line naming the deadline."""
    armed = WATCHDOG.arm(conn, seconds)
    try:
        yield
    except Exception:
        if armed.fired:
            raise DatabaseError(
                f"{what}: the team's server did not answer within {seconds:g} s (the plugin's client-side "
                f"deadline: statement_timeout = {SESSION['statement_timeout']} and 30 s more), so its statement "
                "was cancelled and the connection cut: check that the server is running and reachable"
            ) from None
        raise
    finally:
        WATCHDOG.disarm(armed)


@dataclass(frozen=True)
class TeamCorpus:
    """Where a run without a chunks file reads its chunks: the team's table, its id and text columns,
    the rows it keeps (`where`) and how the corpus's fingerprint is computed (`digest`)."""

    table: str
    id_column: str
    text_column: str
    where: str | None
    digest: str

    def describe(self) -> str:
        """`table kb.docs where lang = 'zh'`, on one line (a condition's line breaks escaped): messages
        and the fingerprint's `chunks.table` hold it."""
        return f"table {self.table}" + (f" where {escaped(self.where)}" if self.where else "")


def setting_text(value: Any) -> str:
    """A setting's value as set_config takes it: booleans as on/off."""
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def identifier(name: str) -> Any:
    """A (schema-qualified) name as a quoted psycopg identifier."""
    sql = need("psycopg.sql", "the table retriever")
    return sql.Identifier(*name.split("."))


def condition(where: str | None, bound: bool) -> Any:
    """The `where` fragment, the team's own SQL, as a WHERE clause (empty without one); in a
    statement run with parameters (`bound`) its `%` is doubled, so `LIKE 'z%'` stays a literal."""
    sql = need("psycopg.sql", "the table retriever")
    if not where:
        return sql.SQL("")
    return sql.SQL(" WHERE ({})").format(sql.SQL(where.replace("%", "%%") if bound else where))
