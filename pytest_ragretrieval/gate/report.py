"""The reports' view of a finished run (`record.report.ReportInput`), built from the judge and the runs:
what ran, what it scored, what changed. The gate produces it; the renderers in `report/` only read it."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..baseline.format import Baseline
from ..baseline.gold import edited_gold, gold_texts, recorded_gold, review_line
from ..config.settings import Config
from ..evalset.records import Chunk, Question
from ..paths import display
from ..record.report import ChunkView, Failure, QuestionView, ReportInput, RetrieverView
from ..scoring.evaluate import Run, latency_summary
from .checks import Outcome
from .items import ItemKey
from .judge import Judge, baseline_questions, comparable_notes, small_set_notes

UNAVAILABLE = "（不可用 / unavailable）"
"""After a reranker's model in the configuration, when its retriever could not run here."""


def build_report(
    config: Config,
    chunks: Sequence[Chunk],
    questions: Sequence[Question],
    runs: Mapping[str, Run],
    judge: Judge,
    failures: Mapping[ItemKey, Outcome],
    embedder: str,
    database: str,
) -> ReportInput:
    """Everything the Markdown, HTML and GitHub reports show; `embedder` and `database` are descriptions."""
    views = tuple(
        _view(spec.name, spec.type, runs[spec.name], judge) for spec in config.retrievers if spec.name in runs
    )
    shown = [spec for spec in config.shown if spec in config.metrics or any(
        run.result is not None and spec.label in run.result.metrics for run in runs.values())]
    pairs = judge.pairs()
    run_notes = [f"{name}: {note}" for name, run in runs.items() for note in run.notes]
    rerankers = tuple(
        found + (UNAVAILABLE if spec.name in runs and runs[spec.name].skipped is not None else "")
        for spec in config.retrievers if (found := spec.module.details(spec.params).get("reranker")) is not None
    )
    return ReportInput(
        k=config.k,
        metrics=tuple(spec.label for spec in shown),
        definitions={spec.label: spec.definition for spec in shown},
        questions=tuple(QuestionView(q.id, q.query, q.tags, dict(q.relevance)) for q in questions),
        chunks={c.id: ChunkView(c.id, c.text, c.doc) for c in chunks},
        retrievers=views,
        embedder=embedder,
        rerankers=rerankers,
        database=database,
        baseline_path=display(config.baseline),
        comparable=judge.baseline is not None and judge.comparable() is None,
        notes=(*judge.notes(), *run_notes, *pairs.notes),
        failures=tuple(
            Failure(key.nodeid, key.retriever, key.name, "\n".join(outcome.lines))
            for key, outcome in sorted(failures.items())
        ),
        pairs=pairs.comparisons,
        pair_method=pairs.method,
        alpha=config.alpha,
        min_questions=config.min_questions,
        since=tuple(since.lines()) if (since := judge.since()) is not None else (),
        significance=config.significance,
        family=len(judge.family()) if config.significance != "none" else 0,
        adjustment=judge.adjustment(),
        gated=tuple(spec.label for spec in config.metrics),
        pair_notes=pairs.notes,
        since_comparable=since.comparable if since is not None else None,
        questions_changed=since is not None and since.questions.changed,
    )


def summary_input(config: Config, runs: Mapping[str, Run], judge: Judge) -> ReportInput:
    """What the terminal summary shows: the reports' view without the questions and chunks."""
    return build_report(config, (), (), runs, judge, {}, "", "")


def _view(name: str, kind: str, run: Run, judge: Judge) -> RetrieverView:
    if run.skipped is not None:
        return RetrieverView(name, kind, "unavailable", run.skipped)
    if run.error is not None or run.result is None:
        return RetrieverView(name, kind, "error", str(run.error))
    result = run.result
    recorded = judge.recorded(name)
    since = judge.since()
    comparable = since.questions.comparable if since is not None else frozenset()
    same_questions = since is not None and not since.questions.changed
    latency = latency_summary(result)
    comparisons = {label: c for label in result.metrics if (c := judge.comparison(name, label)) is not None}
    return RetrieverView(
        name, kind, "ran",
        metrics=dict(result.metrics),
        tags={tag: dict(values) for tag, values in result.tags.items()},
        rankings={q.id: q.ranking for q in result.questions},
        values={q.id: dict(q.values) for q in result.questions},
        comparisons=comparisons,
        baseline_tags=dict(recorded.tags) if recorded and same_questions else {},
        baseline_rankings={qid: q.ranking for qid, q in recorded.questions.items() if qid in comparable}
        if recorded else {},
        baseline_values={qid: dict(q.metrics) for qid, q in recorded.questions.items() if qid in comparable}
        if recorded else {},
        no_answer_total=result.no_answer_total,
        no_answer_empty=result.no_answer_empty,
        latency_p50=latency["p50"],
        latency_p95=latency["p95"],
        diagnostics=dict(run.diagnostics),
        scored=len(result.questions),
        answerable_empty=result.answerable_empty,
        wrongly_empty=tuple(result.wrongly_empty),
        notes=tuple(run.notes),
    )


def header_lines(config: Config, chunks: Sequence[Chunk], questions: Sequence[Question], baseline: Baseline | None,
                 update: bool) -> list[str]:
    """The run header: what was loaded, the baseline, and the warnings every report repeats."""
    answerable = sum(1 for q in questions if q.answerable)
    from_table = f" (the team's {config.team_corpus.describe()})" if config.team_corpus is not None else ""
    lines = [
        f"rag: config {config.where}",
        f"rag: {len(chunks)} chunks{from_table}, {len(questions)} questions "
        f"({answerable} answerable, {len(questions) - answerable} no-answer), "
        f"k={config.k}, metrics {', '.join(s.label for s in config.metrics)}",
    ]
    if baseline is None:
        lines.append(f"rag: no baseline yet at {display(config.baseline)}")
    else:
        lines.append(f"rag: baseline {display(config.baseline)}")
    empty = sum(1 for chunk in chunks if not chunk.text.strip())
    if empty:
        team = config.team_corpus
        where = f"the team's {team.describe()}" if team is not None else display(config.chunks_file("the header"))
        lines.append(
            f"rag: warning: {empty} chunk{'s' if empty != 1 else ''} in {where} "
            f"{'have' if empty != 1 else 'has'} an empty text; ranked and scored like any other"
        )
    if update:
        lines.append("rag: recording a new baseline (--rag-update-baseline)")
    if config.significance != "none":
        lines.append(f"rag: a drop fails only when a paired {config.significance} test gives p < {config.alpha:g}")
    notes = small_set_notes(config, questions)
    if baseline is not None:
        notes += comparable_notes(config, questions, baseline_questions(baseline, config, questions))
        review = review_line(edited_gold(recorded_gold(baseline), gold_texts(chunks, questions), questions))
        notes += [review] if review else []
    return lines + [f"rag: warning: {note}" for note in notes]
