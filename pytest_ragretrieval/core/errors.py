"""Errors the user can fix: each is shown as one line that names the place and the remedy."""
from __future__ import annotations

import argparse
import difflib
import traceback
from collections.abc import Callable, Iterable
from typing import TypeVar


class RagError(Exception):
    """Base class: a problem in the user's files, config or environment, never a bug of ours."""


class ConfigError(RagError):
    """A bad key or value in `[tool.ragretrieval]` or the file given with `--rag-config`."""


class OptionError(RagError):
    """A command-line option that cannot be honoured, such as an output path that is an input."""


class FixtureError(RagError):
    """A bad line in the chunks or eval-set JSON Lines files."""


class BaselineError(RagError):
    """A baseline or results file that cannot be read as ours."""


class RetrieverError(RagError):
    """A retriever that could not be built or returned an invalid ranking."""


class RetrieverUnavailable(RagError):
    """A retriever whose model or service is absent here: its items are skipped, not failed."""


class DatabaseError(RagError):
    """The database could not be chosen, started, reached or cleaned up."""


class ExtensionError(RagError):
    """An entry point of a plug-in point that cannot be loaded or is not what its group takes."""


def describe_exception(exc: BaseException) -> str:
    """`Type: message (file:line)` for the innermost frame, enough to find a user's bug."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" ({frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


def closest(given: str, known: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The entry of `known` closest to `given` (difflib's ratio, at least `cutoff`, case ignored), or None."""
    choices = {str(name).lower(): str(name) for name in known}
    close = difflib.get_close_matches(given.lower(), list(choices), n=1, cutoff=cutoff)
    return choices[close[0]] if close else None


def did_you_mean(given: str, known: Iterable[str]) -> str:
    """`; did you mean 'x'?` when `given` is close to one of `known`, else "": the one place every
    "unknown ..." message (keys, types, metrics, tokenizers, embedders, commands) gets its suggestion."""
    near = closest(given, known)
    return f"; did you mean {near!r}?" if near is not None else ""


def invalid_choice(value: str, choices: Iterable[str]) -> str:
    """argparse's message for a value that is not among `choices`, with "did you mean"."""
    known = [str(choice) for choice in choices]
    return f"invalid choice: {value!r}{did_you_mean(value, known)} (choose from {', '.join(map(repr, known))})"


Choice = TypeVar("Choice", bound=str)
"""One of a closed set of texts, such as a `Literal`'s members."""


def one_of(*choices: Choice) -> Callable[[str], Choice]:
    """An option's argparse `type=`: the value when it is one of `choices` (typed as they are, a
    `Literal`'s members), else `invalid_choice`."""
    def check(value: str) -> Choice:
        for choice in choices:
            if value == choice:
                return choice
        raise argparse.ArgumentTypeError(invalid_choice(value, choices))

    return check
