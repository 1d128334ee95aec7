"""Running one retriever over the eval set and scoring what it returned.

Policy, decided once here: no-answer questions are scored apart (how many got an empty
result) and left out of every metric mean; a ranking with a duplicate or unknown chunk id is
an error of the retriever; a ranking longer than asked for is cut to the depth asked for.
"""
from __future__ import annotations

import math
import time
import traceback
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import RagError, RetrieverError, RetrieverUnavailable
from ..evalset.records import Question
from ..jsontext import escaped
from ..progress import Output, PlainOutput, Progress
from ..retrievers.protocol import Diagnosing, Noting, Query, ask, asked
from ..timing import Phases
from ..values import DIGITS
from .metrics import MetricSpec


@dataclass(frozen=True)
class QuestionResult:
    id: str
    ranking: tuple[str, ...]
    values: Mapping[str, float] = field(hash=False)
    latency_ms: float = 0.0


@dataclass(frozen=True)
class RetrieverResult:
    """One retriever's scores: means over answerable questions, per tag, and per question."""

    name: str
    metrics: Mapping[str, float] = field(hash=False)
    tags: Mapping[str, Mapping[str, float]] = field(hash=False)
    questions: tuple[QuestionResult, ...]
    no_answer_total: int
    no_answer_empty: int
    answerable_empty: int = 0

    def question(self, question_id: str) -> QuestionResult | None:
        for result in self.questions:
            if result.id == question_id:
                return result
        return None

    @property
    def latencies(self) -> list[float]:
        return [result.latency_ms for result in self.questions]


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest-rank percentile: the smallest value with at least `share` of the values at or below it."""
    if not values:
        return 0.0
    ordered = sorted(values)
    index = max(0, math.ceil(share * len(ordered)) - 1)
    return ordered[index]


def latency_summary(result: RetrieverResult) -> dict[str, float]:
    """p50 and p95 of the per-question latency in ms, nearest rank, rounded to microseconds."""
    latencies = result.latencies
    return {"p50": round(percentile(latencies, 0.50), 3), "p95": round(percentile(latencies, 0.95), 3)}


def mean(values: Sequence[float]) -> float:
    return round(math.fsum(values) / len(values), DIGITS) if values else 0.0


def checked_ranking(
    name: str, question: Question, returned: Any, depth: int, known: Collection[str]
) -> tuple[str, ...]:
    """Validate what a retriever returned; raise a RetrieverError naming retriever and question."""
    where = f"retriever {name!r} on question {question.id!r}"
    if isinstance(returned, (str, bytes)) or not hasattr(returned, "__iter__"):
        raise RetrieverError(f"{where}: expected a sequence of chunk ids, got {type(returned).__name__}")
    ranking = tuple(returned)[:depth]
    seen: set[str] = set()
    for chunk_id in ranking:
        if not isinstance(chunk_id, str):
            raise RetrieverError(f"{where}: chunk ids must be strings, got {chunk_id!r}")
        if chunk_id in seen:
            raise RetrieverError(f"{where}: returned chunk id {chunk_id!r} twice")
        if chunk_id not in known:
            raise RetrieverError(f"{where}: returned unknown chunk id {chunk_id!r}")
        seen.add(chunk_id)
    return ranking


def run_retriever(
    name: str,
    retrieve: Any,
    questions: Sequence[Question],
    depth: int,
    known: Collection[str],
    tick: Callable[[], None] = lambda: None,
    latency: Callable[[Query], float] | None = None,
) -> tuple[dict[str, tuple[str, ...]], dict[str, float]]:
    """Ask `retrieve` for `depth` ids per question: (rankings, latency in ms) by question id.

    `latency(query)`, when given, says what a query cost instead of the time the call took
    (a memoised retriever answers from its store, having recorded the time it once took).
    """
    rankings: dict[str, tuple[str, ...]] = {}
    latencies: dict[str, float] = {}
    for question in questions:
        started = time.perf_counter()
        query = asked(question)
        returned = ask(retrieve, query, depth)
        took = (time.perf_counter() - started) * 1000.0
        latencies[question.id] = latency(query) if latency is not None else took
        rankings[question.id] = checked_ranking(name, question, returned, depth, known)
        tick()
    return rankings, latencies


def _in_scope(spec: MetricSpec, question: Question) -> bool:
    """Answer metrics score answerable questions; abstention scores the no-answer ones."""
    return question.answerable != spec.on_no_answer


def score(
    name: str,
    questions: Sequence[Question],
    rankings: Mapping[str, Sequence[str]],
    specs: Sequence[MetricSpec],
    latencies: Mapping[str, float] | None = None,
) -> RetrieverResult:
    """Score rankings against the judgments; pure, so files can be re-scored without running."""
    per_question: list[QuestionResult] = []
    raw: dict[str, dict[str, float]] = {}
    for question in questions:
        ranking = tuple(rankings.get(question.id, ()))
        values = {spec.label: spec.score(ranking, question.relevance) for spec in specs if _in_scope(spec, question)}
        raw[question.id] = values
        per_question.append(
            QuestionResult(
                id=question.id,
                ranking=ranking,
                values={label: round(value, DIGITS) for label, value in values.items()},
                latency_ms=(latencies or {}).get(question.id, 0.0),
            )
        )

    def means(subset: Sequence[Question]) -> dict[str, float]:
        found = {}
        for spec in specs:
            scoped = [raw[q.id][spec.label] for q in subset if _in_scope(spec, q)]
            if scoped:
                found[spec.label] = mean(scoped)
        return found

    every_tag = sorted({tag for q in questions for tag in q.tags})
    tags = {tag: means([q for q in questions if tag in q.tags]) for tag in every_tag}
    no_answer = [q for q in questions if not q.answerable]
    return RetrieverResult(
        name=name,
        metrics=means(questions),
        tags={tag: values for tag, values in tags.items() if values},
        questions=tuple(per_question),
        no_answer_total=len(no_answer),
        no_answer_empty=sum(1 for q in no_answer if not rankings.get(q.id)),
        answerable_empty=sum(1 for q in questions if q.answerable and not rankings.get(q.id)),
    )


@dataclass(frozen=True)
class Run:
    """What happened to one retriever this session: a result, an error, or why it was skipped."""

    result: RetrieverResult | None = None
    error: RagError | None = None
    skipped: str | None = None
    diagnostics: Mapping[str, float] = field(default_factory=dict, hash=False)
    notes: tuple[str, ...] = ()


def execute(
    name: str,
    build: Callable[[], Any],
    questions: Sequence[Question],
    specs: Sequence[MetricSpec],
    depth: int,
    known: Collection[str],
    out: Output | None = None,
    phases: Phases | None = None,
) -> Run:
    """Build a retriever, run it over every question with progress, and score it; never raises.

    A memoised retriever (`Memo`) first fills its store for every question, its sources
    first and in one batch where it can; the questions then read their rankings from there.
    """
    from ..retrievers.store import Memo

    phases = phases or Phases()
    try:
        retrieve = build()
        with Progress(out or PlainOutput(), f"{name} over {len(questions)} questions", len(questions)) as bar:
            with phases.phase(f"run {name}"):
                if isinstance(retrieve, Memo):
                    retrieve.prefetch([asked(question) for question in questions], depth, bar.advance)
                    rankings, latencies = run_retriever(
                        name, retrieve, questions, depth, known, latency=retrieve.latency_ms
                    )
                else:
                    rankings, latencies = run_retriever(name, retrieve, questions, depth, known, tick=bar.advance)
        with phases.phase("scoring"):
            result = score(name, questions, rankings, specs, latencies)
        diagnostics = dict(retrieve.diagnostics(questions)) if isinstance(retrieve, Diagnosing) else {}
        notes = tuple(retrieve.notes()) if isinstance(retrieve, Noting) else ()
        return Run(result=result, diagnostics=diagnostics, notes=notes)
    except RetrieverUnavailable as exc:  # the reason may be recorded in the baseline: one line, no control character
        return Run(skipped=escaped(str(exc)))
    except RagError as exc:
        return Run(error=exc if escaped(str(exc)) == str(exc) else RetrieverError(escaped(str(exc))))
    except Exception as exc:
        return Run(error=RetrieverError(f"retriever {name!r} raised {escaped(describe_exception(exc))}"))


def describe_exception(exc: BaseException) -> str:
    """`Type: message (file:line)` for the innermost frame, enough to find a user's bug."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" ({frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"
