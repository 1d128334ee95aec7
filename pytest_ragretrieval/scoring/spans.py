"""Span metrics: retrieval scored by the characters it shares with the answer's text, so a
value does not move with the chunk size (issue 43).

Every function takes the retrieved chunks' spans in rank order, already cut by the caller to the
top k or to a budget (`within_budget`), and the question's gold spans. `char_recall`,
`char_precision` and `char_iou` are Chroma's definitions exactly (Smith & Troynikov 2024,
brandonstarxel/chunking_evaluation, `_scores_from_dataset_and_retrievals`; checked against their
function in tests/unit/test_spans_chroma.py): the numerator is the characters of the union of
(retrieved chunk ∩ gold span), the denominators are sums, not unions, so overlapping chunks count
their shared characters twice.

Decided once: a gold span counts when its grade is >= 1, and the grade weighs nothing else; a
question with no such span is a no-answer question and has no span metric (a ValueError: the
caller leaves it out, as it does for recall); no retrieved chunk scores 0 on every metric.
Zero-length spans are refused when the eval set and the chunks are loaded.
"""
from __future__ import annotations

from collections.abc import Sequence

from ..evalset.records import Span

Ranges = list[tuple[int, int]]


def _gold(spans: Sequence[Span]) -> list[Span]:
    gold = [span for span in spans if span.grade >= 1]
    if not gold:
        raise ValueError("no gold span of grade >= 1: a no-answer question has no span metrics")
    return gold


def _union(spans: Sequence[Span], doc: str) -> Ranges:
    """The spans of `doc` merged where they overlap or touch, in order."""
    merged: Ranges = []
    for start, end in sorted((span.start, span.end) for span in spans if span.doc == doc):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _shared(one: Ranges, other: Ranges) -> int:
    """Characters in both unions."""
    return sum(max(0, min(a_end, b_end) - max(a_start, b_start)) for a_start, a_end in one for b_start, b_end in other)


def _length(spans: Sequence[Span]) -> int:
    return sum(span.end - span.start for span in spans)


def _found(retrieved: Sequence[Span], gold: Sequence[Span]) -> int:
    """Chroma's numerator: the characters of the union of (retrieved chunk ∩ gold span), document by
    document; the union of the intersections is the intersection of the unions."""
    return sum(_shared(_union(retrieved, doc), _union(gold, doc)) for doc in {span.doc for span in gold})


def _missed(retrieved: Sequence[Span], gold: Sequence[Span]) -> int:
    """The gold characters no retrieved chunk covers, summed span by span (Chroma's unused highlights)."""
    covered = {doc: _union(retrieved, doc) for doc in {span.doc for span in gold}}
    return sum(span.end - span.start - _shared([(span.start, span.end)], covered[span.doc]) for span in gold)


def char_recall(retrieved: Sequence[Span], gold: Sequence[Span]) -> float:
    """Gold characters retrieved / the sum of the gold spans' lengths."""
    spans = _gold(gold)
    return _found(retrieved, spans) / _length(spans)


def char_precision(retrieved: Sequence[Span], gold: Sequence[Span]) -> float:
    """Gold characters retrieved / the sum of the retrieved chunks' lengths (chunks of other documents
    included); 0 when nothing was retrieved."""
    spans = _gold(gold)
    total = _length(retrieved)
    return _found(retrieved, spans) / total if total else 0.0


def char_iou(retrieved: Sequence[Span], gold: Sequence[Span]) -> float:
    """Gold characters retrieved / (the sum of the retrieved chunks' lengths + the gold characters
    missed): |R∩G| / |R∪G| where the chunks do not overlap, lower where they do."""
    spans = _gold(gold)
    return _found(retrieved, spans) / (_length(retrieved) + _missed(retrieved, spans))


def answer_hit(retrieved: Sequence[Span], gold: Sequence[Span]) -> float:
    """1 when every gold span lies inside the union of the retrieved chunks (chunks that touch join),
    else 0: the Day-1 grading of "the snippet was retrieved"."""
    return 0.0 if _missed(retrieved, _gold(gold)) else 1.0


def within_budget(spans: Sequence[Span], chars: int) -> list[Span]:
    """The retrieved chunks taken in rank order while their total length stays within `chars`, as an
    application fills its prompt: the first chunk that does not fit whole stops the filling (a shorter
    one after it is not taken)."""
    taken: list[Span] = []
    used = 0
    for span in spans:
        used += span.end - span.start
        if used > chars:
            break
        taken.append(span)
    return taken
