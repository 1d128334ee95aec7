"""The exam as a value: per question its graded chunks (grade 0 included), its gold spans and so its
answerability (a `Question`, its query left out where only digests were kept), and where it came from:
today's eval set, or what a baseline was recorded under (the work tree's file, or the base revision's).
The gate and the review build it here, cut it here and score rankings on it here; nothing else reads labels
out of a fingerprint (`record/exam.py` holds the keys, `tests/unit/test_layout.py`)."""
from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..baseline.exams import BASE, EXAM_NAMES, KeptExam, same_labels
from ..evalset.corpus import chunking_share
from ..evalset.records import Question, Span
from ..record.exam import kept_questions
from ..scoring.evaluate import RetrieverResult, score
from ..scoring.metrics import MetricSpec


@dataclass(frozen=True)
class Scorer:
    """What scoring a ranking needs besides the exam: the metrics and the chunks' spans."""

    specs: Sequence[MetricSpec]
    places: Mapping[str, Span] | None = None

    def __call__(self, name: str, questions: Sequence[Question], rankings: Mapping[str, Sequence[str]]
                 ) -> RetrieverResult:
        return score(name, questions, rankings, self.specs, spans=self.places)

    def without(self, changed: Collection[str] | None) -> Scorer:
        """This scorer for rankings of an earlier corpus: chunks edited or removed since (`changed`; None: the
        corpus changed and is not itemized, so none is known unchanged) have no place, so a question whose
        top k holds one has no span values. Today's place of an edited chunk is not the one it was ranked at."""
        if self.places is None or (changed is not None and not changed):
            return self
        if changed is None:
            return Scorer(self.specs, {})
        gone = set(changed)
        return Scorer(self.specs, {cid: span for cid, span in self.places.items() if cid not in gone})


@dataclass(frozen=True)
class Exam:
    """One exam, question by question, and its provenance (`source`, as messages name it)."""

    questions: Mapping[str, Question] = field(hash=False)
    source: str

    @classmethod
    def of_today(cls, questions: Iterable[Question], source: str) -> Exam:
        return cls({question.id: question for question in questions}, source)

    @classmethod
    def of_baseline(cls, fingerprint: Mapping[str, Any], source: str) -> Exam | None:
        """The exam a baseline's fingerprint keeps; None for a file that keeps none (format 3 and older)."""
        section = fingerprint.get("questions", {})
        found = kept_questions(section) if isinstance(section, Mapping) else None
        return None if found is None else cls(found, source)

    def __contains__(self, qid: object) -> bool:
        return qid in self.questions

    def __getitem__(self, qid: str) -> Question:
        return self.questions[qid]

    def __iter__(self) -> Iterator[str]:
        return iter(self.questions)

    def asked(self, ids: Iterable[str]) -> list[Question]:
        """The questions of `ids` this exam asks, in the order of `ids`."""
        return [self.questions[qid] for qid in ids if qid in self.questions]

    def only(self, ids: Iterable[str]) -> Exam:
        """This exam on the questions of `ids` it asks, in the order of `ids`, its provenance kept."""
        return Exam({question.id: question for question in self.asked(ids)}, self.source)

    def cut(self, chunking: str | None) -> Exam:
        """This exam as one chunking's retrievers are scored on it (chunkings side by side: each question's
        labels in that chunking, its gold spans shared); itself where chunkings do not sit side by side."""
        if chunking is None:
            return self
        return Exam.of_today(chunking_share(chunking, (), list(self.questions.values()))[1], self.source)

    def differs(self, other: Exam, ids: Iterable[str]) -> bool:
        """Whether a question of `ids` both exams ask is graded otherwise (grade 0 and gold spans included)."""
        return any(not same_labels(self.questions[qid], other.questions[qid])
                   for qid in ids if qid in self.questions and qid in other.questions)

    def score(self, scorer: Scorer, name: str, rankings: Mapping[str, Sequence[str]],
              ids: Iterable[str] | None = None) -> RetrieverResult:
        """Retriever `name`'s `rankings` scored on this exam (on the questions of `ids` it asks, in their order;
        default: all), by `scorer`: the metrics, and the chunks' places, less those of chunks changed since the
        rankings were made (`Scorer.without`)."""
        return scorer(name, self.asked(self.questions if ids is None else ids), rankings)


def base_questions(fingerprint: Mapping[str, Any] | None, kept: KeptExam | None) -> tuple[Question, ...]:
    """The base's exam, question by question (none for a file that keeps no labels): the base revision's
    (`kept`, a pull request's CI), else that of the work tree's baseline (its `fingerprint`)."""
    source = fingerprint if kept is None else kept.fingerprint
    exam = Exam.of_baseline(source, EXAM_NAMES[BASE]) if source is not None else None
    return () if exam is None else tuple(exam.questions.values())
