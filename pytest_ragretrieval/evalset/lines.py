"""JSON Lines read a record at a time, every problem one line naming `file:line`: what the eval set's, the
chunks' and the documents' readers share."""
from __future__ import annotations

import codecs
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..core.errors import FixtureError
from ..files.jsontext import JSONProblem, first_unstorable, loads, unstorable
from ..files.paths import Unreadable, display, input_lines


def records(path: Path, data: bytes | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield (`file:line`, object) for each non-blank line, read a line at a time (or of `data`, the file's
    bytes as read already); a UTF-8 byte-order mark is skipped."""
    name = display(path)
    lines = input_lines(path) if data is None else iter(io.BytesIO(data))
    offset = 0
    number = 0
    while True:
        try:
            raw = next(lines, None)
        except Unreadable as exc:
            raise FixtureError(f"{name}: {exc}") from None
        if raw is None:
            return
        number += 1
        if number == 1 and raw.startswith(codecs.BOM_UTF8):
            raw, offset = raw[len(codecs.BOM_UTF8):], len(codecs.BOM_UTF8)
        try:
            line = raw.removesuffix(b"\n").decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FixtureError(f"{name}: not UTF-8 ({exc.reason} at byte {offset + exc.start})") from None
        offset += len(raw)
        if not line.strip():
            continue
        where = f"{name}:{number}"
        try:
            record = loads(line)
        except JSONProblem as exc:
            raise FixtureError(f"{where}: invalid JSON ({_columns_only(str(exc))})") from None
        if not isinstance(record, dict):
            raise FixtureError(f"{where}: expected a JSON object, got {type(record).__name__}")
        if "\\u" not in line:
            yield where, record  # no escape: a NUL or a lone surrogate can only come from one
            continue
        for key, value in record.items():
            problem = unstorable(key) or first_unstorable(value)
            if problem is not None:
                raise FixtureError(f"{where}: field {key!r} holds {problem}; remove it")
        yield where, record


class Unanchored(FixtureError):
    """A label that names nothing in the corpus (a `relevant` or `not_relevant` id it does not hold, a snippet
    no chunk holds): the gate then looks for where its text went."""


def _columns_only(message: str) -> str:
    """A one-line record's position is its column: `... at line 1 column 7` reads `... at column 7`."""
    return message.replace(" at line 1 column ", " at column ")
