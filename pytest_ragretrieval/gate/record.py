"""Recording a session: the `--rag-json` results document and the baseline update."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..baseline.bar import kept_bar
from ..baseline.format import Baseline, document, retriever_entry
from ..baseline.update import UpdatePlan, plan_update
from ..config.settings import Config
from ..jsontext import escaped
from ..scoring.evaluate import Run, latency_summary
from ..values import EPSILON
from .checks import Comparison, Outcome, per_question
from .items import ItemKey
from .judge import Judge


def results_document(
    config: Config,
    fingerprint: Mapping[str, Any],
    runs: Mapping[str, Run],
    judge: Judge,
    failures: Mapping[ItemKey, Outcome],
) -> dict[str, Any]:
    """The baseline's format plus latency, diagnostics, the comparison with the baseline and, at the
    top level, the retrievers skipped here (`unavailable`), the gate's failed items (`failures`), so
    that `ragretrieval comment` can say what failed without judging again, and `comparisons` between
    configurations ({a, b, metric, delta, p_value, ci95, wins, ties, losses}), what changed since the
    baseline (`since_baseline`), the gold chunks whose text was edited since and the questions they are
    gold of (`labels_to_review`, when any) and, in significance mode, how the p-values were adjusted."""
    entries = {}
    since = judge.since()
    unavailable = {name: run.skipped for name, run in runs.items() if run.skipped is not None}
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
            entry["comparison"] = {label: comparison_entry(c) for label, c in comparisons.items()}
        if since is not None and since.of(name):
            entry["changes"] = since.of(name)
        entries[name] = entry
    doc = document(config.k, fingerprint, entries, unavailable)
    doc["failures"] = [
        {"item": key.nodeid, "retriever": key.retriever, "metric": key.nodeid_name,
         "summary": escaped(outcome.summary), "details": [escaped(line) for line in outcome.details]}
        for key, outcome in sorted(failures.items())
    ]
    doc["comparisons"] = [c.as_dict() for c in judge.pairs().comparisons]
    if since is not None:
        doc["since_baseline"] = {
            "comparable": since.comparable, "yardstick": [str(c) for c in since.yardstick],
            "changes": since.system(), "questions": since.questions.lines(), "lines": since.lines(),
        }
    edited = judge.edited_gold()
    if edited:
        doc["labels_to_review"] = [{"chunk": e.chunk, "questions": list(e.questions)} for e in edited]
    if config.significance != "none":
        doc["significance"] = {"method": config.significance, "alpha": config.alpha,
                               "adjustment": judge.adjustment(), "family": len(judge.family())}
    return doc


def comparison_entry(c: Comparison) -> dict[str, Any]:
    """One retriever x metric against the baseline, as `--rag-json` writes it: `p_value` is the p that
    decided (adjusted by `adjustment` over `family` items), `p_unadjusted` the test's own, `mde` the minimum
    detectable effect, `questions` how many comparable questions the means are over."""
    return {
        "baseline": c.baseline, "value": c.value, "delta": c.delta, "p_value": c.p_value,
        "p_unadjusted": c.p_unadjusted, "family": c.family, "adjustment": c.adjustment or None,
        "ci95": list(c.ci95) if c.ci95 is not None else None,
        "questions": c.questions, "whole": c.whole, "value_all": c.value_all, "mde": c.mde,
    }


def baseline_update(
    config: Config,
    baseline: Baseline | None,
    fingerprint: Mapping[str, Any],
    runs: Mapping[str, Run],
    selected: Sequence[ItemKey],
    judge: Judge,
) -> UpdatePlan:
    """The update the selected items ask for, with the bar each entry keeps, and the refusals (values
    that would lower a bar without --rag-allow-regression) first among its lines."""
    chosen: dict[str, set[str]] = {}
    refused: dict[str, list[str]] = {}
    for key in selected:
        if key.kind != "metric":
            continue
        chosen.setdefault(key.retriever, set()).add(key.name)
        reason = judge.refused(key)
        if reason is not None:
            refused.setdefault(key.retriever, []).append(f"rag: {reason}")
    bars = {name: next_bar(judge, name) for name in chosen if name not in refused}
    plan = plan_update(config, baseline, fingerprint, runs, chosen, refused, bars)
    lines = [line for reasons in refused.values() for line in reasons] + plan.lines
    return UpdatePlan(plan.document, lines, plan.failed)


def next_bar(judge: Judge, name: str) -> dict[str, dict[str, float]]:
    """The bar an update writes for `name`, where it differs from the values it records: per metric, the
    old bar kept where the values pass against it without rising by more than the tolerance; nothing (the
    bar becomes the new values) where they rose by more, where they lower it (with --rag-allow-regression),
    or where the baseline holds nothing comparable (docs/verdicts.md, "The bar")."""
    recorded, found, run = judge.recorded(name), judge.since(), judge.runs.get(name)
    if recorded is None or found is None or run is None or run.result is None:
        return {}
    values = per_question(run.result)
    bars: dict[str, dict[str, float]] = {}
    for spec in judge.config.metrics:
        comparison = judge.comparison(name, spec.label)
        if comparison is None or comparison.delta is None or spec.label not in recorded.metrics:
            continue
        if comparison.delta > judge.config.tolerance.for_metric(spec) + EPSILON:
            continue
        if not judge.metric_verdict(name, spec.label).passed:
            continue
        new = {qid: v[spec.label] for qid, v in values.items() if spec.label in v}
        kept = kept_bar(recorded.bar_values(spec.label), new, found.questions.comparable)
        if kept:
            bars[spec.label] = kept
    return bars
