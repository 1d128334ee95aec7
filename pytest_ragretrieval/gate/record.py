"""Recording a session: the run record (`--rag-json` writes it) and the baseline update."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from msgspec import UNSET, UnsetType, structs

from .. import __version__
from ..bar.approved import Approved, next_approved
from ..baseline.exams import BASE, TODAY
from ..baseline.format import Baseline, retriever_record
from ..baseline.update import UpdatePlan, plan_update
from ..config.settings import Config
from ..files.jsontext import escaped
from ..files.paths import display
from ..record.types import (
    FORMAT_VERSION,
    Adjustment,
    Counterpart,
    Failure,
    Finding,
    LabelToReview,
    Language,
    Latency,
    Method,
    Question,
    Record,
    Settings,
    Significance,
    SinceBaseline,
)
from ..scoring.evaluate import Run, latency_summary
from .checks import Outcome
from .items import ItemKey
from .judge import Judge
from .rechunk import rechunk
from .segments import Segments, refusals


def run_record(
    config: Config,
    fingerprint: Mapping[str, Any],
    runs: Mapping[str, Run],
    judge: Judge,
    failures: Mapping[ItemKey, Outcome],
    phases: Mapping[str, float] | None = None,
    segments: Segments | None = None,
) -> Record:
    """The one output of judging, which `--rag-json` writes and every report is a view of: the baseline's
    part plus latency, diagnostics, the comparison with the baseline, what changed, the answerable
    questions answered with nothing, the run's notes and the baseline's counterpart for each retriever;
    at the top level the retrievers skipped here or failed, the gate's failed items, the comparisons
    between configurations, what changed since the baseline, the labels to review, in significance mode
    how the p-values were adjusted, the phases' seconds, the notes and the settings the reports name."""
    entries = {}
    since = judge.since()
    unavailable = {name: run.skipped for name, run in runs.items() if run.skipped is not None}
    errors = {name: str(run.error) for name, run in runs.items()
              if run.skipped is None and (run.error is not None or run.result is None)}
    pairs = judge.pairs()
    for name, run in runs.items():
        if run.result is None:
            continue
        entry = retriever_record(run.result)
        comparisons = {
            label: comparison for label in run.result.metrics
            if (comparison := judge.comparison(name, label)) is not None
        }
        base = {
            label: comparison for label in run.result.metrics
            if (comparison := judge.comparison(name, label, BASE)) is not None
        }
        latency = latency_summary(run.result)
        entries[name] = structs.replace(
            entry, latency_ms=Latency(latency["p50"], latency["p95"]),
            diagnostics=dict(run.diagnostics) if run.diagnostics else UNSET,
            loads_ms={what: round(ms, 3) for what, ms in run.loads_ms.items()} if run.loads_ms else UNSET,
            comparison=comparisons or UNSET, comparison_base=base or UNSET,
            segments=(segments.record(name, TODAY) or UNSET) if segments is not None else UNSET,
            segments_base=(segments.record(name, BASE) or UNSET) if segments is not None else UNSET,
            changes=tuple(since.of(name)) if since is not None and since.of(name) else UNSET,
            wrongly_empty=tuple(run.result.wrongly_empty), notes=tuple(run.notes),
            recorded=_recorded(judge, name),
        )
    edited = judge.edited_gold()
    return Record(
        format_version=FORMAT_VERSION, plugin_version=__version__, k=config.k, fingerprint=dict(fingerprint),
        retrievers=entries, unavailable=unavailable or UNSET,
        failures=tuple(
            Failure(key.nodeid, key.retriever, key.nodeid_name, escaped(outcome.summary),
                    tuple(escaped(line) for line in outcome.details))
            for key, outcome in sorted(failures.items())),
        comparisons=pairs.comparisons,
        since_baseline=UNSET if since is None else SinceBaseline(
            since.comparable, tuple(str(c) for c in since.yardstick), tuple(since.system()),
            tuple(since.questions.lines()), tuple(since.lines())),
        labels_to_review=tuple(LabelToReview(e.chunk, tuple(e.questions)) for e in edited) or UNSET,
        significance=UNSET if config.significance == "none" else Significance(
            Method(config.significance), config.alpha, len(judge.family()), Adjustment(judge.adjustment())),
        phases=dict(phases) if phases is not None else UNSET,
        errors=errors or UNSET,
        comparable=judge.baseline is not None and judge.comparable() is None,
        notes=(*judge.notes(), *(segments.notes() if segments is not None else ())),
        pair_notes=pairs.notes,
        settings=Settings(
            retrievers=tuple(spec.name for spec in config.retrievers if spec.name in runs),
            shown=tuple(spec.label for spec in config.shown if spec in config.metrics or any(
                run.result is not None and spec.label in run.result.metrics for run in runs.values())),
            gated=tuple(spec.label for spec in config.metrics), alpha=config.alpha,
            min_questions=config.min_questions, pair_method=Method(pairs.method), baseline=display(config.baseline),
            language=Language(config.report_language)),
    )


def _recorded(judge: Judge, name: str) -> Counterpart | UnsetType:
    """What the reports compare `name` with: the baseline's tags when the questions are the same and the
    bar is what it recorded, the bar's rankings and values (today's exam) on the comparable questions;
    nothing without a comparable baseline entry."""
    recorded, bar, since = judge.recorded(name), judge.bar(name), judge.since()
    if recorded is None or bar is None or since is None:
        return UNSET
    comparable = since.questions.comparable
    return Counterpart(
        tags={tag: dict(values) for tag, values in recorded.tags.items()}
        if not since.questions.changed and not recorded.approved and not recorded.bar else {},
        questions={qid: Question(q.ranking, dict(q.metrics)) for qid, q in bar.questions.items()
                   if qid in comparable})


def baseline_update(
    config: Config,
    baseline: Baseline | None,
    fingerprint: Mapping[str, Any],
    runs: Mapping[str, Run],
    selected: Sequence[ItemKey],
    judge: Judge,
    segments: Segments | None = None,
) -> UpdatePlan:
    """The update the selected items ask for, with the bar each entry keeps, and the refusals (values
    that would lower a bar, a segment's included, without --rag-allow-regression) first among its lines."""
    chosen: dict[str, set[str]] = {}
    refused: dict[str, list[str]] = {}
    for key in selected:
        if key.kind != "metric":
            continue
        chosen.setdefault(key.retriever, set()).add(key.name)
        reason = judge.refused(key)
        if reason is not None:
            refused.setdefault(key.retriever, []).append(f"rag: {reason}")
    for name, reasons in (refusals(segments, selected) if segments is not None else {}).items():
        refused.setdefault(name, []).extend(reasons)
    bars = {name: approved_of(judge, name, segments) for name in chosen if name not in refused}
    plan = plan_update(config, baseline, fingerprint, runs, chosen, refused, bars)
    lines = [line for reasons in refused.values() for line in reasons] + plan.lines
    return UpdatePlan(plan.record, lines, plan.failed)


def approved_of(judge: Judge, name: str, segments: Segments | None = None) -> Approved:
    """`bar/approved.py`'s rule over what the judge found for `name`: each exam's differences from the bar, the
    tolerances, whether a gated verdict failed (a judged segment's included) and whether a judged segment is below
    its bar, which keeps the approved rankings. Across a chunker change today's rankings replace the approved
    ones (no judged item fell, or the update is refused)."""
    entry, found, run, sides = judge.recorded(name), judge.since(), judge.runs.get(name), judge.sides(name)
    if entry is None or found is None or run is None or run.result is None or not sides:
        return {}, {}
    if rechunk(judge) is not None:  # the approved chunks' places are another chunking's: today's replace them
        return {}, {}
    gated = judge.config.metrics
    deltas: list[dict[str, float]] = []
    inconclusive = False  # an inconclusive item raises nothing: its bar stays for the next change to be judged by
    for side in sides:
        deltas.append({})
        for spec in gated:
            comparison = judge.comparison(name, spec.label, side.exam)
            if comparison is None or comparison.delta is None:
                continue
            deltas[-1][spec.label] = comparison.delta
            inconclusive = inconclusive or judge.exam_verdict(name, spec.label, side).finding == Finding.INCONCLUSIVE
    lowered = any(not judge.metric_verdict(name, spec.label).passed for spec in gated
                  if judge.comparison(name, spec.label) is not None) or (segments is not None and segments.fails(name))
    tolerances = {spec.label: judge.config.tolerance.for_metric(spec) for spec in gated}
    return next_approved(entry, run.result, found.questions.comparable, deltas, tolerances, lowered,
                         may_raise=not inconclusive and (segments is None or not segments.lowered(name)))
