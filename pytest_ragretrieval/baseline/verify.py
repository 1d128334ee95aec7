"""A baseline checked against today's inputs: its rankings name real chunks, its numbers come from its rankings.

`format.parse` checks what a file can check alone (types, finite numbers in range, no duplicate
ids). When the fingerprint says the baseline was recorded on this eval set (same digest, k and
metric definitions), every stored value is also recomputed from the stored ranking with the
metric functions: a per-question value, a mean or a tag mean that its rankings do not give is an
edited or damaged file, and the gate must not compare with it.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..evalset.records import Chunk, Question
from ..scoring.evaluate import RetrieverResult, score
from ..scoring.metrics import METRICS_VERSION, MetricSpec
from ..values import EPSILON, fmt
from .fingerprint import chunks_digest, evalset_digest
from .format import Baseline, Recorded, damaged


def verify(baseline: Baseline, k: int, chunks: Sequence[Chunk], questions: Sequence[Question]) -> None:
    """Raise a one-line BaselineError for the first stored value today's inputs contradict."""
    fingerprint = baseline.fingerprint
    if fingerprint.get("chunks_sha256") == chunks_digest(chunks):
        known = {chunk.id for chunk in chunks}
        for name, recorded in baseline.retrievers.items():
            _known_ids(baseline, name, recorded, known, chunks)
    same_questions = (
        fingerprint.get("evalset_sha256") == evalset_digest(questions)
        and fingerprint.get("k") == k
        and fingerprint.get("metrics_version") == METRICS_VERSION
    )
    if same_questions:
        for name, recorded in baseline.retrievers.items():
            _agrees(baseline, name, recorded, k, questions)


def _known_ids(baseline: Baseline, name: str, recorded: Recorded, known: set[str], chunks: Sequence[Chunk]) -> None:
    for qid, entry in recorded.questions.items():
        for chunk_id in entry.ranking:
            if chunk_id not in known:
                raise damaged(
                    baseline.path,
                    f"retrievers.{name}.questions.{qid}.ranking holds {chunk_id!r}, which is no chunk id of the "
                    "corpus it was recorded on",
                )


def _specs(labels: set[str], k: int) -> list[MetricSpec]:
    """The registered metrics among `labels`, in their canonical form; others cannot be recomputed."""
    specs = []
    for label in sorted(labels):
        try:
            spec = MetricSpec.parse(label, k)
        except ValueError:
            continue
        if spec.label == label:
            specs.append(spec)
    return specs


def _agrees(baseline: Baseline, name: str, recorded: Recorded, k: int, questions: Sequence[Question]) -> None:
    where = f"retrievers.{name}"
    ids = {q.id for q in questions}
    extra = sorted(set(recorded.questions) - ids)
    if extra:
        problem = f"{where}.questions holds {extra[0]!r}, which is no question of the eval set it was recorded on"
        raise damaged(baseline.path, problem)
    missing = sorted(ids - set(recorded.questions))
    if missing:
        problem = f"{where}.questions lacks question {missing[0]!r} of the eval set it was recorded on"
        raise damaged(baseline.path, problem)
    labels = set(recorded.metrics) | {label for q in recorded.questions.values() for label in q.metrics}
    labels |= {label for values in recorded.tags.values() for label in values}
    specs = _specs(labels, k)
    checked = {spec.label for spec in specs}
    rankings = {qid: entry.ranking for qid, entry in recorded.questions.items()}
    result = score(name, questions, rankings, specs)
    for question in result.questions:
        ranking = recorded.questions[question.id].ranking
        _same(baseline, f"{where}.questions.{question.id}.metrics", recorded.questions[question.id].metrics,
              question.values, checked, f"its ranking {list(ranking)} gives")
    _same(baseline, f"{where}.metrics", recorded.metrics, result.metrics, checked, "the mean of its questions is")
    if "tags" in _raw(baseline, name):
        for tag in sorted(set(recorded.tags) | set(result.tags)):
            _same(baseline, f"{where}.tags.{tag}", recorded.tags.get(tag, {}), result.tags.get(tag, {}), checked,
                  f"the mean of its questions tagged {tag!r} is")
    if recorded.no_answer is not None:
        _counts(baseline, f"{where}.no_answer", recorded.no_answer, result)


def _raw(baseline: Baseline, name: str) -> Mapping[str, Any]:
    entry = baseline.document.get("retrievers", {}).get(name, {})
    return entry if isinstance(entry, Mapping) else {}


def _same(
    baseline: Baseline, where: str, stored: Mapping[str, float], found: Mapping[str, float], checked: set[str],
    source: str,
) -> None:
    """Stored values (of the labels we can recompute) must be the recomputed ones, no more and no fewer."""
    for label in sorted((set(stored) | set(found)) & checked):
        if label not in found:
            problem = f"{where}.{label} = {fmt(stored[label])} has no questions to come from"
        elif label not in stored:
            problem = f"{where} lacks {label}, which the rest of the entry holds"
        elif abs(stored[label] - found[label]) > EPSILON:
            problem = f"{where}.{label} = {stored[label]!r} does not agree with the file: {source} {found[label]!r}"
        else:
            continue
        raise damaged(baseline.path, problem)


def _counts(baseline: Baseline, where: str, stored: Mapping[str, int], result: RetrieverResult) -> None:
    found = {
        "questions": result.no_answer_total,
        "empty": result.no_answer_empty,
        "answerable_empty": result.answerable_empty,
    }
    for key, value in sorted(stored.items()):
        if found[key] != value:
            problem = f"{where}.{key} = {value} does not agree with the file's rankings, which give {found[key]}"
            raise damaged(baseline.path, problem)

