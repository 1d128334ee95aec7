"""Which questions move together: each question's cluster, as the tests flip and resample them (the
Verdicts page, "Clusters"). A question's `cluster` names it; else, in documents mode, the document holding
its gold (its highest-graded span's, the first document by name on a tie); else the question is its own.
Part of the exam: the base's clustering is read where the base's labels are, and an item is judged under
both (`gate/judge.py`). Pure: questions in, names out."""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..baseline.exams import BASE, EXAM_NAMES, TODAY
from ..core.values import p_value
from ..evalset.records import Question

NAMED, DOCUMENT, OWN = "named", "document", "own"
"""Where a question's cluster came from: its `cluster`, the document holding its gold, itself."""


def cluster_of(question: Question) -> tuple[str, str]:
    """The question's cluster key and where it came from (keys of the three kinds never meet)."""
    if question.cluster is not None:
        return f"cluster\x00{question.cluster}", NAMED
    if question.spans:
        top = min(question.spans, key=lambda span: (-span.grade, span.doc))
        return f"document\x00{top.doc}", DOCUMENT
    return f"question\x00{question.id}", OWN


@dataclass(frozen=True)
class Clustering:
    """Question id -> cluster key, and where each key came from; `source` names the exam it was read from."""

    keys: Mapping[str, str] = field(hash=False)
    kinds: Mapping[str, str] = field(hash=False)
    source: str

    @classmethod
    def of(cls, questions: Iterable[Question], source: str) -> Clustering:
        found = {question.id: cluster_of(question) for question in questions}
        return cls({qid: key for qid, (key, _) in found.items()}, {qid: kind for qid, (_, kind) in found.items()},
                   source)

    def key(self, qid: str) -> str:
        """A question's cluster key; a question this clustering does not know is its own cluster."""
        return self.keys.get(qid, f"question\x00{qid}")

    def count(self, ids: Iterable[str]) -> int:
        """How many clusters `ids` fall in."""
        return len({self.key(qid) for qid in ids})

    def clustered(self, ids: Iterable[str]) -> bool:
        """Whether some cluster holds two of `ids`: else every test runs question by question, as without
        clusters."""
        ids = list(ids)
        return self.count(ids) < len(ids)

    def same(self, other: Clustering, ids: Iterable[str]) -> bool:
        """Whether the two group `ids` alike (the same partition, whatever the names)."""
        ids = list(ids)
        mine = {qid: self.key(qid) for qid in ids}
        theirs = {qid: other.key(qid) for qid in ids}
        pairs = set(zip(mine.values(), theirs.values(), strict=True))
        return len(pairs) == len(set(mine.values())) == len(set(theirs.values()))

    def described(self, ids: Iterable[str]) -> str:
        """`8 clusters (the documents holding their gold)`, or the mix: `10 clusters (3 named by `cluster`, ...)`."""
        ids = list(ids)
        kinds = Counter(self.kinds.get(qid, OWN) for qid in ids)
        if len(kinds) == 1:
            how = {NAMED: "named by their `cluster`", DOCUMENT: "the documents holding their gold",
                   OWN: "each question its own"}[next(iter(kinds))]
        else:
            words = {NAMED: "named by `cluster`", DOCUMENT: "by the document holding their gold", OWN: "alone"}
            how = "questions " + ", ".join(f"{kinds[kind]} {words[kind]}" for kind in (NAMED, DOCUMENT, OWN)
                                           if kinds[kind])
        return f"{self.count(ids)} cluster{'s' if self.count(ids) != 1 else ''} ({how})"


def floor(clusters: int) -> float:
    """The smallest one-sided p a sign-flip test over `clusters` clusters gives: 2^-G, every cluster's sign
    as observed. The gate holds the bootstrap to the same floor: over few clusters its p is no better."""
    return 2.0 ** -clusters


def floor_text(clusters: int) -> str:
    """`2^-8 = 0.0039` (`2^-20 < 0.0001`)."""
    shown = p_value(floor(clusters))
    return f"2^-{clusters} {shown}" if shown.startswith("<") else f"2^-{clusters} = {shown}"


def unreachable(clusterings: Clustering | Sequence[Clustering] | None, ids: Sequence[str], alpha: float) -> str:
    """Why no test over `ids` can reach `alpha` under one of `clusterings`: the G clusters they fall in allow
    no p below 2^-G, and that is not below alpha; else "". "" too where every question is its own cluster
    (today's rule, unchanged). Every cluster the item was compared on counts, not only those it moved in, as
    every question does today: a drop confined to few clusters is as weak a signal as one confined to few
    questions (counting only those it moved in failed 18.7% of the null study's harmless items: docs)."""
    found = () if clusterings is None else (clusterings,) if isinstance(clusterings, Clustering) else clusterings
    for clustering in found:
        count = clustering.count(ids)
        if clustering.clustered(ids) and floor(count) >= alpha:
            return (f"its {count} cluster{'s' if count != 1 else ''} ({clustering.source}) "
                    f"allow{'s' if count == 1 else ''} no p below {floor_text(count)}, not below alpha {alpha:g}: "
                    "judged by the tolerance alone")
    return ""


def judged_under(today: Iterable[Question], base: Mapping[str, Question] | None) -> tuple[Clustering, ...]:
    """Today's clustering of the questions, then the base's exam's where it groups today's questions
    otherwise: each item is judged under both and fails under either, so an edit of the clusters cannot
    pass what failed (merging every cluster into one leaves the base's clusters to judge). A base that keeps
    no labels (format 3 and older: `base` empty) was recorded question by question, each its own cluster:
    so a label edit that takes a dropped question out of the comparison cannot leave the other drops too
    few clusters to fail, as it could not before clusters (issue 48, item 5). None: no base to judge under."""
    questions = list(today)
    found = Clustering.of(questions, EXAM_NAMES[TODAY])
    kept = None if base is None else Clustering.of(base.values(), EXAM_NAMES[BASE])
    same = kept is None or kept.same(found, [question.id for question in questions])
    return (found,) if same or kept is None else (found, kept)


def changed_lines(significance: str, found: Sequence[Clustering], ids: Sequence[str]) -> list[str]:
    """The note every report repeats, in significance mode, when the base's exam groups the questions
    otherwise than today's."""
    if significance == "none" or len(found) == 1:
        return []
    today, base = found
    return [f"the questions' clusters changed since the baseline ({today.described(ids)} in {today.source}, "
            f"{base.described(ids)} in {base.source}): each item is judged under both and fails under either"]
