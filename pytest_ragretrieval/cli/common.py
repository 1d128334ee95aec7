"""What every `ragretrieval` command shares: exit codes, one-line errors, the printed result, text helpers."""
from __future__ import annotations

import argparse
import os
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, Protocol

from ..core.errors import invalid_choice
from ..files.jsonshape import ShapeProblem, decode
from ..files.jsontext import JSONProblem, control_character
from ..files.paths import Unreadable, display, output_problem, read_input

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

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """argparse's own check of a choice (a command's name among them), with "did you mean"."""
        if action.choices is not None and value not in action.choices:
            raise argparse.ArgumentError(action, invalid_choice(str(value), action.choices))


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


def label_name(text: str) -> str:
    """An argparse `type=`: a GitHub label name (1 to 50 characters, no control character)."""
    if not text.strip() or len(text) > 50 or control_character(text) is not None:
        raise argparse.ArgumentTypeError(f"expected a label name of 1 to 50 printable characters, got {text!r}")
    return text


def read_text(path: Path, fix: str) -> str:
    """A text file the workflow hands over (a FIFO or device refused, as `read_input` does); any
    problem is one line naming it and `fix`."""
    try:
        return read_input(path).decode("utf-8-sig")
    except Unreadable as exc:
        raise UsageError(f"{display(path)}: {'file not found' if exc.missing else exc}; {fix}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{display(path)}: not UTF-8 text; {fix}") from None


def read_json(path: Path, fix: str) -> Any:
    """A JSON file the workflow hands over, read with the limits of `jsonshape.decode` (no depth,
    digit or float overflow escapes); any problem is one line naming it and `fix`."""
    text = read_text(path, fix)
    try:
        return decode(text)
    except JSONProblem as exc:
        raise UsageError(f"{display(path)}: not valid JSON ({exc}); {fix}") from None


def shape_error(path: Path, what: str, problem: ShapeProblem, fix: str) -> UsageError:
    """A side file's value of the wrong type, as one line: the file, what it is not, the JSON path, the fix."""
    return UsageError(f"{display(path)}: {what} ({problem}); {fix}")


WORKFLOW_FILES = ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY")
"""Files GitHub hands a step to append to: a command's own output must not replace them."""


def project_inputs(config_option: str | None, cwd: Path) -> dict[str, Path]:
    """Every file the project's gate reads (config/outputs.py: chunks, eval set, config, baseline, user
    dictionaries, run files), from the config at `cwd` (or `--config`); a config that cannot be read
    still leaves the files it would be read from, so no output replaces them either."""
    from ..config.outputs import inputs
    from ..config.settings import load_config
    from ..core.errors import RagError

    try:
        return inputs(load_config(config_option, cwd))
    except RagError:
        candidate = Path(config_option) if config_option else cwd / "pyproject.toml"
        return {"the config file": candidate} if candidate.exists() else {}


def checked_output(option: str, value: str | None, inputs: Mapping[str, Path],
                   config_option: str | None = None) -> Path | None:
    """The path an option writes, checked as the plugin checks its outputs (config/outputs.py) before
    anything is read or written: never one of `inputs` (description -> path), a file the project's
    gate reads (`project_inputs`), a workflow file, a directory, a device, a FIFO or a socket; one
    line naming the option and the fix otherwise."""
    if value is None:
        return None
    path = Path(value)
    project = project_inputs(config_option, Path.cwd())
    read = {**inputs, **{what: where for what, where in project.items() if what not in inputs},
            **{f"${name}": Path(os.environ[name]) for name in WORKFLOW_FILES if os.environ.get(name)}}
    problem = output_problem(path, read)
    if problem is not None:
        raise UsageError(f"{option} {display(path)}: {problem}")
    return path
