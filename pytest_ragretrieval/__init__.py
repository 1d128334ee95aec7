"""pytest-ragretrieval: a regression gate for the retrieval layer of RAG systems.

For users' factories: `Context` (what `factory(ctx)` gets), `Retriever` (what it returns),
`Query` (what a `signature = "question"` retriever is asked with) and `RetrieverUnavailable`
(raise it when the retriever cannot run here). They are loaded on first
access, so that importing the plugin stays cheap when its flags are not given.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
"""The one place the version is written; pyproject.toml reads it."""

__all__ = ["Context", "Query", "Retriever", "RetrieverUnavailable", "__version__"]

if TYPE_CHECKING:
    from .core.errors import RetrieverUnavailable
    from .retrievers.protocol import Context, Query, Retriever

_EXPORTS = {
    "Context": "pytest_ragretrieval.retrievers.protocol",
    "Query": "pytest_ragretrieval.retrievers.protocol",
    "Retriever": "pytest_ragretrieval.retrievers.protocol",
    "RetrieverUnavailable": "pytest_ragretrieval.core.errors",
}


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        from importlib import import_module

        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
