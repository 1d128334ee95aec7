"""What every `ragretrieval` command shares: exit codes, one-line errors, the printed result, text helpers."""
from __future__ import annotations

import argparse
import json
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, Protocol

from ..paths import display

PROG = "ragretrieval"
OK, FAILED, USAGE, BUG = 0, 1, 2, 3
PREVIEW = 40
"""Characters of chunk text shown, as the tutorial's `find_ids` prints them."""

_ASCII_FOLD = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
ONE_LINE = str.maketrans({"\n": " ", "\r": " ", "\t": " "})


class UsageError(Exception):
    """A bad command line: reported as one line, like every other error."""


class Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage and exiting, so errors stay one line."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


@dataclass
class Result:
    """What a command prints and how it exits; printed only once complete, so errors leave no half output."""

    out: list[str] = field(default_factory=list)
    err: list[str] = field(default_factory=list)
    code: int = OK


class Command(Protocol):
    """A command module: it adds its subparser, then runs on the parsed arguments."""

    def register(self, commands: Any, common: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> Result: ...


def preview(text: str) -> str:
    """The first characters of a chunk on one line: tabs and line breaks become spaces."""
    return text[:PREVIEW].translate(ONE_LINE)


def fold(text: str) -> str:
    """ASCII letters lower-cased, everything else (CJK, full-width letters) left exactly as is."""
    return text.translate(_ASCII_FOLD)


def positive(text: str) -> int:
    """An argparse `type=`: a whole number >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


def read_text(path: Path, fix: str) -> str:
    """A text file the workflow hands over; any problem is one line naming it and `fix`."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{display(path)}: file not found; {fix}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{display(path)}: not UTF-8 text; {fix}") from None


def read_json(path: Path, fix: str) -> Any:
    """A JSON file the workflow hands over; any problem is one line naming it and `fix`."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{display(path)}: file not found; {fix}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{display(path)}: not UTF-8 text; {fix}") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{display(path)}: not valid JSON ({exc.msg} at line {exc.lineno}); {fix}") from None
