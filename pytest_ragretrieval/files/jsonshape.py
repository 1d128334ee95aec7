"""The side files of the `ragretrieval` command (CHANGES.json, the event, the decision) read by JSON
path: every value the command uses is checked for its type where it is read, and every problem is
one line naming that path, as the plugin's own files are checked.

`decode` takes what Python's decoder cannot: nesting 100,000 deep, an integer of 5,000 digits, a
number of 400 digits (`1e400`), NaN. It never raises RecursionError, ValueError or OverflowError;
a literal no Python number can hold decodes to `Literal`, which only the path that reads it refuses
(an event payload is GitHub's: a value the command never reads cannot stop it).
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .jsontext import MAX_DEPTH, MAX_DIGITS, JSONProblem, control_character, fits_float, metric_key_problem, unstorable


@dataclass(frozen=True)
class Literal:
    """A number literal no Python number holds as written: more than MAX_DIGITS digits, 1e400, NaN."""

    text: str

    def __str__(self) -> str:
        return self.text if len(self.text) <= 24 else f"{self.text[:20]}... ({len(self.text)} characters)"


def _integer(text: str) -> int | Literal:
    return int(text) if len(text.lstrip("-")) <= MAX_DIGITS else Literal(text)


def _float(text: str) -> float | Literal:
    value = float(text)
    return value if math.isfinite(value) else Literal(text)


def decode(text: str) -> Any:
    """The JSON value of `text`; JSONProblem (with a line and column, or the path) when it is not JSON
    or nests deeper than MAX_DEPTH levels."""
    try:
        value = json.loads(text, parse_int=_integer, parse_float=_float, parse_constant=Literal)
    except json.JSONDecodeError as exc:
        raise JSONProblem(f"{exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise JSONProblem(f"nested deeper than {MAX_DEPTH} levels at {_too_deep_at(text)}") from None
    for path, depth in _containers(value):
        if depth > MAX_DEPTH:
            raise JSONProblem(f"{path} is nested deeper than {MAX_DEPTH} levels")
    return value


def _too_deep_at(text: str) -> str:
    """`line L column C` of the bracket that opens level MAX_DEPTH + 1, found without recursion."""
    depth, inside, escaped, line, start = 0, False, False, 1, 0
    for index, char in enumerate(text):
        if inside:
            escaped, inside = (False, True) if escaped else (char == "\\", char != '"')
        elif char == '"':
            inside = True
        elif char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return f"line {line} column {index - start + 1}"
        elif char in "]}":
            depth -= 1
        if char == "\n":
            line, start = line + 1, index + 1
    return "the end"


def _containers(value: Any) -> Iterator[tuple[str, int]]:
    """(JSON path, depth) of every array and object, none deeper than MAX_DEPTH + 1, without recursion."""
    stack: list[tuple[Any, str, int]] = [(value, "", 1)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, dict):
            children: list[tuple[str, Any]] = [(f"{path}.{key}" if path else str(key), v) for key, v in item.items()]
        elif isinstance(item, list):
            children = [(f"{path}[{index}]", v) for index, v in enumerate(item)]
        else:
            continue
        yield path or "the document", depth
        if depth <= MAX_DEPTH:
            stack.extend((child, where, depth + 1) for where, child in children)


class ShapeProblem(Exception):
    """A value of the wrong type or range at a JSON path; the message completes `<file>: ...`."""


def shown(value: Any) -> str:
    """A value as a message quotes it, in JSON's words and cut short."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        text = json.dumps(value if len(value) <= 40 else value[:40] + "...", ensure_ascii=True)
        return f"the string {text}"
    return str(value if isinstance(value, Literal) else Literal(str(value)))


_ABSENT: Any = object()


class Node:
    """One value of a decoded document and its JSON path; each accessor checks the type it returns."""

    def __init__(self, value: Any, path: str = "") -> None:
        self.value = value
        self.path = path

    def problem(self, text: str) -> ShapeProblem:
        return ShapeProblem(f"{self.path or 'the document'} {text}")

    @property
    def absent(self) -> bool:
        """Missing, or null: what GitHub sends for a deleted repository."""
        return self.value is _ABSENT or self.value is None

    def __getitem__(self, key: str) -> Node:
        found = self.mapping().get(key, _ABSENT)
        return Node(found, f"{self.path}.{key}" if self.path else key)

    def mapping(self) -> dict[str, Any]:
        if not isinstance(self.value, dict):
            raise self.problem(f"must be an object, got {self._got()}")
        return self.value

    def items(self) -> list[Node]:
        if not isinstance(self.value, list):
            raise self.problem(f"must be an array, got {self._got()}")
        return [Node(item, f"{self.path}[{index}]") for index, item in enumerate(self.value)]

    def exactly(self, *keys: str, optional: tuple[str, ...] = ()) -> Node:
        """An object holding these keys, maybe the `optional` ones, and no other."""
        found = self.mapping()
        missing = [key for key in keys if key not in found]
        if missing:
            raise self.problem(f"lacks the key {missing[0]!r}")
        extra = sorted(set(found) - set(keys) - set(optional))
        if extra:
            raise self.problem(f"holds the unknown key {extra[0]!r}; known keys: {', '.join((*keys, *optional))}")
        return self

    def text(self, *, printable: bool = True) -> str:
        """A string; `printable`: without control characters, as it will be printed."""
        if not isinstance(self.value, str):
            raise self.problem(f"must be a string, got {self._got()}")
        bad = unstorable(self.value)
        if bad is None and printable and (code := control_character(self.value)) is not None:
            bad = f"a control character ({code})"
        if bad is not None:
            raise self.problem(f"holds {bad}")
        return self.value

    def metric_key(self) -> str:
        """A metric key (`ndcg@5`, jsontext.METRIC_KEY), or "" where a change names no metric (a whole retriever)."""
        text = self.text()
        problem = metric_key_problem(text) if text else None
        if problem is not None:
            raise self.problem(f"holds {problem}")
        return text

    def integer(self, minimum: int, maximum: int) -> int:
        """A whole number in range: a boolean, a fraction or 1e400 is none."""
        value = self.value
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
            raise self.problem(f"must be a whole number from {minimum} to {maximum}, got {self._got()}")
        return value

    def number(self) -> float:
        """A finite number (a boolean is none)."""
        if isinstance(self.value, bool) or not isinstance(self.value, (int, float)) or not fits_float(self.value):
            raise self.problem(f"must be a finite number, got {self._got()}")
        return float(self.value)

    def boolean(self) -> bool:
        if not isinstance(self.value, bool):
            raise self.problem(f"must be true or false, got {self._got()}")
        return self.value

    def _got(self) -> str:
        return "nothing" if self.value is _ABSENT else shown(self.value)
