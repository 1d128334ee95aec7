"""Recording a session: the run record (`--rag-json` writes it) and the baseline update."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from msgspec import UNSET, structs

from .. import __version__
from ..baseline.bar import kept_bar
from ..baseline.format import Baseline, retriever_record
from ..baseline.update import UpdatePlan, plan_update
from ..config.settings import Config
from ..jsontext import escaped
from ..record.types import (
    FORMAT_VERSION,
    Adjustment,
    Failure,
    LabelToReview,
    Latency,
    Method,
    Record,
    Significance,
    SinceBaseline,
)
from ..scoring.evaluate import Run, latency_summary
from ..values import EPSILON
from .checks import Outcome, per_question
from .items import ItemKey
from .judge import Judge


def run_record(
    config: Config,
    fingerprint: Mapping[str, Any],
    runs: Mapping[str, Run],
    judge: Judge,
    failures: Mapping[ItemKey, Outcome],
    phases: Mapping[str, float] | None = None,
) -> Record:
    """The run as `--rag-json` writes it: the baseline's part plus latency, diagnostics, the comparison
    with the baseline and what changed for each retriever; at the top level the retrievers skipped here,
    the gate's failed items, the comparisons between configurations, what changed since the baseline,
    the labels to review, in significance mode how the p-values were adjusted, and the phases' seconds."""
    entries = {}
    since = judge.since()
    unavailable = {name: run.skipped for name, run in runs.items() if run.skipped is not None}
    for name, run in runs.items():
        if run.result is None:
            continue
        entry = retriever_record(run.result)
        comparisons = {
            label: comparison for label in run.result.metrics
            if (comparison := judge.comparison(name, label)) is not None
        }
        latency = latency_summary(run.result)
        entries[name] = structs.replace(
            entry, latency_ms=Latency(latency["p50"], latency["p95"]),
            diagnostics=dict(run.diagnostics) if run.diagnostics else UNSET,
            comparison=comparisons or UNSET,
            changes=tuple(since.of(name)) if since is not None and since.of(name) else UNSET,
        )
    edited = judge.edited_gold()
    return Record(
        format_version=FORMAT_VERSION, plugin_version=__version__, k=config.k, fingerprint=dict(fingerprint),
        retrievers=entries, unavailable=unavailable or UNSET,
        failures=tuple(
            Failure(key.nodeid, key.retriever, key.nodeid_name, escaped(outcome.summary),
                    tuple(escaped(line) for line in outcome.details))
            for key, outcome in sorted(failures.items())),
        comparisons=judge.pairs().comparisons,
        since_baseline=UNSET if since is None else SinceBaseline(
            since.comparable, tuple(str(c) for c in since.yardstick), tuple(since.system()),
            tuple(since.questions.lines()), tuple(since.lines())),
        labels_to_review=tuple(LabelToReview(e.chunk, tuple(e.questions)) for e in edited) or UNSET,
        significance=UNSET if config.significance == "none" else Significance(
            Method(config.significance), config.alpha, len(judge.family()), Adjustment(judge.adjustment())),
        phases=dict(phases) if phases is not None else UNSET,
    )


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
