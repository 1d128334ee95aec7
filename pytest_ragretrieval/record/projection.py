"""The baseline as a projection of the run record: every field of `Record` and of its `Retriever` is
the baseline's unless named here as run-only. A field added to either type is then written to the
baseline and published in its schema, or listed below: never dropped by one and kept by another."""
from __future__ import annotations

from collections.abc import Collection
from typing import Any

from msgspec import UNSET, Struct, structs

from .types import Record, Retriever

RUN_ONLY = ("failures", "comparisons", "since_baseline", "labels_to_review", "significance", "phases", "reused",
            "reused_questions", "errors", "comparable", "notes", "pair_notes", "settings", "tune",
            "outcomes")
"""Top-level fields `--rag-json` adds to the baseline's: what one run found, measured or judged."""
RUN_ONLY_PER_RETRIEVER = ("latency_ms", "loads_ms", "diagnostics", "comparison", "comparison_base", "segments",
                          "segments_base", "changes",
                          "wrongly_empty", "notes", "recorded")
"""A retriever's fields `--rag-json` adds to the baseline's entry."""


def baseline_fields(kind: type[Struct], run_only: Collection[str]) -> tuple[str, ...]:
    """The fields of `kind` the baseline holds: all but the run-only ones, in the type's order."""
    return tuple(name for name in kind.__struct_fields__ if name not in run_only)


def _kept(value: Struct, run_only: Collection[str]) -> dict[str, Any]:
    return {name: getattr(value, name) for name in baseline_fields(type(value), run_only)}


def baseline_entry(entry: Retriever, labels: Collection[str] | None = None) -> Retriever:
    """The baseline's part of an entry; with `labels`, holding only those metric labels at every level
    (its bar included)."""
    kept = _kept(entry, RUN_ONLY_PER_RETRIEVER)
    if labels is not None:
        bar = {label: values for label, values in (entry.bar or {}).items() if label in labels}
        kept.update(
            metrics={k: v for k, v in entry.metrics.items() if k in labels},
            tags={t: {k: v for k, v in m.items() if k in labels} for t, m in entry.tags.items()},
            questions={qid: structs.replace(q, metrics={k: v for k, v in q.metrics.items() if k in labels})
                       for qid, q in entry.questions.items()},
            bar=bar or UNSET,
        )
    return type(entry)(**kept)


def baseline_of(record: Record, labels: Collection[str] | None = None) -> Record:
    """The baseline's part of a record: its run-only fields left out, each entry's too (`baseline_entry`)."""
    kept = _kept(record, RUN_ONLY)
    kept["retrievers"] = {name: baseline_entry(entry, labels) for name, entry in record.retrievers.items()}
    return type(record)(**kept)
