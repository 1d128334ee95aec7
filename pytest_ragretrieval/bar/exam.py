"""The exam as a value: per question its graded chunks (grade 0 included), its gold spans and so its
answerability (a `Question`, its query left out where only digests were kept), and where it came from:
today's eval set, or what a baseline was recorded under (the work tree's file, or the base revision's).
The gate and the review build it here and cut it here; nothing else reads labels out of a fingerprint
(`record/exam.py` holds the keys)."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..baseline.exams import recorded_exam, same_labels
from ..evalset.corpus import chunking_share
from ..evalset.records import Question


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
        found = recorded_exam(fingerprint)
        return None if found is None else cls(found, source)

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
