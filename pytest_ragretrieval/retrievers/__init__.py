"""The retriever contract and the registry of built-in retriever types.

A retriever is the tutorial's unified signature: a query and a depth in, chunk ids out, best
first. Each built-in type lives in its own module exposing `parse(table) -> params` and
`build(params, ctx) -> Retriever`, and `sources(params)` when it reads other retrievers; modules import their heavy dependencies only in `build`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from importlib import import_module
from typing import Any, Mapping, Protocol, Sequence, runtime_checkable

from ..errors import ConfigError
from ..tables import Table

TYPES: dict[str, str] = {
    "bm25": "bm25",
    "vector": "vector",
    "hybrid": "hybrid",
    "rerank": "rerank",
    "python": "python",
}


@runtime_checkable
class Retriever(Protocol):
    """Return up to `k` chunk ids for `query`, most relevant first, without duplicates."""

    def __call__(self, query: str, k: int) -> Sequence[str]: ...


@dataclass(frozen=True)
class RetrieverSpec:
    """A configured retriever: its `params` (defaults filled in) are what the fingerprint records."""

    name: str
    type: str
    params: Mapping[str, Any] = field(hash=False)
    sources: tuple[str, ...] = ()
    max_latency_ms: float | None = None

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"type": self.type, **self.params}


def type_module(kind: str) -> Any:
    return import_module(f"{__name__}.{TYPES[kind]}")


def parse_spec(name: str, data: Mapping[str, Any], where: str) -> RetrieverSpec:
    """Validate one `[tool.ragretrieval.retrievers.NAME]` table."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: must be a table")
    table = Table(data, where)
    kind = table.text("type", choices=TYPES)
    max_latency = table.number("max_latency_ms", None, minimum=0)
    module = type_module(kind)
    params = module.parse(table)
    table.finish()
    sources = tuple(module.sources(params)) if hasattr(module, "sources") else ()
    return RetrieverSpec(name=name, type=kind, params=params, sources=sources, max_latency_ms=max_latency)
