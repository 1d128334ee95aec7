"""The registry of retriever types and the parsed form of a `[retrievers.NAME]` table.

A new type is one module (implementing `RetrieverType`) and one line in `TYPES`, or, from another
distribution, an entry point in the group `pytest_ragretrieval.retrievers` naming the module.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ..core.errors import ConfigError
from ..core.extensions import Registry
from ..files.tables import Table
from ..record.checks import settings_problem
from . import bm25, hybrid, python, rerank, run, sql, table, vector
from .protocol import Asking, Batched, Closing, Context, Diagnosing, Noting, Retriever, RetrieverType, Setup, ask

__all__ = ["TYPES", "Asking", "Batched", "Closing", "Context", "Diagnosing", "Noting", "Retriever", "RetrieverSpec",
           "RetrieverType", "Setup", "ask", "parse_spec", "type_module"]

FUNCTIONS = ("parse", "sources", "build", "fingerprint", "details")
"""What a retriever type offers (see RetrieverType); `source_depth` is optional."""


def checked_type(name: str, value: object, members: Mapping[str, RetrieverType]) -> RetrieverType:
    """An entry point's module, when it offers what a type must."""
    missing = [function for function in FUNCTIONS if not callable(getattr(value, function, None))]
    if missing:
        raise ValueError(
            f"{getattr(value, '__name__', type(value).__name__)} is not a retriever type: it has no "
            f"{', '.join(missing)} (see RetrieverType in pytest_ragretrieval.retrievers.protocol)"
        )
    return cast(RetrieverType, value)


TYPES: Registry[RetrieverType] = Registry("retrievers", {
    "bm25": bm25,
    "vector": vector,
    "hybrid": hybrid,
    "rerank": rerank,
    "python": python,
    "run": run,
    "table": table,
    "sql": sql,
}, checked_type)


RUN_ONLY = ("time_budget",)
"""Parameters the fingerprint leaves out: how long a run may take decides no ranking (a run past it fails)."""


@dataclass(frozen=True)
class RetrieverSpec:
    """A configured retriever: its `params` (defaults filled in) are what the fingerprint records."""

    name: str
    type: str
    params: Mapping[str, Any] = field(hash=False)
    sources: tuple[str, ...] = ()
    max_latency_ms: float | None = None
    source_depth: int | None = None
    """How deep this retriever reads its sources, when its type says (`source_depth(params)`)."""
    required: bool = False
    """`required = true`: where it cannot run (no database URL, no model) the run fails instead of skipping it."""
    chunking: str = ""
    """`chunking = "small"`: the named chunking (`[chunkings.small]`) it reads; "": the default `[chunker]`."""
    table: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    """Its table as written, less `tune`: what a sweep's settings are parsed over (`ragretrieval tune`)."""
    tune: Mapping[str, tuple[Any, ...]] = field(default_factory=dict, hash=False, compare=False)
    """`[retrievers.NAME.tune]`: each parameter a sweep tries, with its values; never in the fingerprint."""

    @property
    def fingerprint(self) -> dict[str, object]:
        params = {key: value for key, value in self.params.items() if key not in RUN_ONLY}
        return {"type": self.type, **params, **({"chunking": self.chunking} if self.chunking else {})}

    @property
    def module(self) -> RetrieverType:
        return TYPES[self.type]


def type_module(kind: str) -> RetrieverType:
    return TYPES[kind]


def _tune(value: Any, where: str) -> dict[str, tuple[Any, ...]]:
    """`[retrievers.NAME.tune]`: parameter = [values]; each value is checked when the sweep parses it."""
    if not isinstance(value, dict):
        raise ConfigError(f"{where} key 'tune': must be a table of parameter = [values], e.g. rrf_k = [10, 30, 60]")
    found: dict[str, tuple[Any, ...]] = {}
    for key, values in value.items():
        if key in ("type", "tune") or not isinstance(values, list) or not values:
            raise ConfigError(f"{where} key 'tune.{key}': must be a non-empty list of values of a parameter, "
                              "e.g. [10, 30, 60]")
        found[key] = tuple(values)
    return found


def parse_spec(name: str, data: Mapping[str, Any], where: str, root: Path | None = None) -> RetrieverSpec:
    """Validate one `[tool.ragretrieval.retrievers.NAME]` table; its paths are relative to `root`."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: must be a table")
    tune = _tune(data.get("tune", {}), where)
    written = {key: value for key, value in data.items() if key != "tune"}
    table = Table(written, where, root)
    kind = table.text("type", choices=TYPES)
    max_latency = table.number("max_latency_ms", None, minimum=0)
    required = table.boolean("required", False)
    chunking = table.text("chunking", "")
    module = TYPES[kind]
    params = module.parse(table)
    table.finish()
    depth = getattr(module, "source_depth", None)
    spec = RetrieverSpec(name=name, type=kind, params=params, sources=tuple(module.sources(params)),
                         max_latency_ms=max_latency, source_depth=depth(params) if depth is not None else None,
                         required=required, chunking=chunking, table=written, tune=tune)
    unrecordable = settings_problem(spec.fingerprint, "")
    if unrecordable is not None:  # the baseline's reader would refuse what the run records
        raise ConfigError(f"{where}: {unrecordable[0]} holds {unrecordable[1]}; remove it")
    return spec
