"""The reports' input projected from a run record, for renderers that run after the gate.

The pull-request comment is rendered by `ragretrieval comment` in a later workflow step, from the
record the gate wrote (`--rag-json`): the metrics with their comparison against the baseline, latency,
skipped retrievers (`unavailable`) and the gate's failures (`failures`). Questions and chunk texts are
not in the record, so sections that need them are not rendered from it.
"""
from __future__ import annotations

from pathlib import Path

from msgspec import UnsetType

from ..errors import BaselineError
from ..paths import display
from ..record.report import Failure, ReportInput, RetrieverView
from ..record.types import Adjustment, Record, Retriever
from ..scoring.metrics import metric_order

RERUN = "rerun the gate with --rag-json"


def _kind(record: Record, name: str) -> str:
    entry = record.fingerprint.get("retrievers", {})
    found = entry.get(name, {}) if isinstance(entry, dict) else {}
    kind = found.get("type", "") if isinstance(found, dict) else ""
    return kind if isinstance(kind, str) else ""


def _view(path: Path, record: Record, name: str, entry: Retriever) -> RetrieverView:
    if not entry.latency_ms:
        raise BaselineError(f"{display(path)}: retrievers.{name}.latency_ms is missing: this is a baseline, "
                            f"not --rag-json results; {RERUN}")
    no_answer = entry.no_answer or None
    return RetrieverView(
        name, _kind(record, name), "ran",
        metrics=dict(entry.metrics),
        tags={tag: dict(values) for tag, values in entry.tags.items()},
        comparisons=dict(entry.comparison or {}),
        no_answer_total=(no_answer.questions or 0) if no_answer is not None else 0,
        no_answer_empty=(no_answer.empty or 0) if no_answer is not None else 0,
        latency_p50=entry.latency_ms.p50,
        latency_p95=entry.latency_ms.p95,
        diagnostics=dict(entry.diagnostics or {}),
    )


def failures(record: Record) -> tuple[Failure, ...] | None:
    """The gate's failed items, or None for a results file written before they were recorded."""
    if isinstance(record.failures, UnsetType):
        return None
    return tuple(Failure(f.item, f.retriever, f.metric, "\n".join([f.summary, *f.details])) for f in record.failures)


def report_input(path: Path, record: Record) -> ReportInput:
    """What the Markdown sections need, from the record alone: no questions, chunks or definitions."""
    views = [_view(path, record, name, record.retrievers[name]) for name in sorted(record.retrievers)]
    views += [RetrieverView(name, _kind(record, name), "skipped", reason)
              for name, reason in sorted((record.unavailable or {}).items())]
    metrics = sorted({label for r in record.retrievers.values() for label in r.metrics}, key=metric_order)
    since = record.since_baseline or None
    significance = record.significance or None
    return ReportInput(
        k=record.k, metrics=tuple(metrics), definitions={}, questions=(), chunks={}, retrievers=tuple(views),
        embedder="", rerankers=(), database="", baseline_path="", comparable=True,
        failures=failures(record) or (),
        since=since.lines if since is not None else (),
        significance=str(significance.method) if significance is not None else "none",
        family=significance.family if significance is not None else 0,
        adjustment=str(significance.adjustment if significance is not None else Adjustment.HOLM),
        alpha=significance.alpha if significance is not None else 0.05,
        pairs=record.comparisons or (),
    )
