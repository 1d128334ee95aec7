"""Older files in today's shape, each step a named function applied to the JSON document before the
types read it: what a file of an older format or an older plugin meant, said once."""
from __future__ import annotations

from collections.abc import Mapping


def upgraded(doc: dict[str, object], version: int) -> dict[str, object]:
    """`doc` (a copy where a step changes it) as today's types read it."""
    fingerprint = doc.get("fingerprint")
    if version == 1 and isinstance(fingerprint, dict):
        doc = {**doc, "fingerprint": fingerprint_1(fingerprint)}
    return comparisons_before_maxt(doc)


def fingerprint_1(fingerprint: Mapping[str, object]) -> dict[str, object]:
    """A format-1 fingerprint in format 2's shape. Format 1 recorded one digest for the corpus and one
    for the eval set, so neither is itemized; its grading rules are version 1's, the only ones then."""
    found = {key: value for key, value in fingerprint.items() if key in ("tokenizer", "retrievers")}
    found["yardstick"] = {"k": fingerprint.get("k"), "metrics_version": fingerprint.get("metrics_version"),
                          "grading_version": 1}
    found["chunks"] = {"sha256": fingerprint.get("chunks_sha256")}
    found["questions"] = {"sha256": fingerprint.get("evalset_sha256")}
    return found


def comparisons_before_maxt(doc: dict[str, object]) -> dict[str, object]:
    """Results written before max-T name no `adjustment` on a comparison: one adjusted over a family
    (`family` > 0) was Holm's, any other was not adjusted."""
    retrievers = doc.get("retrievers")
    if not isinstance(retrievers, dict) or not any(
            isinstance(entry, dict) and isinstance(entry.get("comparison"), dict)
            and any(isinstance(c, dict) and "adjustment" not in c for c in entry["comparison"].values())
            for entry in retrievers.values()):
        return doc
    entries = dict(retrievers)
    for name, entry in retrievers.items():
        if isinstance(entry, dict) and isinstance(entry.get("comparison"), dict):
            entries[name] = {**entry, "comparison": {
                label: {**c, "adjustment": "holm" if c.get("family") else None}
                if isinstance(c, dict) and "adjustment" not in c else c
                for label, c in entry["comparison"].items()}}
    return {**doc, "retrievers": entries}
