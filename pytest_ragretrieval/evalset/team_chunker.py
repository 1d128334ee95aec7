"""A team's chunker (`python`), run in one process forked for it (core/fork.py), document after document,
each under a deadline: a chunker that hangs, raises, exits or kills its process is one line naming it and
the document, and the gate's own process, its output and its exit status stay the gate's. Its answers are
checked here: pairs in order, inside the document, metadata that is JSON.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core.errors import ConfigError, FixtureError
from ..core.fork import ChildFailed, TooLate, answer, forkable, serve, stop
from ..core.loader import load_object
from .documents import Document

Piece = tuple[int, int, Mapping[str, Any]]
"""A chunk's span in its document and the chunker's metadata for it."""


def team_pieces(documents: Sequence[Document], name: str, timeout: float, root: Path) -> list[list[Piece]]:
    """A team's chunker's pieces of each document, cut in one forked process: its module imported there,
    then each document under `timeout` seconds; the process is gone when this returns or raises. Where
    forking is unsafe (core/fork.py's `forkable`) it runs here, with the same checks and no deadline."""
    if not forkable():
        answers: list[bytes] = []
        _cut_all(name, documents, root, answers.append)
        decoded = [_decoded(number, data) for number, data in enumerate(answers, start=-1)]
        return [pieces for pieces in decoded if pieces is not None]
    child = serve(lambda send: _cut_all(name, documents, root, send))
    try:
        found: list[list[Piece]] = []
        for number in range(-1, len(documents)):
            data = answer(child, time.monotonic() + timeout)
            if data is None:
                raise ChildFailed("it ended before its answer")
            pieces = _decoded(number, data)
            if pieces is not None:
                found.append(pieces)
        assert answer(child, time.monotonic() + timeout) is None  # its end: one answer a document
        return found
    except TooLate:
        raise FixtureError(f"chunker {name!r} did not return within {timeout:g} s "
                           f"{_on(documents, number)} (its process was stopped); make it faster, or raise "
                           "its table's timeout") from None
    except ChildFailed as exc:
        raise FixtureError(f"chunker {name!r} {_on(documents, number)}: its process failed ({exc}); "
                           "a chunker returns its pairs, it must not exit or end its process") from None
    except BaseException:
        stop([child])  # a signal, or the one line of its answer: the process ends with this call
        raise


def _on(documents: Sequence[Document], number: int) -> str:
    return "while its module was imported" if number < 0 else f"on document {documents[number].id!r}"


def _decoded(number: int, data: bytes) -> list[Piece] | None:
    """One answer of `_cut_all`: the pieces of document `number` (None: the module was imported), or its
    one line raised."""
    answered = json.loads(data)
    if "error" in answered:
        raise (ConfigError if answered.get("config") else FixtureError)(answered["error"])
    if number < 0:
        return None
    return [(start, end, metadata) for start, end, metadata in answered["pieces"]]


def _cut_all(name: str, documents: Sequence[Document], root: Path, send: Callable[[bytes], None]) -> None:
    """Where the team's chunker runs: its module imported, then each document cut and checked, every answer
    JSON handed back through `send`; the first problem is the last answer, one line."""
    try:
        split = load_object(name, root, "chunker python")
    except ConfigError as exc:
        send(json.dumps({"error": str(exc), "config": True}).encode())
        return
    except KeyboardInterrupt:
        raise  # here only where it runs in the gate's process (not forkable): the gate's Ctrl-C or SIGTERM
    except BaseException as exc:  # noqa: BLE001 - the team's module: whatever it raises is one line
        send(_error(f"chunker {name!r} raised {_said(exc)} while its module was imported; fix the module"))
        return
    send(b"{}")
    for document in documents:
        try:
            spans = split(document.text)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - the team's code: SystemExit and RecursionError too
            send(_error(f"chunker {name!r} raised {_said(exc)} on document {document.id!r}; fix the chunker"))
            return
        try:
            send(_pieces_json(name, document, spans))
        except FixtureError as exc:
            send(_error(str(exc)))
            return


def _error(line: str) -> bytes:
    return json.dumps({"error": line}).encode()


def _said(exc: BaseException) -> str:
    """An exception as one short line: its type and the first line of its message."""
    lines = str(exc).strip().splitlines()
    said = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    return said if len(said) <= 200 else said[:199] + "…"


def _pieces_json(name: str, document: Document, spans: Any) -> bytes:
    """The checked pieces as JSON, metadata included: what cannot be written as JSON is refused here."""
    pieces = _checked(name, document, spans)
    try:
        return json.dumps({"pieces": pieces}, allow_nan=False, ensure_ascii=False).encode()
    except (TypeError, ValueError) as exc:
        raise FixtureError(f"chunker {name!r} returned metadata that is not JSON for document {document.id!r} "
                           f"({exc}); return strings, numbers, booleans, None, lists and dicts") from None


def _checked(name: str, document: Document, spans: Any) -> list[Piece]:
    """A team's chunker's answer: (start, end) or (start, end, metadata) for each chunk, in order (by start,
    then end, no pair twice), each inside the document and not empty."""
    found: list[Piece] = []
    try:
        items = list(spans)
    except TypeError:
        raise FixtureError(f"chunker {name!r} returned {type(spans).__name__} for document {document.id!r}; "
                           "return a list of (start, end) pairs") from None
    for item in items:
        if (not isinstance(item, tuple | list) or len(item) not in (2, 3)
                or not all(isinstance(n, int) and not isinstance(n, bool) for n in item[:2])
                or not 0 <= item[0] < item[1] <= len(document.text)
                or (len(item) == 3 and not isinstance(item[2], dict))):
            raise FixtureError(f"chunker {name!r} returned {_shown(item)} for document {document.id!r} "
                               f"({len(document.text)} characters); return (start, end) pairs with "
                               "0 <= start < end <= len(text), or (start, end, metadata)")
        if found and (item[0], item[1]) <= found[-1][:2]:
            twice = (item[0], item[1]) == found[-1][:2]
            raise FixtureError(f"chunker {name!r} returned {tuple(item[:2])!r} "
                               f"{'twice' if twice else 'after ' + repr(found[-1][:2])} for document "
                               f"{document.id!r}; return the pairs in order, by start then end, each once")
        found.append((item[0], item[1], dict(item[2]) if len(item) == 3 else {}))
    return found


def _shown(item: Any) -> str:
    shown = repr(item)
    return shown if len(shown) <= 120 else shown[:119] + "…"
