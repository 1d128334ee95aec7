"""Decoding JSON at the boundary, with limits: every way Python's decoder can fail becomes one JSONProblem.

`json.loads` rejects some input without a JSONDecodeError: nesting deeper than the interpreter's
recursion limit (RecursionError), integer literals of more than 4300 digits (ValueError). It
also accepts what Postgres and our writers cannot take: NaN and Infinity, NUL characters and
lone surrogates (`"\\ud800"`). Readers get one message for each, to put after `file:line: `.

msgspec decodes first (several times faster than `json`); whatever it refuses is decoded again by
the careful decoder, which either accepts it as `json.loads` would (a lone surrogate escape, an
integer past msgspec's range but within MAX_DIGITS) or names the problem. So both accept and
refuse the same texts, with the same messages, and only the fast one runs on good input.
"""
from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterator
from typing import Any

import msgspec

MAX_DEPTH = 100
"""Arrays and objects nested deeper than this are refused (our files need 6 levels)."""

MAX_DIGITS = sys.get_int_max_str_digits() or 4300
"""Python's own limit on integer literals; 0 means unlimited, where 4300 is the default."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
"""Unicode's categories Cc (control), Zl and Zp (line and paragraph separators), as one character class."""
_DECODER = msgspec.json.Decoder()

MAX_CUTOFF_DIGITS = 9
"""A metric key's cutoff has at most this many digits (`ndcg@999999999`): more is no cutoff any run asks for."""
METRIC_KEY = re.compile(rf"([a-z_][a-z0-9_]*)(?:@([1-9][0-9]{{0,{MAX_CUTOFF_DIGITS - 1}}})(c?))?")
"""The one form of a metric key in every file: a name, then optionally `@` and a cutoff in ASCII digits
without a leading 0 (`ndcg@5`, `mrr`), so one cutoff has one spelling; or `@`, the same digits and `c`, a
budget of characters (`char_recall@2000c`: scoring/spans.py's `within_budget`), a key of baseline format 4
on (`metric_key_problem`'s `budgets`)."""


class JSONProblem(Exception):
    """Why a text is not JSON we accept; the message is one line, with `at line L column C` when known."""


def _no_constant(name: str) -> Any:
    raise JSONProblem(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JSONProblem(f"the number {text[:40]} is too large for a float")
    return value


def loads(text: str | bytes, *, allow_nan: bool = False) -> Any:
    """Decode `text` (bytes: UTF-8); raise JSONProblem for anything Python's decoder or our limits reject.

    With allow_nan, NaN and Infinity decode as floats, so a caller can name the key that holds one.
    """
    try:
        value = _DECODER.decode(text)
    except Exception:  # noqa: BLE001 - refused fast: the careful decoder decides, and says why
        return _careful(text, allow_nan)
    if may_nest(text) and _depth(value) > MAX_DEPTH:
        raise JSONProblem(f"nested deeper than {MAX_DEPTH} levels")
    return value


def may_nest(text: str | bytes) -> bool:
    """Whether `text` holds more than MAX_DEPTH brackets and braces (else it cannot nest deeper)."""
    if isinstance(text, str):
        return text.count("[") + text.count("{") > MAX_DEPTH
    return text.count(b"[") + text.count(b"{") > MAX_DEPTH


_ESCAPE = re.compile(r"\\[^\"\\/]")
"""An escape sequence other than `\\"`, `\\\\` and `\\/`: the only way a JSON string can hold a control
character below U+0020, a NUL or a lone surrogate."""
_RAW_CONTROL = re.compile("[\x7f-\x9f\u2028\u2029]")
"""Control and separator characters a JSON string may hold unescaped."""


def plain_strings(text: str) -> bool:
    """Whether no string of the JSON `text` can hold a control or separator character, a NUL or a lone
    surrogate: no escape but `\\"`, `\\\\`, `\\/`, and no such character unescaped (a backslash that starts
    an escaped backslash may be counted as an escape: then the answer is False, and a reader checks every
    string as before). Lets a reader skip walking every string of a large, clean file."""
    return _ESCAPE.search(text) is None and _RAW_CONTROL.search(text) is None


def _careful(text: str | bytes, allow_nan: bool) -> Any:
    """Python's decoder, every way it fails one JSONProblem; NaN and Infinity refused unless allowed."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JSONProblem(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    hooks: dict[str, Any] = {} if allow_nan else {"parse_constant": _no_constant, "parse_float": _finite}
    try:
        value = json.loads(text, **hooks)
    except json.JSONDecodeError as exc:
        raise JSONProblem(f"{exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise JSONProblem(f"nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:
        if "digits" in str(exc):
            raise JSONProblem(f"an integer literal has more than {MAX_DIGITS} digits") from None
        raise JSONProblem(str(exc).splitlines()[0]) from None
    depth = _depth(value)
    if depth > MAX_DEPTH:
        raise JSONProblem(f"nested deeper than {MAX_DEPTH} levels")
    return value


def fits_float(value: int | float) -> bool:
    """Whether a number is one the gate can compute with: a finite float, or an integer a float holds
    (up to about 1.8e308; 310 digits and more never do). The one rule every reader applies (baseline,
    results, changes, approval records, user dictionaries), so an integer of 310 to 4,300 digits is
    refused where it is read, never an OverflowError where it is used."""
    if isinstance(value, float):
        return math.isfinite(value)
    if value.bit_length() > 1024:
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def metric_key_problem(key: str, budgets: bool = True) -> str | None:
    """Why `key` is not a metric key (`name@digits`, at most MAX_CUTOFF_DIGITS ASCII digits, or, where
    `budgets`, `name@digitsc`; None: it is one). A file of baseline format 3 or older holds no budget key."""
    match = METRIC_KEY.fullmatch(key)
    if match and (budgets or not match.group(3)):
        return None
    shown = key if len(key) <= 40 else f"{key[:30]}... ({len(key)} characters)"
    rule = (f"{escaped(shown)!r} is not a metric key: a lower-case name, then optionally '@' and a cutoff of "
            f"1 to {MAX_CUTOFF_DIGITS} ASCII digits, the first not 0 (ndcg@5)")
    if budgets:
        return f"{rule}, or '@', such digits and 'c' for a budget of characters (char_recall@2000c)"
    return f"{rule}; a budget of characters (char_recall@2000c) is a key of format_version 4 on" if match else rule


def cutoff(key: str) -> int | None:
    """The cutoff of a metric key (`ndcg@5` -> 5), None when it has none (`mrr`, a budget) or is no metric key."""
    match = METRIC_KEY.fullmatch(key)
    return int(match.group(2)) if match is not None and match.group(2) is not None and not match.group(3) else None


def budget(key: str) -> int | None:
    """The budget of characters of a metric key (`char_recall@2000c` -> 2000), None when it has none."""
    match = METRIC_KEY.fullmatch(key)
    return int(match.group(2)) if match is not None and match.group(3) else None


def _depth(value: Any) -> int:
    """How deeply arrays and objects nest in `value`, found without recursion (only containers are stacked)."""
    if type(value) not in _CONTAINERS:
        return 0
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if level <= MAX_DEPTH:
            children = item.values() if type(item) is dict else item
            stack.extend([(child, level + 1) for child in children if type(child) in _CONTAINERS])
    return deepest


_CONTAINERS = (dict, list)


def strings(value: Any) -> Iterator[str]:
    """Every string in a decoded value, object keys included."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def unstorable(text: str) -> str | None:
    """Why Postgres or a UTF-8 file cannot hold `text`: a NUL character or a lone surrogate (None: fine)."""
    if "\x00" in text:
        return "a NUL character (U+0000), which Postgres cannot store"
    found = _SURROGATE.search(text)
    if found is not None:
        code = ord(found.group())
        return f"a lone surrogate (U+{code:04X}), which is not Unicode text and cannot be written as UTF-8"
    return None


def first_unstorable(value: Any) -> str | None:
    """The problem of the first unstorable string anywhere in `value`, or None."""
    for text in strings(value):
        problem = unstorable(text)
        if problem is not None:
            return problem
    return None


def control_character(text: str) -> str | None:
    """The first control or line-separator character in `text` as `U+000A` (None: there is none).

    Ids, names and tags are printed in verdicts and reports, where a line break could forge a line.
    """
    found = _CONTROL.search(text)
    return None if found is None else f"U+{ord(found.group()):04X}"


def escaped(text: str) -> str:
    """`text` on one line: a control or line-separator character written as Python escapes it
    (`\\n`, `\\t`, `\\x00`, `\\u2028`), everything printable (CJK included) kept as it is. For free
    text (a query) quoted in a verdict, which results files refuse to hold with a line break."""
    if control_character(text) is None:
        return text
    return "".join(char if control_character(char) is None else repr(char)[1:-1] for char in text)
