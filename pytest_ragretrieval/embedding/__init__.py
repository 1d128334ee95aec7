"""Embedders chosen by `embedding = "..."`, and the one cache every embedder goes through.

Ids name what produced a vector; they enter the fingerprint and the cache folder names:

- `sentence-transformers:all-MiniLM-L6-v2` for the packaged model (either alias), otherwise
  `sentence-transformers:<value as written in the config>`;
- `openai:<model>@api.openai.com`, or `openai:<model>@<base_url>` (credentials, query and a
  trailing slash dropped) for an OpenAI-compatible server;
- `embedding_id` for `python:` embedders. When set, `embedding_id` replaces the derived id of
  any embedder, e.g. to pin the version of a local model folder.

Constructing an embedder loads nothing: models, clients and user modules load on the first
`embed()`, so a run served entirely from the cache needs neither the model nor an API key.
"""
from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING, Protocol, cast

from ..errors import ConfigError

if TYPE_CHECKING:
    from .base import Embedder, EmbedderSettings


class EmbedderModule(Protocol):
    """A module under `embedding/`: `make(model, settings)` builds its embedder without loading anything."""

    def make(self, model: str, settings: EmbedderSettings) -> Embedder: ...


@dataclass(frozen=True)
class EmbedderKind:
    """A prefix of `embedding = "<prefix>:<model>"`: the module that builds it, and whether it needs `embedding_id`."""

    module: str
    needs_id: bool = False


EMBEDDERS: dict[str, EmbedderKind] = {
    "sentence-transformers": EmbedderKind("sentence_transformers"),
    "openai": EmbedderKind("openai"),
    "python": EmbedderKind("python", needs_id=True),
}
"""The registry: a new embedder is one module with `make` and one line here."""


def prefixes() -> str:
    return ", ".join(repr(f"{prefix}:") for prefix in EMBEDDERS)


class EmbedderConfig(Protocol):
    """The part of the config an embedder is built from (Config satisfies it)."""

    @property
    def where(self) -> str: ...

    @property
    def embedding(self) -> str: ...

    @property
    def embedder_settings(self) -> EmbedderSettings: ...


def check_spec(embedding: str, has_id: bool) -> tuple[str, str] | None:
    """(config key, problem) when `embedding` (with or without `embedding_id`) names no embedder, else None."""
    kind = embedding.partition(":")[0]
    if kind not in EMBEDDERS or ":" not in embedding:
        return "embedding", f"must start with {prefixes()}, got {embedding!r}"
    if EMBEDDERS[kind].needs_id and not has_id:
        return "embedding_id", f"is required with a {kind}: embedder, so the fingerprint can name it"
    return None


def make_embedder(config: EmbedderConfig) -> Embedder:
    """The embedder the config names; nothing is imported or loaded until its first embed()."""
    settings = config.embedder_settings
    problem = check_spec(config.embedding, settings.id is not None)
    if problem is not None:
        raise ConfigError(f"{config.where} key {problem[0]!r}: {problem[1]}")
    kind, _, rest = config.embedding.partition(":")
    module = cast(EmbedderModule, import_module(f"{__name__}.{EMBEDDERS[kind].module}"))
    return module.make(rest, settings)
