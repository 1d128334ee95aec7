"""Building the reports' input from a finished session: what ran, what it scored, what changed."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .loading import display
from .metrics import DEFINITIONS
from .report import latency_summary
from .reportdata import ChunkView, Failure, QuestionView, ReportInput, RetrieverView

if TYPE_CHECKING:
    from .session import RagSession


def report_input(session: RagSession) -> ReportInput:
    """Everything the Markdown, HTML and GitHub reports show, from this session's runs."""
    config = session.config
    views = tuple(_view(session, spec.name, spec.type) for spec in config.retrievers if spec.name in session.runs)
    rerankers = tuple(spec.params["model"] for spec in session.config.retrievers if spec.type == "rerank")
    failures = tuple(
        Failure(f"rag::{key.retriever}::{key.nodeid_name}", key.retriever, key.name, "\n".join(outcome.lines))
        for key, outcome in sorted(session.failures.items())
    )
    return ReportInput(
        k=session.config.k,
        metrics=tuple(spec.label for spec in session.config.metrics),
        definitions={spec.label: DEFINITIONS[spec.name] for spec in session.config.metrics},
        questions=tuple(QuestionView(q.id, q.query, q.tags, dict(q.relevance)) for q in session.questions),
        chunks={c.id: ChunkView(c.id, c.text, c.doc) for c in session.chunks},
        retrievers=views,
        embedder=session.resources.embedder_description,
        rerankers=rerankers,
        database=session.resources.database_description,
        baseline_path=display(session.config.baseline),
        comparable=session.baseline is not None and session.comparable() is None,
        notes=tuple(session.notes()),
        failures=failures,
    )


def _view(session: RagSession, name: str, kind: str) -> RetrieverView:
    run = session.runs[name]
    if run.skipped is not None:
        return RetrieverView(name, kind, "skipped", run.skipped)
    if run.error is not None or run.result is None:
        return RetrieverView(name, kind, "error", str(run.error))
    result = run.result
    recorded = session.recorded(name)
    latency = latency_summary(result)
    comparisons = {label: c for label in result.metrics if (c := session.comparison(name, label)) is not None}
    return RetrieverView(
        name, kind, "ran",
        metrics=dict(result.metrics),
        tags={tag: dict(values) for tag, values in result.tags.items()},
        rankings={q.id: q.ranking for q in result.questions},
        values={q.id: dict(q.values) for q in result.questions},
        comparisons=comparisons,
        baseline_tags=dict(recorded.tags) if recorded else {},
        baseline_rankings={qid: q.ranking for qid, q in recorded.questions.items()} if recorded else {},
        baseline_values={qid: dict(q.metrics) for qid, q in recorded.questions.items()} if recorded else {},
        no_answer_total=result.no_answer_total,
        no_answer_empty=result.no_answer_empty,
        latency_p50=latency["p50"],
        latency_p95=latency["p95"],
        diagnostics=dict(run.diagnostics),
    )
