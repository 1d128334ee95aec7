"""Our schemas on a shared (`url`) server: each run's own, held by a lock; killed runs' reclaimed; vector's own.

A run works in `rag_eval_<12 hex>` and holds a session-level advisory lock derived from that
name on a connection of its own for its whole life. A killed run's connections die with it, so
its lock is released by the server: a run starting drops every `rag_eval_<12 hex>` schema whose
lock it can take (nobody holds it), and never one whose lock is held. When the server has no
`vector` extension, it is created once in `rag_eval_ext`, which no run owns and none drops, so no
run's end can take the extension from under another.
"""
from __future__ import annotations

import re
import secrets
from typing import TYPE_CHECKING

from .dsn import scrub

if TYPE_CHECKING:
    import psycopg

SCHEMA_PREFIX = "rag_eval_"
RUN_SCHEMA = re.compile(r"rag_eval_[0-9a-f]{12}")
EXTENSION_SCHEMA = "rag_eval_ext"
LOCK_SPACE = 0x7261
"""The top 16 bits of our advisory lock keys ('ra'): the low 48 bits are the schema's 12 hex digits."""
EXTENSION_LOCK = (LOCK_SPACE + 1) << 48
"""Serialises installing the extension, so two runs starting together do not both create it."""
DROP_LOCK_TIMEOUT = "30s"


def new_schema() -> str:
    return SCHEMA_PREFIX + secrets.token_hex(6)


def lock_key(schema: str) -> int:
    """The advisory lock key of a run schema: LOCK_SPACE, then the name's 48 random bits."""
    return (LOCK_SPACE << 48) | int(schema[len(SCHEMA_PREFIX):], 16)


def quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def hold(conn: psycopg.Connection, schema: str) -> None:
    """Take the run's lock on `conn` (autocommit) before its schema exists: a schema nobody holds is a leftover."""
    conn.execute("SELECT pg_advisory_lock(%s)", (lock_key(schema),))


def reclaim(conn: psycopg.Connection, own: str, dsn: str) -> tuple[list[str], list[str]]:
    """Drop the run schemas nobody holds: (dropped, one line per schema that could not be dropped)."""
    import psycopg
    from psycopg import sql

    names = [
        row[0] for row in conn.execute(r"SELECT nspname FROM pg_namespace WHERE nspname LIKE 'rag\_eval\_%' ORDER BY 1")
    ]
    dropped: list[str] = []
    failed: list[str] = []
    conn.execute("SELECT set_config('lock_timeout', %s, false)", (DROP_LOCK_TIMEOUT,))
    for name in names:
        if name == own or not RUN_SCHEMA.fullmatch(name):
            continue
        key = lock_key(name)
        row = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
        if row is None or not row[0]:
            continue
        try:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))
            dropped.append(name)
        except psycopg.Error as exc:
            failed.append(f"{name} ({scrub(str(exc), dsn)})")
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
    return dropped, failed


def vector_row(conn: psycopg.Connection) -> tuple[str, str] | None:
    """(schema, version) of the installed `vector` extension, or None."""
    row = conn.execute(
        "SELECT n.nspname, e.extversion FROM pg_extension e"
        " JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
    ).fetchone()
    return None if row is None else (row[0], row[1])


def install_vector(conn: psycopg.Connection) -> None:
    """Create `vector` in EXTENSION_SCHEMA, usable by every role, once: concurrent starters wait for each other."""
    from psycopg import sql

    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (EXTENSION_LOCK,))
        if vector_row(conn) is not None:
            return
        exists = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (EXTENSION_SCHEMA,)).fetchone()
        if exists is None:
            conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(EXTENSION_SCHEMA)))
            conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO PUBLIC").format(sql.Identifier(EXTENSION_SCHEMA)))
        conn.execute(sql.SQL("CREATE EXTENSION vector SCHEMA {}").format(sql.Identifier(EXTENSION_SCHEMA)))
