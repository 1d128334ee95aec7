"""The results/baseline JSON file: one versioned format, keys sorted, written atomically.

The baseline holds no timings and no timestamps, so recording the same inputs twice gives a
byte-identical file; `--rag-json` results add each retriever's latency and comparison.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from msgspec import UNSET

from .. import __version__
from ..record.checks import damaged
from ..record.codec import Decoded, decode
from ..record.codec import dumps as dumps
from ..record.codec import load as load_record
from ..record.codec import read as read_record
from ..record.projection import baseline_of
from ..record.types import FORMAT_VERSION, NoAnswer, Question, Record, Retriever
from ..scoring.evaluate import RetrieverResult
from .exams import kept_exam_problem

RERECORD = "run `pytest --rag-update-baseline` to record one"
NO_ANSWER_KEYS = ("questions", "empty", "answerable_empty")


@dataclass(frozen=True)
class RecordedQuestion:
    ranking: tuple[str, ...]
    metrics: Mapping[str, float] = field(hash=False)


@dataclass(frozen=True)
class Recorded:
    """One retriever's entry in a baseline or results file."""

    metrics: Mapping[str, float] = field(hash=False)
    questions: Mapping[str, RecordedQuestion] = field(hash=False)
    tags: Mapping[str, Mapping[str, float]] = field(default_factory=dict, hash=False)
    no_answer: Mapping[str, int] | None = field(default=None, hash=False)
    """The no-answer counts, when the file holds them (files of 0.1.0 lack `answerable_empty`)."""
    bar: Mapping[str, Mapping[str, float]] = field(default_factory=dict, hash=False)
    """A value bar kept from a format-3 file, where it differs from the recorded values: metric label ->
    question id -> value."""
    approved: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)
    """The approved rankings where they differ from the recorded ones: question id -> ranking."""

    def approved_rankings(self) -> dict[str, tuple[str, ...]]:
        """The bar's rankings, question by question: the recorded ones, the approved ones where they differ."""
        return {qid: self.approved.get(qid, q.ranking) for qid, q in self.questions.items()}

    def bar_values(self, label: str) -> dict[str, float]:
        """The bar of one metric, question by question: the recorded values, the bar's own where it holds one."""
        found = {qid: q.metrics[label] for qid, q in self.questions.items() if label in q.metrics}
        found.update(self.bar.get(label, {}))
        return found


@dataclass(frozen=True)
class Baseline:
    path: Path
    k: int
    fingerprint: Mapping[str, Any] = field(hash=False)
    retrievers: Mapping[str, Recorded] = field(hash=False)
    document: Mapping[str, Any] = field(hash=False)
    unavailable: Mapping[str, str] = field(default_factory=dict, hash=False)
    format_version: int = FORMAT_VERSION
    record: Record | None = field(default=None, hash=False)
    """The file as the run record reads it (None for a baseline built in memory)."""


def retriever_record(result: RetrieverResult) -> Retriever:
    """The reproducible part of a retriever's results, as the record holds it."""
    return Retriever(
        metrics=dict(result.metrics),
        tags={tag: dict(values) for tag, values in result.tags.items()},
        no_answer=NoAnswer(result.no_answer_total, result.no_answer_empty, result.answerable_empty),
        questions={q.id: Question(tuple(q.ranking), dict(q.values)) for q in result.questions},
    )


def baseline_record(
    k: int,
    fingerprint: Mapping[str, Any],
    retrievers: Mapping[str, Retriever],
    unavailable: Mapping[str, str] | None = None,
) -> Record:
    """The baseline as the record holds it: `unavailable` names retrievers that could not run where it was
    recorded, and why; the file is the baseline's part of the record (`record/projection.py`)."""
    return baseline_of(Record(format_version=FORMAT_VERSION, plugin_version=__version__, k=k,
                              fingerprint=dict(fingerprint), retrievers=dict(retrievers),
                              unavailable=dict(unavailable) if unavailable else UNSET))


def recorded(entry: Retriever) -> Recorded:
    """One entry of the record as the judge reads it."""
    no_answer = None if not entry.no_answer else {
        key: count for key in NO_ANSWER_KEYS if isinstance(count := getattr(entry.no_answer, key), int)}
    return Recorded(
        metrics=dict(entry.metrics),
        questions={qid: RecordedQuestion(q.ranking, dict(q.metrics)) for qid, q in entry.questions.items()},
        tags={tag: dict(values) for tag, values in entry.tags.items()},
        no_answer=no_answer, bar={label: dict(values) for label, values in (entry.bar or {}).items()},
        approved={qid: tuple(ranking) for qid, ranking in (entry.approved or {}).items()},
    )


def parse(path: Path, text: str) -> Baseline:
    """Read a results or baseline document through the record's codec (every problem one line naming
    the file and the JSON path), and project it for the judge."""
    return _projected(path, decode(path, text))


def _projected(path: Path, decoded: Decoded) -> Baseline:
    record = decoded.record
    fingerprint = decoded.document["fingerprint"]
    assert isinstance(fingerprint, dict)
    problem = kept_exam_problem(fingerprint, record.format_version)
    if problem is not None:
        raise damaged(path, problem)
    return Baseline(path=path, k=record.k, fingerprint=fingerprint,
                    retrievers={name: recorded(entry) for name, entry in record.retrievers.items()},
                    document=decoded.document, unavailable=dict(record.unavailable or {}),
                    format_version=record.format_version, record=record)


def read(path: Path) -> Baseline:
    """The results or baseline file at `path`; a missing file is an error."""
    return _projected(path, read_record(path))


def load(path: Path) -> Baseline | None:
    """The baseline at `path`, or None when there is none yet; a path that is no file is an error."""
    decoded = load_record(path)
    return None if decoded is None else _projected(path, decoded)
