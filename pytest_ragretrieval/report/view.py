"""The reports' input as a view of the run record: the one place a `ReportInput` is built, for the live
run (the gate's record, the eval set, the run's descriptions) and for a results file (`ragretrieval
comment`: no questions, chunks or descriptions, so the sections that need them are not rendered)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from ..core.errors import BaselineError
from ..evalset.records import Chunk, Question
from ..files.paths import display
from ..record.explain import Explanation
from ..record.report import ChunkView, Described, Failure, QuestionView, ReportInput, RetrieverView
from ..record.types import Record, Retriever
from ..scoring.metrics import definition, metric_order

RERUN = "rerun the gate with --rag-json"
UNDESCRIBED = Described()
"""A results file's descriptions: it holds none."""


def view(record: Record, questions: Sequence[Question] = (), chunks: Sequence[Chunk] = (),
         described: Described = UNDESCRIBED,
         explanations: Mapping[str, Mapping[str, Explanation]] | None = None) -> ReportInput:
    """Everything the terminal, Markdown, HTML and GitHub reports show (`explanations`: the misses
    `labels/explain.py` explained, for the HTML's per-question view). A record written before it held
    its settings (no `settings`) lists its retrievers by name, shows every metric it holds and says
    nothing of definitions, the baseline's path or the minimum eval set."""
    settings = record.settings or None
    significance = record.significance or None
    since = record.since_baseline or None
    unavailable, errors = record.unavailable or {}, record.errors or {}
    order = settings.retrievers if settings is not None else (
        *sorted(record.retrievers), *sorted(unavailable), *sorted(errors))
    shown = settings.shown if settings is not None else tuple(
        sorted({label for r in record.retrievers.values() for label in r.metrics}, key=metric_order))
    run_notes = [f"{name}: {note}" for name in order if name in record.retrievers
                 for note in record.retrievers[name].notes or ()]
    pair_notes = record.pair_notes or ()
    return ReportInput(
        k=record.k,
        metrics=shown,
        definitions={label: definition(label) for label in shown}
        if settings is not None else {},
        questions=tuple(QuestionView(q.id, q.query, q.tags, dict(q.relevance)) for q in questions),
        chunks={c.id: ChunkView(c.id, c.text, c.doc) for c in chunks},
        retrievers=tuple(_retriever(record, name, unavailable, errors) for name in order),
        embedder=described.embedder,
        rerankers=described.rerankers,
        unavailable_rerankers=described.unavailable_rerankers,
        database=described.database,
        baseline_path=settings.baseline if settings is not None else "",
        comparable=record.comparable if isinstance(record.comparable, bool) else True,
        notes=(*(record.notes or ()), *run_notes, *pair_notes),
        failures=tuple(Failure(f.item, f.retriever, f.metric, "\n".join([f.summary, *f.details]))
                       for f in record.failures or ()),
        pairs=record.comparisons or (),
        pair_method=str(settings.pair_method) if settings is not None else "randomization",
        alpha=settings.alpha if settings is not None else significance.alpha if significance is not None else 0.05,
        min_questions=settings.min_questions if settings is not None else 20,
        since=since.lines if since is not None else (),
        significance=str(significance.method) if significance is not None else "none",
        family=significance.family if significance is not None else 0,
        adjustment=str(significance.adjustment) if significance is not None else "none",
        gated=settings.gated if settings is not None else (),
        pair_notes=pair_notes,
        since_comparable=since.comparable if since is not None else None,
        questions_changed=since is not None and bool(since.questions),
        info=_reused(record),
        language=str(settings.language) if settings is not None else "both",
        explanations=explanations or {},
        outcomes=record.outcomes or (),
    )


def _reused(record: Record) -> tuple[str, ...]:
    """The notes (not warnings) on rankings reused from a cached run: every input unchanged, or every input
    but the questions (those unchanged reused); nothing to act on."""
    names = record.reused or ()
    partly = record.reused_questions or {}
    found = [f"rankings reused for {', '.join(names)}: every input unchanged since the cached run; latency as "
             "measured then (--rag-no-reuse measures it again)"] if names else []
    found.extend(f"rankings of {counts.reused} of {counts.reused + counts.searched} questions reused for {name}: "
                 f"every other input unchanged, {counts.searched} searched; their latency as measured then"
                 for name, counts in partly.items())
    return tuple(found)


def results_view(path: Path, record: Record) -> ReportInput:
    """The view of a `--rag-json` results file; a baseline (no latency) is refused: it holds no run."""
    for name, entry in record.retrievers.items():
        if not entry.latency_ms:
            raise BaselineError(f"{display(path)}: retrievers.{name}.latency_ms is missing: this is a baseline, "
                                f"not --rag-json results; {RERUN}")
    return view(record)


def _kind(record: Record, name: str) -> str:
    entries = record.fingerprint.get("retrievers", {})
    found = entries.get(name, {}) if isinstance(entries, dict) else {}
    kind = found.get("type", "") if isinstance(found, dict) else ""
    return kind if isinstance(kind, str) else ""


def _retriever(record: Record, name: str, unavailable: dict[str, str], errors: dict[str, str]) -> RetrieverView:
    kind = _kind(record, name)
    if name in unavailable:
        return RetrieverView(name, kind, "unavailable", unavailable[name])
    if name in errors:
        return RetrieverView(name, kind, "error", errors[name])
    return _ran(name, kind, record.retrievers[name])


def _ran(name: str, kind: str, entry: Retriever) -> RetrieverView:
    no_answer = entry.no_answer or None
    latency = entry.latency_ms or None
    recorded = entry.recorded or None
    return RetrieverView(
        name, kind, "ran",
        metrics=dict(entry.metrics),
        tags={tag: dict(values) for tag, values in entry.tags.items()},
        rankings={qid: q.ranking for qid, q in entry.questions.items()},
        values={qid: dict(q.metrics) for qid, q in entry.questions.items()},
        comparisons=dict(entry.comparison or {}),
        baseline_tags={tag: dict(values) for tag, values in recorded.tags.items()} if recorded else {},
        baseline_rankings={qid: q.ranking for qid, q in recorded.questions.items()} if recorded else {},
        baseline_values={qid: dict(q.metrics) for qid, q in recorded.questions.items()} if recorded else {},
        no_answer_total=(no_answer.questions or 0) if no_answer is not None else 0,
        no_answer_empty=(no_answer.empty or 0) if no_answer is not None else 0,
        latency_p50=latency.p50 if latency is not None else 0.0,
        latency_p95=latency.p95 if latency is not None else 0.0,
        diagnostics=dict(entry.diagnostics or {}),
        scored=len(entry.questions),
        answerable_empty=(no_answer.answerable_empty or 0) if no_answer is not None else 0,
        wrongly_empty=entry.wrongly_empty or (),
        notes=entry.notes or (),
        entry=entry,
    )
