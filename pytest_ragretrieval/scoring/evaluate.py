"""Scoring what a retriever returned, pure: rankings and judgments in, values out.

Policy, decided once here: no-answer questions are scored apart (how many got an empty
result) and left out of every metric mean. A span metric scores the answerable questions that have a
gold span of grade >= 1 (documents mode), over the spans of the top k's chunks (at a budget, those of them
that fit in its characters, in rank order); a question without one has no value for it, as a no-answer
question has no recall. (Checking what a retriever returns is the
runner's: see runner/execute.py.)
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..core.errors import RagError
from ..core.values import DIGITS
from ..evalset.records import Chunk, Question, Span
from .metrics import MetricSpec
from .spans import within_budget


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
    wrongly_empty: tuple[str, ...] = ()
    """The answerable questions that got an empty ranking, in eval-set order (unknown when read from a file)."""

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


def places(chunks: Sequence[Chunk], specs: Sequence[MetricSpec]) -> dict[str, Span] | None:
    """Chunk id -> its span in its document, built once a run, for `score` when `specs` hold a span metric
    (None otherwise: nothing to build); only chunks cut from documents have one."""
    return chunk_spans(chunks) if any(spec.metric.spans for spec in specs) else None


def chunk_spans(chunks: Sequence[Chunk]) -> dict[str, Span]:
    """Chunk id -> its span in its document (only chunks cut from documents have one)."""
    return {chunk.id: Span(chunk.doc, chunk.start, chunk.end) for chunk in chunks
            if chunk.doc is not None and chunk.start is not None and chunk.end is not None}


def _gold(question: Question) -> bool:
    return any(span.grade >= 1 for span in question.spans)


def answered(question: Question) -> bool:
    """Whether a question has an answer: a relevant chunk, or a gold span (the exam's answerability, whatever a
    chunking cut: one that leaves the answer out of every chunk scores the question 0, never no-answer)."""
    return question.answerable or _gold(question)


def score(
    name: str,
    questions: Sequence[Question],
    rankings: Mapping[str, Sequence[str]],
    specs: Sequence[MetricSpec],
    latencies: Mapping[str, float] | None = None,
    spans: Mapping[str, Span] | None = None,
) -> RetrieverResult:
    """Score rankings against the judgments; pure, so files can be re-scored without running.
    Answer metrics score answerable questions, abstention the no-answer ones, span metrics the answerable
    questions with gold spans, over `spans` (`places`: needed when `specs` hold one; a ranking holding a chunk
    `spans` cannot place, as an approved one may after the corpus changed, has no span values); each metric's label,
    function and scope are looked up once, not once a question (a reused run is mostly this)."""
    measured = [(spec.label, spec.metric, spec.k, spec.on_no_answer, spec.budget) for spec in specs]
    if spans is None and any(metric.spans for _, metric, *_ in measured):
        raise ValueError("a span metric is listed and no chunk spans were given")
    answerable = {question.id: answered(question) for question in questions}
    per_question: list[QuestionResult] = []
    raw: dict[str, dict[str, float]] = {}
    for question in questions:
        ranking = tuple(rankings.get(question.id, ()))
        values = {label: metric(ranking, question.relevance, k) for label, metric, k, no_answer, _ in measured
                  if answerable[question.id] != no_answer and not metric.spans}
        if spans is not None and _gold(question):
            for label, metric, k, _, chars in measured:
                placed = [spans.get(chunk_id) for chunk_id in ranking[:k]] if metric.spans else [None]
                if None not in placed:  # an approved ranking may hold a chunk the corpus no longer has
                    top = [span for span in placed if span is not None]
                    values[label] = metric.over_spans(within_budget(top, chars) if chars else top, question.spans)
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
        for label, *_ in measured:
            scoped = [raw[q.id][label] for q in subset if label in raw[q.id]]
            if scoped:
                found[label] = mean(scoped)
        return found

    every_tag = sorted({tag for q in questions for tag in q.tags})
    tags = {tag: means([q for q in questions if tag in q.tags]) for tag in every_tag}
    no_answer = [q for q in questions if not answerable[q.id]]
    return RetrieverResult(
        name=name,
        metrics=means(questions),
        tags={tag: values for tag, values in tags.items() if values},
        questions=tuple(per_question),
        no_answer_total=len(no_answer),
        no_answer_empty=sum(1 for q in no_answer if not rankings.get(q.id)),
        answerable_empty=sum(1 for q in questions if answerable[q.id] and not rankings.get(q.id)),
        wrongly_empty=tuple(q.id for q in questions if answerable[q.id] and not rankings.get(q.id)),
    )


@dataclass(frozen=True)
class Run:
    """What happened to one retriever this session: a result (its raw run scored: `record/run.py`'s
    `RetrieverRun` and `scored`), an error, or why it was skipped."""

    result: RetrieverResult | None = None
    error: RagError | None = None
    skipped: str | None = None
    diagnostics: Mapping[str, float] = field(default_factory=dict, hash=False)
    notes: tuple[str, ...] = ()
    loads_ms: Mapping[str, float] = field(default_factory=dict, hash=False)
    """One-time loads done before the first question (a tokenizer's dictionary), in ms: not in any latency."""
