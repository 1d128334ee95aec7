"""A user's own retriever, built by a factory named by import path (`module:attribute`).

By default the factory's callable gets `(query: str, k)`. With `signature = "question"` it gets
`(question, k)`, the whole question as a `Query` (id, query, tags; never the judgments): for a
service keyed by question id, or two questions with the same text.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..core.errors import RetrieverError
from ..core.loader import load_object
from ..files.tables import Table
from .protocol import Context, Query, Retriever, Setup

SIGNATURES = ("query", "question")


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
    if table.text("signature", "query", choices=SIGNATURES) == "question":
        params["signature"] = "question"
    return params


def sources(params: Mapping[str, Any]) -> list[str]:
    """The retrievers this factory may read through `ctx.retriever(name)`."""
    return list(params.get("sources", []))


class QuestionRetriever:
    """A `signature = "question"` callable, asked with the whole question."""

    def __init__(self, name: str, function: Callable[[Query, int], Sequence[str]]) -> None:
        self.name = name
        self.function = function

    def ask(self, query: Query, k: int) -> Sequence[str]:
        return self.function(query, k)

    def __call__(self, query: str, k: int) -> Sequence[str]:
        raise RetrieverError(
            f"retriever {self.name!r} has signature = \"question\" and cannot answer a query text alone; "
            "call it through a hybrid or rerank retriever, or as source.ask(question, k)"
        )


def build(params: Mapping[str, Any], ctx: Context) -> Retriever:
    factory = load_object(params["factory"], ctx.root, "factory")
    retriever = factory(ctx)
    asked = "question: Query" if params.get("signature") == "question" else "query: str"
    if not callable(retriever):
        raise RetrieverError(
            f"factory {params['factory']!r} returned {type(retriever).__name__}, "
            f"expected a callable ({asked}, k: int) -> sequence of chunk ids"
        )
    if params.get("signature") == "question":
        return QuestionRetriever(ctx.name, retriever)
    return retriever  # type: ignore[no-any-return]


def fingerprint(params: Mapping[str, Any], setup: Setup) -> dict[str, Any]:
    """The embedder's id: a factory may call `ctx.embed`, so its rankings may depend on it."""
    return {"embedding": setup.embedding_id}


def details(params: Mapping[str, Any]) -> dict[str, str]:
    return {}
