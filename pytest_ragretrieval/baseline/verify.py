"""A baseline checked against today's inputs: its rankings name real chunks, its numbers come from its rankings.

`format.parse` checks what a file can check alone (types, finite numbers in range, no duplicate
ids). When the fingerprint says the baseline was recorded with today's yardstick (k, metric
definitions, grading rules), every stored value of a question whose query and graded gold are
today's is recomputed from its stored ranking with the metric functions, and when the whole eval
set is today's so is every mean, tag mean and no-answer count: a value its rankings do not give is
an edited or damaged file, and the gate must not compare with it.
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.digest import SHORT, digest
from ..core.values import EPSILON, fmt
from ..evalset.corpus import chunking_of, chunking_share
from ..evalset.documents import Document, documents_digest
from ..evalset.jsonl import GRADING_VERSION
from ..evalset.records import Chunk, Question, Span
from ..record.checks import damaged
from ..scoring.evaluate import RetrieverResult, chunk_spans, score
from ..scoring.metrics import METRICS_VERSION, MetricSpec
from .fingerprint import chunks_digest, evalset_digest, question_record, recorded_places
from .format import Baseline, Recorded


def verify(baseline: Baseline, k: int, chunks: Sequence[Chunk], questions: Sequence[Question]) -> None:
    """Raise a one-line BaselineError for the first stored value today's inputs contradict."""
    fingerprint = baseline.fingerprint
    spans = None
    if fingerprint.get("chunks", {}).get("sha256") == chunks_digest(chunks):
        known = {chunk.id for chunk in chunks}
        for name, recorded in baseline.retrievers.items():
            _known_ids(baseline, name, recorded, known, chunks)
        spans = chunk_spans(chunks)  # span metrics are recomputed on the chunks they were recorded on only
    if not same_yardstick(baseline, k):
        return
    if fingerprint.get("questions", {}).get("sha256") == evalset_digest(questions):
        for name, recorded in baseline.retrievers.items():
            _agrees(baseline, name, recorded, k, _labelled(baseline, name, chunks, questions), spans)
        return
    digests = fingerprint.get("questions", {}).get("digests", {})
    same = [q for q in questions if digests.get(q.id) is not None and _same_question(digests[q.id], q)]
    for name, recorded in baseline.retrievers.items():
        held = [q for q in same if q.id in recorded.questions]
        _agrees_per_question(baseline, name, recorded, k, _labelled(baseline, name, chunks, held), spans)


def verify_places(baseline: Baseline, documents: Sequence[Document]) -> None:
    """Raise a one-line BaselineError for a recorded place (`fingerprint.chunks.places`, what a chunker change is
    judged by) its document contradicts: the document whose digest it records holds no such slice, or the gold
    text recorded for the chunk is not that slice; or, the documents being unchanged, it records a digest that
    is not its document's."""
    fingerprint = baseline.fingerprint
    texts = {document.id: document.text for document in documents}
    digests = {doc: digest(text, SHORT) for doc, text in texts.items()}
    chunks = fingerprint.get("chunks", {})
    unchanged = chunks.get("documents", {}).get("sha256") == documents_digest(documents)
    gold = chunks.get("gold", {})
    for cid, (span, recorded) in sorted(recorded_places(fingerprint).items()):
        where = f"fingerprint.chunks.places.{cid} = {json.dumps([span.doc, span.start, span.end, recorded])}"
        if digests.get(span.doc) != recorded:
            if unchanged:
                raise damaged(baseline.path, f"{where} records a digest that is not its document's, and the "
                                             "documents are the ones it was recorded on")
            continue
        text = texts[span.doc]
        if not 0 <= span.start < span.end <= len(text):
            raise damaged(baseline.path, f"{where} is no slice of {span.doc!r} ({len(text)} characters), the "
                                         "document whose digest it records")
        if isinstance(gold, Mapping) and isinstance(gold.get(cid), str) and gold[cid] != text[span.start:span.end]:
            raise damaged(baseline.path, f"{where} is not where the gold text recorded for {cid!r} is in "
                                         f"{span.doc!r}, the document whose digest it records")


def _labelled(baseline: Baseline, name: str, chunks: Sequence[Chunk], questions: Sequence[Question]) -> list[Question]:
    """The questions with the labels `name` was scored by: those of the chunking its fingerprint names,
    where the corpus holds named chunkings (evalset/corpus.py); else as they are."""
    if not any(chunking_of(chunk.id) for chunk in chunks):
        return list(questions)
    entry = baseline.fingerprint.get("retrievers", {}).get(name, {})
    chunking = entry.get("chunking", "") if isinstance(entry, Mapping) else ""
    return list(chunking_share(str(chunking), chunks, questions)[1])


def same_yardstick(baseline: Baseline, k: int) -> bool:
    found = baseline.fingerprint.get("yardstick", {})
    return bool(found.get("k") == k and found.get("metrics_version") == METRICS_VERSION
                and found.get("grading_version") == GRADING_VERSION)


def _same_question(recorded: Mapping[str, Any], question: Question) -> bool:
    today = question_record(question)
    return bool(recorded.get("query") == today["query"] and recorded.get("gold") == today["gold"]
                and recorded.get("judged") == today.get("judged"))


def reproduced(baseline: Baseline, k: int, questions: Sequence[Question]) -> frozenset[str]:
    """For a baseline that does not itemize its questions (format 1): the questions whose every recorded
    per-question value today's graded gold gives again from the recorded ranking, in every entry that
    holds them. A query edit cannot be seen this way; a change of gold that moves any value can."""
    found = set()
    entries = list(baseline.retrievers.values())
    for question in questions:
        held = [entry.questions[question.id] for entry in entries if question.id in entry.questions]
        if held and all(_reproduces(entry.ranking, entry.metrics, question, k) for entry in held):
            found.add(question.id)
    return frozenset(found)


def _reproduces(ranking: Sequence[str], stored: Mapping[str, float], question: Question, k: int) -> bool:
    specs = _specs(set(stored), k)
    values = score("", [question], {question.id: ranking}, specs).questions[0].values
    return all(abs(stored[spec.label] - values.get(spec.label, math.inf)) <= EPSILON for spec in specs)


def _known_ids(baseline: Baseline, name: str, recorded: Recorded, known: set[str], chunks: Sequence[Chunk]) -> None:
    for qid, entry in recorded.questions.items():
        for chunk_id in entry.ranking:
            if chunk_id not in known:
                raise damaged(
                    baseline.path,
                    f"retrievers.{name}.questions.{qid}.ranking holds {chunk_id!r}, which is no chunk id of the "
                    "corpus it was recorded on",
                )


def _specs(labels: set[str], k: int, spans: bool = False) -> list[MetricSpec]:
    """The registered metrics among `labels`, in their canonical form; others cannot be recomputed (span
    metrics without the chunks' spans they were recorded on)."""
    specs = []
    for label in sorted(labels):
        try:
            spec = MetricSpec.parse(label, k)
        except ValueError:
            continue
        if spec.label == label and (spans or not spec.metric.spans):
            specs.append(spec)
    return specs


def _agrees(baseline: Baseline, name: str, recorded: Recorded, k: int, questions: Sequence[Question],
            spans: Mapping[str, Span] | None) -> None:
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
    specs = _specs(labels, k, spans is not None)
    checked = {spec.label for spec in specs}
    rankings = {qid: entry.ranking for qid, entry in recorded.questions.items()}
    result = score(name, questions, rankings, specs, spans=spans)
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


def _agrees_per_question(
    baseline: Baseline, name: str, recorded: Recorded, k: int, questions: Sequence[Question],
    spans: Mapping[str, Span] | None,
) -> None:
    """The stored values of the questions that are today's, recomputed from their stored rankings."""
    labels = {label for q in recorded.questions.values() for label in q.metrics}
    specs = _specs(labels, k, spans is not None)
    checked = {spec.label for spec in specs}
    rankings = {q.id: recorded.questions[q.id].ranking for q in questions}
    for question in score(name, questions, rankings, specs, spans=spans).questions:
        ranking = recorded.questions[question.id].ranking
        _same(baseline, f"retrievers.{name}.questions.{question.id}.metrics", recorded.questions[question.id].metrics,
              question.values, checked, f"its ranking {list(ranking)} gives")


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

