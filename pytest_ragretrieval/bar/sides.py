"""One retriever's comparison with its bar, exam by exam (the Verdicts page, "The bar").

The bar is the approved rankings (`baseline/exams.py`). Each exam scores them and today's rankings
alike: today's exam (the eval set as it is) always, the base's (the labels the baseline was recorded
under) where a comparable question's labels changed. Every verdict, member of the family, update rule
and report reads these sides, never a value stored in the file (but a value bar kept from a format-3
file, read as it was approved).
"""
from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from ..baseline.exams import BASE, TODAY
from ..baseline.format import Recorded, RecordedQuestion
from ..baseline.since import paired
from ..scoring.evaluate import RetrieverResult, mean
from .exam import Exam, Scorer


@dataclass(frozen=True)
class Side:
    """One exam's view of a retriever: the bar (the approved rankings scored under `exam`, a kept value
    bar laid over them), today's rankings scored under it, and the last update's rankings scored under it
    where they differ from the approved ones (None: they are the approved ones)."""

    exam: str
    bar: Recorded
    today: RetrieverResult
    last: Recorded | None = None


def per_question(result: RetrieverResult) -> dict[str, Mapping[str, float]]:
    return {question.id: question.values for question in result.questions}


def recorded_values(recorded: Recorded) -> dict[str, Mapping[str, float]]:
    return {qid: question.metrics for qid, question in recorded.questions.items()}


def as_recorded(result: RetrieverResult, kept: Mapping[str, Mapping[str, float]] | None = None,
                labels: Collection[str] | None = None) -> Recorded:
    """Scored rankings as the checks read a baseline entry, with a kept value bar laid over its values;
    `labels`: the metrics the entry holds (a metric it does not hold is not in the bar)."""
    kept = kept or {}
    questions = {}
    for question in result.questions:
        values = {label: value for label, value in question.values.items() if labels is None or label in labels}
        values.update({label: bar[question.id] for label, bar in kept.items()
                       if question.id in bar and label in values})
        questions[question.id] = RecordedQuestion(question.ranking, values)
    metrics = {label: value for label, value in result.metrics.items() if labels is None or label in labels}
    for label in kept:
        held = [q.metrics[label] for q in questions.values() if label in q.metrics]
        if held:
            metrics[label] = mean(held)
    return Recorded(metrics=metrics, questions=questions, tags=result.tags)


def sides(
    name: str, entry: Recorded, today: RetrieverResult, questions: Exam, base: Exam | None,
    comparable: Collection[str], scorer: Scorer, earlier: Scorer | None = None, extra: Collection[str] = (),
) -> tuple[Side, ...]:
    """Today's exam's side, then the base's where a comparable question's labels differ from those the
    baseline keeps. `questions` is today's exam (as the retriever is scored on it), `base` the base's;
    `earlier` scores the approved and recorded rankings (`Scorer.without` the chunks changed since); `extra`:
    metrics the bar holds though the entry does not (judged across a chunker change: `Config.across`)."""
    earlier = earlier or scorer
    approved = entry.approved_rankings()
    recorded = {qid: q.ranking for qid, q in entry.questions.items()}
    differs = approved != recorded or bool(entry.bar)
    held = [qid for qid in questions if qid in entry.questions]
    labels = set(entry.metrics) | set(extra)
    found = [_side(TODAY, name, questions.only(held), today, approved, recorded if differs else None, entry.bar,
                   earlier, labels)]
    if base is not None:
        shared = sorted(qid for qid in comparable if qid in base and qid in questions and qid in entry.questions)
        if base.differs(questions, shared):
            exam = base.only(shared)
            rankings = {q.id: q.ranking for q in today.questions}
            found.append(_side(BASE, name, exam, exam.score(scorer, name, rankings, shared), approved,
                               recorded if differs else None, entry.bar, earlier, labels))
    return tuple(found)


def _side(exam: str, name: str, questions: Exam, today: RetrieverResult,
          approved: Mapping[str, Sequence[str]], recorded: Mapping[str, Sequence[str]] | None,
          kept: Mapping[str, Mapping[str, float]], scorer: Scorer, labels: Collection[str]) -> Side:
    bar = as_recorded(questions.score(scorer, name, approved), kept, labels)
    last = as_recorded(questions.score(scorer, name, recorded), labels=labels) if recorded is not None else None
    return Side(exam, bar, today, last)


def leaving(entry: Recorded, base: Exam | None, label: str, ids: Collection[str],
            scorer: Scorer, name: str) -> dict[str, float]:
    """The approved values of questions that leave the comparison (removed, or their query changed):
    their approved rankings scored under the base's exam; a question the exam lacks (a file that keeps no
    labels) has its stored value (a kept value bar's where it holds one)."""
    stored = {qid: value for qid, value in entry.bar_values(label).items() if qid in ids}
    if base is None:
        return stored
    kept = entry.bar.get(label, {})
    scored = base.score(scorer, name, entry.approved_rankings(), sorted(qid for qid in ids if qid in entry.questions))
    found = {qid: value for qid, value in stored.items() if qid not in base}
    found.update({q.id: kept.get(q.id, q.values[label]) for q in scored.questions if label in q.values})
    return found


def common_mean(label: str, bar: Recorded, last: Recorded, today: RetrieverResult,
                comparable: Collection[str]) -> float | None:
    """The last update's mean of `label` over the questions the bar and today are compared on: where the
    approved rankings differ from the last update's, a drop the file already held is older than today's."""
    pairs = paired(label, recorded_values(bar), per_question(today), comparable)
    values = [last.questions[qid].metrics[label] for qid in pairs.ids
              if qid in last.questions and label in last.questions[qid].metrics]
    return mean(values) if values and len(values) == pairs.n else None
