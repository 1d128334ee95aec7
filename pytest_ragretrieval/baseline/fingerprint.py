"""What makes two runs comparable, recorded with every baseline (the tutorial's pitfalls 3 and 4).

Digests are over canonical content, not file bytes: reordering lines or reformatting JSON does
not change a digest, changing a text, an id, a grade or a tag does.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..config.settings import Config
from ..evalset.records import Chunk, Question
from ..retrievers.tokens import describe
from ..scoring.metrics import METRICS_VERSION

GLOBAL_FIELDS = ("chunks_sha256", "evalset_sha256", "k", "metrics_version", "tokenizer")


def _digest(records: list[Any]) -> str:
    text = json.dumps(records, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def chunks_digest(chunks: Sequence[Chunk]) -> str:
    rows = [[c.id, c.text, c.doc, dict(c.metadata)] for c in sorted(chunks, key=lambda c: c.id)]
    return _digest(rows)


def evalset_digest(questions: Sequence[Question]) -> str:
    rows = [
        [q.id, q.query, dict(sorted(q.relevance.items())), sorted(q.tags)]
        for q in sorted(questions, key=lambda q: q.id)
    ]
    return _digest(rows)


def global_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Fields, other than the retrievers', whose recorded value differs from this run's."""
    return [name for name in GLOBAL_FIELDS if old.get(name) != new.get(name)]


def changed_paths(old: Any, new: Any, prefix: str = "") -> list[str]:
    """Dotted paths of the values that differ between two nested mappings, in sorted order."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        paths: list[str] = []
        for key in sorted(set(old) | set(new)):
            path = f"{prefix}.{key}" if prefix else str(key)
            if key not in old or key not in new:
                paths.append(path)
            else:
                paths.extend(changed_paths(old[key], new[key], path))
        return paths
    return [] if old == new else [prefix]


UNRECORDED = "its fingerprint (none recorded)"
"""What `retriever_changes` reports for an entry recorded without a fingerprint: nothing proves it comparable."""


def retriever_changes(old: Mapping[str, Any], new: Mapping[str, Any], name: str) -> list[str]:
    """What changed in a retriever's recorded fingerprint (its parameters, embedder, sources).

    A retriever the old fingerprint does not describe counts as changed ([UNRECORDED]): values
    recorded without a fingerprint cannot be shown to come from today's set-up.
    """
    before = old.get("retrievers", {})
    if not isinstance(before, Mapping) or name not in before:
        return [UNRECORDED]
    return changed_paths(before[name], new.get("retrievers", {}).get(name, {}))


def fingerprint(
    config: Config, chunks: Sequence[Chunk], questions: Sequence[Question], setup: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """This run's fingerprint: the global fields and one entry per configured retriever.

    `setup` is what each retriever's type adds (the embedder, the index), as the runner found it.
    """
    return {
        "chunks_sha256": chunks_digest(chunks),
        "evalset_sha256": evalset_digest(questions),
        "k": config.k,
        "metrics_version": METRICS_VERSION,
        "tokenizer": describe(config.tokenizer),
        "retrievers": {spec.name: retriever_fingerprint(config, spec.name, setup) for spec in config.retrievers},
    }


def retriever_fingerprint(config: Config, name: str, setup: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Own parameters, what the type adds (embedder, index) and, under `reads`, every source's."""
    spec = config.retriever(name)
    found = {**spec.fingerprint, **setup[name]}
    if spec.sources:
        found["reads"] = {source: retriever_fingerprint(config, source, setup) for source in spec.sources}
    return found
