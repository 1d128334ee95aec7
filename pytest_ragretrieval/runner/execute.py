"""Running one retriever over the eval set: what it returns checked, timed and scored; never raises.

Policy, decided once here: a ranking with a duplicate or unknown chunk id is an error of the
retriever; a ranking longer than asked for is cut to the depth asked for. A retriever whose
model or service is absent here is skipped (a cross-encoder without torch too, its reason naming the
package and the extra), an optional package that is not installed is one line naming the extra that brings
it, any other exception is the retriever's error.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from ..core.errors import RagError, RetrieverError, RetrieverUnavailable, describe_exception
from ..core.optional import missing
from ..core.progress import Output, PlainOutput, Progress
from ..core.timing import Phases
from ..core.values import quoted
from ..evalset.records import Question, Span
from ..files.jsontext import escaped
from ..record.run import RetrieverRun, scored
from ..retrievers.protocol import Query, Retriever, ask, asked
from ..scoring.evaluate import Run
from ..scoring.metrics import MetricSpec
from .store import Memo


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
            raise RetrieverError(f"{where}: chunk ids must be strings, got {quoted(chunk_id)}")
        if chunk_id in seen:
            raise RetrieverError(f"{where}: returned chunk id {quoted(chunk_id)} twice")
        if chunk_id not in known:
            raise RetrieverError(f"{where}: returned unknown chunk id {quoted(chunk_id)}")
        seen.add(chunk_id)
    return ranking


def run_retriever(
    name: str,
    retrieve: Retriever,
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



def execute(
    name: str,
    build: Callable[[], Memo],
    questions: Sequence[Question],
    specs: Sequence[MetricSpec],
    depth: int,
    known: Collection[str],
    out: Output | None = None,
    phases: Phases | None = None,
    spans: Mapping[str, Span] | None = None,
) -> Run:
    """Build a retriever, run it over every question with progress, and score it (`spans`: the chunks'
    spans, for span metrics); never raises.

    The memo first fills its store for every question, its sources first and in one batch where
    it can; the questions then read their rankings, and the latency recorded for them, from there.
    """
    phases = phases or Phases()
    try:
        memo = build()
        with Progress(out or PlainOutput(), f"{name} over {len(questions)} questions", len(questions)) as bar:
            with phases.phase(f"run {name}"):
                memo.prefetch([asked(question) for question in questions], depth, bar.advance)
                rankings, latencies = run_retriever(name, memo, questions, depth, known, latency=memo.latency_ms)
        ran = RetrieverRun(depth, rankings, latencies, dict(memo.diagnostics(questions)), tuple(memo.notes()),
                           loads_ms=dict(memo.loads))
        with phases.phase("scoring"):
            return scored(name, ran, questions, specs, spans)
    except RetrieverUnavailable as exc:  # the reason may be recorded in the baseline: one line, no control character
        return Run(skipped=escaped(str(exc)))
    except RagError as exc:
        return Run(error=exc if escaped(str(exc)) == str(exc) else RetrieverError(escaped(str(exc))))
    except ImportError as exc:
        found = missing(exc, f"retriever {name!r}")
        return Run(error=found or RetrieverError(f"retriever {name!r} raised {escaped(describe_exception(exc))}"))
    except Exception as exc:
        return Run(error=RetrieverError(f"retriever {name!r} raised {escaped(describe_exception(exc))}"))
