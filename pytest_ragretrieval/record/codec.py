"""The one codec of the run record: a `Record` written as the results/baseline file, and a file read back
into one. Writing goes through `msgspec.to_builtins` and the project's JSON writer (sorted keys,
two-space indent, real UTF-8, a final newline), so the bytes are what they were before the record.
Reading decodes with `jsontext.loads`, refuses an unreadable `format_version` first, upgrades older
files (`upgrade.py`), validates the shape against the types in one step and then what types cannot say
(`checks.py`, `validate.py`): every problem one line naming the file, the JSON path and the fix."""
from __future__ import annotations

import json
import re
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import msgspec

from ..core.errors import BaselineError
from ..files.jsontext import JSONProblem, loads, plain_strings
from ..files.paths import Unreadable, display, read_input, write_atomic
from .checks import damaged, number, shown, text_problem
from .types import READABLE, Record, Verdict
from .upgrade import upgraded
from .validate import check_fingerprint, check_record

WHOLE_FLOATS = 100
"""How many integers written as floats (`3.0`) a file may hold: a run writes none."""
PATH_PART = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\.\.\.|\d+)\]")
WORDS = {"float": "a number", "int": "an integer", "str": "a string", "object": "an object",
         "array": "an array", "bool": "a boolean", "null": "null"}
HINTS: dict[tuple[str, ...], str] = {
    ("k",): "must be an integer >= 1",
    ("retrievers",): "must be an object",
    ("retrievers", "*"): "must be an object",
    ("retrievers", "*", "metrics"): "must map metric names to numbers",
    ("retrievers", "*", "questions"): "must be an object",
    ("retrievers", "*", "questions", "*"): "must be an object",
    ("retrievers", "*", "questions", "*", "ranking"): "must be a list of chunk ids",
    ("retrievers", "*", "questions", "*", "metrics"): "must map metric names to numbers",
    ("retrievers", "*", "tags"): "must be an object",
    ("retrievers", "*", "tags", "*"): "must map metric names to numbers",
    ("retrievers", "*", "no_answer"): "must map questions, empty, answerable_empty to counts",
    ("retrievers", "*", "approved"): "must map question ids to rankings",
    ("retrievers", "*", "approved", "*"): "must be a list of chunk ids",
    ("retrievers", "*", "bar"): "must map metric names to objects",
    ("retrievers", "*", "bar", "*"): "must map question ids to numbers",
    ("unavailable",): "must map retriever names to reasons",
    ("failures",): "must list objects with item, retriever, metric and summary",
}
"""What a value at these JSON paths must be, said as before the record; the types say the rest."""
CONTAINERS = frozenset({("retrievers", "*", "metrics"), ("retrievers", "*", "questions", "*", "ranking"),
                        ("retrievers", "*", "questions", "*", "metrics"), ("retrievers", "*", "tags", "*"),
                        ("retrievers", "*", "no_answer"), ("retrievers", "*", "bar", "*"),
                        ("retrievers", "*", "approved", "*"), ("unavailable",),
                        ("failures",)})
"""Paths whose hint also covers a bad member: `metrics.p@5 = null` is said of `metrics`."""


@dataclass(frozen=True)
class Decoded:
    """A file read: the record, and the JSON document it was read from (upgraded), for the readers that
    compare documents (the baseline update writes nothing when the new document equals the old)."""

    record: Record
    document: dict[str, object]


def dumps(doc: Mapping[str, object]) -> str:
    """Sorted keys, two-space indent, real UTF-8 and a final newline: diffs well in review.

    The bytes of `json.dumps(doc, ensure_ascii=False, sort_keys=True, indent=2)`, made faster: Python's
    encoder in C writes the compact text (its numbers and strings), msgspec only indents it (Python
    indents in pure Python, several times slower on a 20,000-chunk results file)."""
    compact = _COMPACT.encode(doc).encode("utf-8", "surrogatepass")
    return msgspec.json.format(compact, indent=2).decode("utf-8", "surrogatepass") + "\n"


_COMPACT = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def to_document(record: msgspec.Struct) -> dict[str, object]:
    """The record as JSON values: enums as their words, tuples as lists, absent (`UNSET`) fields left out
    (through msgspec's JSON, whose floats read back as the same floats)."""
    found: dict[str, object] = msgspec.json.decode(msgspec.json.encode(record))
    return found


def file_document(record: Record) -> dict[str, object]:
    """The file's JSON values. The fingerprint is kept as given: what a retriever type says of itself is
    any JSON value (an integer beyond 64 bits, NaN), written as the project's JSON writer writes it."""
    return {**to_document(msgspec.structs.replace(record, fingerprint={})), "fingerprint": record.fingerprint}


def encode(record: Record) -> str:
    return dumps(file_document(record))


def write_verdicts(path: Path, verdicts: Mapping[str, Verdict]) -> None:
    """Node id -> verdict, atomically, so that a pytest-xdist worker never reads half a file."""
    write_atomic(path, msgspec.json.encode(dict(sorted(verdicts.items()))))


def read_verdicts(path: Path) -> dict[str, Verdict]:
    """The verdicts the controller wrote; the file is its own, checked against the types all the same."""
    return msgspec.json.decode(path.read_bytes(), type=dict[str, Verdict])


def decode(path: Path, text: str) -> Decoded:
    """Validate a results or baseline document; every problem is one line naming the file and the JSON path."""
    try:
        doc = loads(text, allow_nan=True)
    except JSONProblem as exc:
        raise damaged(path, f"not valid JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise damaged(path, "not a results document (expected a JSON object)")
    version = _version(path, doc)
    bad_text = None if plain_strings(text) else text_problem(doc)
    if bad_text is not None:
        raise damaged(path, f"{bad_text[0]} holds {bad_text[1]}")
    doc = upgraded(doc, version)
    check_fingerprint(path, doc.get("fingerprint"), version)
    record = _converted(path, doc)
    check_record(path, record, doc, version)
    return Decoded(record, doc)


def _converted(path: Path, doc: dict[str, object]) -> Record:
    """The record read by the types. A whole float where an integer stands (`3.0`) is that integer, in
    `doc` too: JSON Schema cannot tell them apart, so the published schema and the codec agree."""
    for _ in range(WHOLE_FLOATS):
        try:
            return msgspec.convert(doc, Record)
        except msgspec.ValidationError as exc:
            message = str(exc)
            what, _, at = message.partition(" - at `")
            parts = [part for part, _ in _located(doc, at.rstrip("`"))]
            value = _value(doc, parts)
            if what != "Expected `int`, got `float`" or not (isinstance(value, float) and value.is_integer()):
                raise damaged(path, _problem(path, doc, message)) from None
            parent = _value(doc, parts[:-1])
            if isinstance(parent, list):
                parent[int(parts[-1][1:-1])] = int(value)
            elif isinstance(parent, dict):
                parent[parts[-1]] = int(value)
    raise damaged(path, f"more than {WHOLE_FLOATS} integers written as floats (3.0); write them as integers")


def read(path: Path) -> Decoded:
    """The results or baseline file at `path`; a missing file is an error."""
    try:
        data = read_input(path)
    except Unreadable as exc:
        raise BaselineError(f"{display(path)}: {exc}") from None
    return _decoded(path, data)


def load(path: Path) -> Decoded | None:
    """The file at `path`, or None when there is none yet; a path that is no file is an error."""
    try:
        data = read_input(path)
    except Unreadable as exc:
        if exc.missing:
            return None
        raise BaselineError(f"{display(path)}: {exc}") from None
    return _decoded(path, data)


def _decoded(path: Path, data: bytes) -> Decoded:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise damaged(path, "not UTF-8 text") from None
    return decode(path, text)


def _version(path: Path, doc: Mapping[str, object]) -> int:
    """Which format the file is in, refused before anything else is read: the rest depends on it."""
    version = doc.get("format_version")
    if isinstance(version, float) and version.is_integer():
        version = int(version)
    if type(version) is not int or version not in READABLE:
        readable = ", ".join(map(str, READABLE[:-1])) + f" and {READABLE[-1]}"
        raise damaged(path, f"format_version is {shown(version)}, this plugin reads format_version {readable}")
    return version


def _problem(path: Path, doc: dict[str, object], message: str) -> str:
    """msgspec's message (`Expected `float`, got `null` - at `$.retrievers[...].metrics[...]``) as one
    line naming the exact JSON path (`retrievers.bm25.metrics.p@5`), with the hint the path has."""
    what, _, at = message.partition(" - at `")
    located = list(_located(doc, at.rstrip("`")))
    parts = [part for part, _ in located]
    pattern = tuple("*" if key else part for part, key in located)
    if what == "Number out of range":  # an integer too large for a float: named with its metric's range
        number(path, _joined(parts), _value(doc, parts))
    for size in (len(parts), len(parts) - 1):
        if pattern[:size] in HINTS and (size == len(parts) or pattern[:size] in CONTAINERS):
            return f"{_joined(parts[:size])} {HINTS[pattern[:size]]}"
    where = _joined(parts) or "the document"
    words = re.sub(r"`(\w+)`", lambda m: WORDS.get(m.group(1), f"`{m.group(1)}`"), what)
    return f"{where}: {words[:1].lower()}{words[1:]}"


def _joined(parts: list[str]) -> str:
    return "".join(part if part.startswith("[") or not index else f".{part}" for index, part in enumerate(parts))


def _value(doc: object, parts: list[str]) -> object:
    for part in parts:
        if isinstance(doc, dict):
            doc = doc.get(part)
        elif isinstance(doc, list) and part.startswith("["):
            doc = doc[int(part[1:-1])]
    return doc


def _located(doc: object, at: str) -> Iterator[tuple[str, bool]]:
    """The path msgspec gives, map keys found (`[...]` is the first key whose value the type refuses),
    each part with whether it is a map key."""
    kind: object = Record
    for match in PATH_PART.finditer(at):
        name, index = match.groups()
        kind = _plain(kind)
        if name is not None:
            fields = {f.encode_name: f.type for f in msgspec.structs.fields(kind)} \
                if isinstance(kind, type) and issubclass(kind, msgspec.Struct) else {}
            kind = fields.get(name, object)
            doc = doc.get(name) if isinstance(doc, dict) else None
            yield name, False
        elif index == "...":
            inner = typing.get_args(kind)[1] if typing.get_origin(kind) is dict else object
            key = next((key for key, value in doc.items() if not _fits(value, inner)), "...") \
                if isinstance(doc, dict) else "..."
            doc, kind = (doc.get(key) if isinstance(doc, dict) else None), inner
            yield key, True
        else:
            args = typing.get_args(kind)
            kind = args[0] if len(args) == 2 and args[1] is Ellipsis else (args[int(index)] if args else object)
            doc = doc[int(index)] if isinstance(doc, list) and int(index) < len(doc) else None
            yield f"[{index}]", False


def _plain(kind: object) -> object:
    """`X | None`, `X | UnsetType` and `Annotated[X, ...]` as X."""
    if typing.get_origin(kind) is typing.Annotated:
        return _plain(typing.get_args(kind)[0])
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        found = [arg for arg in typing.get_args(kind) if arg not in (type(None), msgspec.UnsetType)]
        return _plain(found[0]) if len(found) == 1 else kind
    return kind


def _fits(value: object, kind: object) -> bool:
    try:
        msgspec.convert(value, kind)
    except msgspec.ValidationError:
        return False
    return True
