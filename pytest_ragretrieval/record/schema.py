"""The JSON Schemas of the two files the record is written as, generated from its types: `--rag-json`
results (the whole record) and the baseline (the record less what only a run adds)."""
from __future__ import annotations

import msgspec

from .types import Record

RUN_ONLY = ("failures", "comparisons", "since_baseline", "labels_to_review", "significance", "phases", "errors",
            "comparable", "notes", "pair_notes", "settings")
"""Top-level fields `--rag-json` adds to the baseline's."""
RUN_ONLY_PER_RETRIEVER = ("latency_ms", "diagnostics", "comparison", "changes", "wrongly_empty", "notes", "recorded")
"""A retriever's fields `--rag-json` adds to the baseline's entry."""
KINDS = ("results", "baseline")


def schema(kind: str) -> dict[str, object]:
    """The JSON Schema (draft 2020-12) of a results (`kind="results"`) or a baseline file."""
    found: dict[str, object] = {"$schema": "https://json-schema.org/draft/2020-12/schema",
                                **msgspec.json.schema(Record)}
    definitions = found["$defs"]
    assert isinstance(definitions, dict)
    top, entry = definitions["Record"], definitions["Retriever"]
    title = "pytest-ragretrieval --rag-json results" if kind == "results" else "pytest-ragretrieval baseline"
    top["title"] = title
    if kind == "baseline":
        for name in RUN_ONLY:
            del top["properties"][name]
        for name in RUN_ONLY_PER_RETRIEVER:
            del entry["properties"][name]
        for name in ("Comparison", "PairComparison", "Failure", "Latency", "SinceBaseline", "LabelToReview",
                     "Significance", "Adjustment", "Method", "Counterpart", "Settings", "Language"):
            definitions.pop(name, None)
    return found
