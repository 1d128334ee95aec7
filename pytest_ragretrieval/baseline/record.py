"""Recording a session: the `--rag-json` results document and the baseline update."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..config.settings import Config
from ..gate.items import ItemKey
from ..gate.judge import Judge
from ..paths import display, write_atomic
from ..scoring.evaluate import Run, latency_summary
from .format import Baseline, document, dumps, retriever_entry
from .update import plan_update


def results_document(
    config: Config, fingerprint: Mapping[str, Any], runs: Mapping[str, Run], judge: Judge
) -> dict[str, Any]:
    """The baseline's format plus latency, diagnostics, the comparison with the baseline and, at the
    top level, `comparisons` between configurations ({a, b, metric, delta, p_value, ci95, wins, ties, losses})."""
    entries = {}
    for name, run in runs.items():
        if run.result is None:
            continue
        entry = retriever_entry(run.result)
        entry["latency_ms"] = latency_summary(run.result)
        if run.diagnostics:
            entry["diagnostics"] = dict(run.diagnostics)
        comparisons = {
            label: comparison for label in run.result.metrics
            if (comparison := judge.comparison(name, label)) is not None
        }
        if comparisons:
            entry["comparison"] = {
                label: {
                    "baseline": c.baseline, "value": c.value, "delta": c.delta,
                    "p_value": c.p_value, "ci95": list(c.ci95) if c.ci95 is not None else None,
                }
                for label, c in comparisons.items()
            }
        entries[name] = entry
    doc = document(config.k, fingerprint, entries)
    doc["comparisons"] = [c.as_dict() for c in judge.pairs().comparisons]
    return doc


def update_baseline(
    config: Config,
    baseline: Baseline | None,
    fingerprint: Mapping[str, Any],
    runs: Mapping[str, Run],
    selected: Sequence[ItemKey],
    judge: Judge,
) -> tuple[list[str], Path | None]:
    """Plan the update from the selected items, write it atomically: (lines that explain it, path written)."""
    chosen: dict[str, set[str]] = {}
    refused: list[str] = []
    for key in selected:
        if key.kind != "metric":
            continue
        chosen.setdefault(key.retriever, set())
        reason = judge.refused(key)
        if reason is None:
            chosen[key.retriever].add(key.name)
        else:
            refused.append(f"rag: {reason}")
    plan = plan_update(config, baseline, fingerprint, runs, chosen)
    lines = refused + plan.lines
    if plan.document is None:
        return lines, None
    text = dumps(plan.document)
    if config.baseline.exists() and config.baseline.read_text(encoding="utf-8") == text:
        return [*lines, f"rag: {display(config.baseline)} is already up to date"], None
    write_atomic(config.baseline, text)
    return lines, config.baseline
