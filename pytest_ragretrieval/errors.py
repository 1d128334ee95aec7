"""Errors the user can fix: each is shown as one line that names the place and the remedy."""
from __future__ import annotations


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
