"""The reports' input rebuilt from a `--rag-json` results file, for renderers that run after the gate.

The pull-request comment is rendered by `ragretrieval comment` in a later workflow step, from
the results the gate wrote: the metrics with their comparison against the baseline, latency,
skipped retrievers (`unavailable`) and the gate's failures (`failures`). Questions and chunk
texts are not in the file, so sections that need them are not rendered from it.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..baseline.format import Baseline
from ..errors import BaselineError
from ..gate.checks import ADJUSTED, Comparison
from ..paths import display
from ..scoring.metrics import metric_order
from .model import Failure, ReportInput, RetrieverView

RERUN = "rerun the gate with --rag-json"


@dataclass(frozen=True)
class PairComparison:
    """One comparison between two configurations on one metric (`comparisons` in the results).

    Everything but `a`, `b` and `metric` is optional, so a results file with more or fewer
    statistics still renders.
    """

    a: str
    b: str
    metric: str
    delta: float | None = None
    p_value: float | None = None
    ci95: tuple[float, float] | None = None
    wins: int | None = None
    ties: int | None = None
    losses: int | None = None


def _fail(results: Baseline, problem: str) -> BaselineError:
    return BaselineError(f"{display(results.path)}: {problem}; {RERUN}")


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _ci(raw: Any) -> tuple[float, float] | None:
    if isinstance(raw, list) and len(raw) == 2 and all(_number(x) is not None for x in raw):
        return float(raw[0]), float(raw[1])
    return None


def _comparison(raw: Any) -> Comparison | None:
    value = _number(raw.get("value")) if isinstance(raw, Mapping) else None
    if value is None:
        return None
    baseline, delta, p_value, raw_p, mde, value_all = (
        _number(raw.get(key)) for key in ("baseline", "delta", "p_value", "p_unadjusted", "mde", "value_all"))
    return Comparison(baseline, value, delta, p_value, _ci(raw.get("ci95")), raw_p, _count(raw.get("family")) or 0,
                      _count(raw.get("questions")) or 0, raw.get("whole") is not False, value_all, mde,
                      _adjustment(raw.get("adjustment"), raw.get("family")))


def _adjustment(raw: Any, family: Any) -> str:
    """How a comparison's p was adjusted: results written before max-T say nothing, and meant Holm."""
    if raw in ADJUSTED:
        return str(raw)
    return "holm" if _count(family) else ""


def _view(results: Baseline, name: str) -> RetrieverView:
    entry = results.document["retrievers"][name]
    latency = entry.get("latency_ms")
    if not isinstance(latency, Mapping) or _number(latency.get("p50")) is None or _number(latency.get("p95")) is None:
        raise _fail(results, f"retrievers.{name}.latency_ms is missing: this is a baseline, not --rag-json results")
    kind = results.fingerprint.get("retrievers", {}).get(name, {}).get("type", "")
    no_answer = entry.get("no_answer") if isinstance(entry.get("no_answer"), Mapping) else {}
    raw = entry.get("comparison") if isinstance(entry.get("comparison"), Mapping) else {}
    comparisons = {label: found for label, value in raw.items() if (found := _comparison(value)) is not None}
    recorded = results.retrievers[name]
    return RetrieverView(
        name, str(kind), "ran",
        metrics=dict(recorded.metrics),
        tags={tag: dict(values) for tag, values in recorded.tags.items()},
        comparisons=comparisons,
        no_answer_total=_count(no_answer.get("questions")) or 0,
        no_answer_empty=_count(no_answer.get("empty")) or 0,
        latency_p50=float(latency["p50"]),
        latency_p95=float(latency["p95"]),
        diagnostics=_numbers(entry.get("diagnostics")),
    )


def _count(raw: Any) -> int | None:
    number = _number(raw)
    return None if number is None else int(number)


def _numbers(raw: Any) -> dict[str, float]:
    if not isinstance(raw, Mapping):
        return {}
    return {str(key): number for key, value in raw.items() if (number := _number(value)) is not None}


def failures(results: Baseline) -> tuple[Failure, ...] | None:
    """The gate's failed items, or None for a results file written before they were recorded."""
    raw = results.document.get("failures")
    if raw is None:
        return None
    try:
        return tuple(
            Failure(str(f["item"]), str(f["retriever"]), str(f["metric"]),
                    "\n".join([str(f["summary"]), *map(str, f.get("details", ()))]))
            for f in raw
        )
    except (KeyError, TypeError, AttributeError):
        raise _fail(results, "'failures' must list objects with item, retriever, metric and summary") from None


def report_input(results: Baseline) -> ReportInput:
    """What the Markdown sections need, from the results alone: no questions, chunks or definitions."""
    views = [_view(results, name) for name in sorted(results.retrievers)]
    views += [RetrieverView(name, str(results.fingerprint.get("retrievers", {}).get(name, {}).get("type", "")),
                            "skipped", reason) for name, reason in sorted(results.unavailable.items())]
    metrics = sorted({label for r in results.retrievers.values() for label in r.metrics}, key=metric_order)
    since = results.document.get("since_baseline")
    lines = since.get("lines") if isinstance(since, Mapping) else None
    significance = results.document.get("significance")
    significance = significance if isinstance(significance, Mapping) else {}
    alpha = _number(significance.get("alpha"))
    return ReportInput(
        k=results.k, metrics=tuple(metrics), definitions={}, questions=(), chunks={}, retrievers=tuple(views),
        embedder="", rerankers=(), database="", baseline_path="", comparable=True,
        failures=failures(results) or (),
        since=tuple(str(line) for line in lines) if isinstance(lines, list) else (),
        significance=str(significance.get("method", "none")), family=_count(significance.get("family")) or 0,
        adjustment=str(significance.get("adjustment", "holm")),
        alpha=alpha if alpha is not None else 0.05,
    )


def comparisons(results: Baseline) -> tuple[tuple[PairComparison, ...], int]:
    """(comparisons between configurations, entries left out because they lack a, b or metric)."""
    raw = results.document.get("comparisons")
    if raw is None:
        return (), 0
    if not isinstance(raw, list):
        return (), 1
    found: list[PairComparison] = []
    for item in raw:
        if not isinstance(item, Mapping) or not all(isinstance(item.get(key), str) for key in ("a", "b", "metric")):
            continue
        wins, ties, losses = (_count(item.get(key)) for key in ("wins", "ties", "losses"))
        found.append(PairComparison(
            item["a"], item["b"], item["metric"], _number(item.get("delta")), _number(item.get("p_value")),
            _ci(item.get("ci95")), wins, ties, losses,
        ))
    return tuple(found), len(raw) - len(found)
