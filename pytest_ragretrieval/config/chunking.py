"""`[chunker]` and `[chunkings.NAME]`: the chunkers a config names, checked key by key (documents mode)."""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace

from ..core.errors import ConfigError
from ..evalset.chunkers import TIMEOUT as CHUNKER_TIMEOUT
from ..evalset.chunkers import TOKENIZERS as CHUNK_TOKENIZERS
from ..evalset.chunkers import TYPES as CHUNKER_TYPES
from ..evalset.chunkers import UNITS as CHUNK_UNITS
from ..evalset.chunkers import Chunker
from ..evalset.tokenizers import NAMES as EMBEDDER_TOKENIZERS
from ..evalset.tokenizers import SMALLEST, of_embedding
from ..files.tables import Table
from ..retrievers import RetrieverSpec


def chunker(table: Table, embedding: str) -> Chunker | None:
    """`[chunker]`: needed by `documents`, and only there; `tokenizer = "embedder"` is `embedding`'s."""
    if not table.has("chunker"):
        if table.has("documents"):
            raise table.error("chunker", "documents need a chunker; add [tool.ragretrieval.chunker] with "
                              "type = \"tokens\" (or sentences, markdown, python)")
        return None
    if not table.has("documents"):
        raise table.error("chunker", "cuts documents, and this config names none; add documents = \"PATH\" "
                          "or remove the chunker")
    value = table.raw("chunker")
    if not isinstance(value, dict):
        raise table.error("chunker", "must be a table: [tool.ragretrieval.chunker] with type = \"tokens\"")
    return _chunker_table(Table(value, f"{table.where} chunker", table.root), embedding)


def chunkings(table: Table, retrievers: Sequence[RetrieverSpec], label: Callable[[str], str],
              embedding: str) -> dict[str, Chunker]:
    """`[chunkings.NAME]`: more chunkers over the same documents, each read by the retrievers naming it
    (`chunking = "NAME"`); a hybrid or rerank reads sources of its own chunking only."""
    value = table.raw("chunkings", {})
    if not isinstance(value, dict):
        raise table.error("chunkings", "must hold [tool.ragretrieval.chunkings.NAME] tables, each like [chunker]")
    if value and not table.has("documents"):
        raise table.error("chunkings", "cut documents, and this config names none; add documents = \"PATH\" "
                          "or remove the chunkings")
    found: dict[str, Chunker] = {}
    for name, body in value.items():
        if not _CHUNKING.fullmatch(name):
            raise table.error(f"chunkings.{name}", "chunking names may hold letters, digits, '_' and '-' only")
        if not isinstance(body, dict):
            raise table.error(f"chunkings.{name}", "must be a table like [tool.ragretrieval.chunker]")
        found[name] = _chunker_table(Table(body, f"{table.where} chunkings.{name}", table.root), embedding)
    by_name = {spec.name: spec for spec in retrievers}
    for spec in retrievers:
        if spec.chunking and spec.chunking not in found:
            known = ", ".join(sorted(found)) or "none"
            raise ConfigError(f"{label(spec.name)}: chunking {spec.chunking!r} is not a [tool.ragretrieval."
                              f"chunkings.NAME] table (configured: {known}); add it or remove the key")
        for source in spec.sources:
            if by_name[source].chunking != spec.chunking:
                raise ConfigError(
                    f"{label(spec.name)}: source {source!r} reads chunking "
                    f"{by_name[source].chunking or 'default'!r} and {spec.name} reads "
                    f"{spec.chunking or 'default'!r}; a retriever's sources share its chunking: set the same "
                    "chunking on both")
    return found


def _chunker_table(sub: Table, embedding: str) -> Chunker:
    """One chunker table: `[chunker]` or a `[chunkings.NAME]`."""
    kind = (sub.text("type", "python", choices=CHUNKER_TYPES) if sub.has("python")
            else sub.text("type", choices=CHUNKER_TYPES))
    if kind == "python":
        found = Chunker(kind, python=sub.text("python"),
                        timeout=sub.number("timeout", CHUNKER_TIMEOUT, minimum=0.1, maximum=3600.0))
        if ":" not in found.python:
            raise sub.error("python", f"must be \"module:function\", got {found.python!r}")
    elif kind in ("markdown", "recursive"):
        unit, tokenizer = _unit(sub, embedding)
        size = sub.integer("size", 2000 if kind == "markdown" else 1000, minimum=_least(tokenizer))
        overlap = _overlap(sub, size, 0) if kind == "recursive" else 0
        found = Chunker(kind, size=size, overlap=overlap, unit=unit, tokenizer=tokenizer)
    else:
        defaults = (512, 64) if kind == "tokens" else (3, 0)
        size = sub.integer("size", defaults[0], minimum=1)
        overlap = _overlap(sub, size, defaults[1])
        tokenizer = _windows_tokenizer(sub) if kind == "tokens" else "unicode"
        found = Chunker(kind, size=size, overlap=overlap, tokenizer=tokenizer)
        if kind == "sentences" and sub.has("cap"):
            unit, tokenizer = _unit(sub, embedding)
            found = replace(found, cap=sub.integer("cap", minimum=_least(tokenizer)), unit=unit, tokenizer=tokenizer)
    sub.finish()
    return found


def _overlap(sub: Table, size: int, default: int) -> int:
    """`overlap`: below `size`; the default named as such when it is the one in the way."""
    written = sub.has("overlap")
    overlap = sub.integer("overlap", default, minimum=0)
    if overlap >= size:
        got = f"{overlap}" if written else f"the default {overlap}; set overlap below {size}"
        raise sub.error("overlap", f"must be below size ({size}), got {got}")
    return overlap


def _unit(sub: Table, embedding: str) -> tuple[str, str]:
    """`unit` (what a cap counts) and, for `tokens`, `tokenizer`: one of ours, an embedder's named, or
    `embedder`, the configured embedding's own."""
    unit = sub.text("unit", "characters", choices=CHUNK_UNITS)
    if unit == "characters" and sub.has("tokenizer"):
        raise sub.error("tokenizer", "counts tokens, and this chunker's unit is characters; set unit = \"tokens\" "
                        "or remove the tokenizer")
    if unit == "characters":
        return unit, "unicode"
    tokenizer = sub.text("tokenizer", "unicode", choices=(*CHUNK_TOKENIZERS, "embedder", *EMBEDDER_TOKENIZERS))
    if tokenizer != "embedder":
        return unit, tokenizer
    own = of_embedding(embedding)
    if own is None:
        raise sub.error("tokenizer", f"\"embedder\" is the configured embedding's tokenizer, and {embedding!r} "
                        f"carries none available offline; name one ({' or '.join(map(repr, EMBEDDER_TOKENIZERS))}) "
                        "or set tokenizer = \"unicode\"")
    return unit, own


def _windows_tokenizer(sub: Table) -> str:
    """`tokens`' `tokenizer`: ours only, as an embedder's subword at a window's start reads differently alone."""
    if sub.raw("tokenizer", None) in ("embedder", *EMBEDDER_TOKENIZERS):
        raise sub.error("tokenizer", "type = \"tokens\" counts our tokenizers only (unicode, chars, characters); "
                        "for an embedder's tokens set type = \"recursive\" with unit = \"tokens\" and this tokenizer")
    return sub.text("tokenizer", "unicode", choices=CHUNK_TOKENIZERS)


def _least(tokenizer: str) -> int:
    """The smallest cap: one token, or two of an embedder's (a character alone can read as two)."""
    return SMALLEST if tokenizer in EMBEDDER_TOKENIZERS else 1


_CHUNKING = re.compile(r"[A-Za-z0-9_-]+")
