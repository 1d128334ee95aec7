"""A user's own retriever, built by a factory named by import path (`module:attribute`)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..config.toml import Table
from ..errors import RetrieverError
from ..loader import load_object
from .protocol import Context, Retriever, Setup


def parse(table: Table) -> dict[str, Any]:
    factory = table.text("factory")
    if factory.count(":") != 1 or not all(factory.split(":")):
        raise table.error("factory", f"must look like 'package.module:function', got {factory!r}")
    options = table.raw("options", {})
    if not isinstance(options, dict):
        raise table.error("options", "must be a table")
    params: dict[str, Any] = {"factory": factory, "options": options}
    sources_ = table.texts("sources", [], non_empty=False)
    if sources_:
        params["sources"] = sources_
    version = table.text("version", None)
    if version is not None:
        params["version"] = version
    return params


def sources(params: Mapping[str, Any]) -> list[str]:
    """The retrievers this factory may read through `ctx.retriever(name)`."""
    return list(params.get("sources", []))


def build(params: Mapping[str, Any], ctx: Context) -> Retriever:
    factory = load_object(params["factory"], ctx.root, "factory")
    retriever = factory(ctx)
    if not isinstance(retriever, Retriever):
        raise RetrieverError(
            f"factory {params['factory']!r} returned {type(retriever).__name__}, "
            "expected a callable (query: str, k: int) -> sequence of chunk ids"
        )
    return retriever


def fingerprint(params: Mapping[str, Any], setup: Setup) -> dict[str, Any]:
    """The embedder's id: a factory may call `ctx.embed`, so its rankings may depend on it."""
    return {"embedding": setup.embedding_id}


def details(params: Mapping[str, Any]) -> dict[str, str]:
    return {}
