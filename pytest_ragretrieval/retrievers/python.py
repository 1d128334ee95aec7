"""A user's own retriever, built by a factory named by import path (`module:attribute`)."""
from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any, Callable

from ..errors import ConfigError, RetrieverError
from ..tables import Table


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


def sources(params: dict[str, Any]) -> list[str]:
    """The retrievers this factory may read through `ctx.retriever(name)`."""
    return list(params.get("sources", []))


def load_object(path: str, root: Path, what: str) -> Callable[..., Any]:
    """Import `module:attribute`, looking in the config's folder first as pytest's rootdir would."""
    module_name, _, attribute = path.partition(":")
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"{what} {path!r}: cannot import module {module_name!r} ({exc})") from None
    try:
        target = module
        for part in attribute.split("."):
            target = getattr(target, part)
    except AttributeError:
        raise ConfigError(f"{what} {path!r}: module {module_name!r} has no attribute {attribute!r}") from None
    if not callable(target):
        raise ConfigError(f"{what} {path!r}: {attribute!r} is not callable")
    return target


def build(params: dict[str, Any], ctx: Any) -> Callable[[str, int], Any]:
    factory = load_object(params["factory"], ctx.root, "factory")
    retriever = factory(ctx)
    if not callable(retriever):
        raise RetrieverError(
            f"factory {params['factory']!r} returned {type(retriever).__name__}, "
            "expected a callable (query: str, k: int) -> sequence of chunk ids"
        )
    return retriever
