"""Errors the user can fix: each is shown as one line that names the place and the remedy."""
from __future__ import annotations

import traceback


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
