"""The span metrics' edge cases, decided once (scoring/spans.py), and their invariants on random spans.

Chroma's own values are the oracle in test_spans_chroma.py; here are the cases its data cannot
show: no retrieved chunk, no gold, grades, gold in several documents, the budget's rule.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_ragretrieval.evalset.records import Span
from pytest_ragretrieval.scoring.spans import (
    answer_hit,
    char_iou,
    char_precision,
    char_recall,
    within_budget,
)

Metric = Callable[[Sequence[Span], Sequence[Span]], float]
METRICS: tuple[Metric, ...] = (char_recall, char_precision, char_iou, answer_hit)
SETTINGS = settings(max_examples=300, deadline=None)
DOCS = ("a", "b")
LENGTH = 60


@pytest.mark.parametrize("metric", METRICS, ids=lambda m: m.__name__)
def test_a_question_without_gold_has_no_span_metric(metric: Metric) -> None:
    """A no-answer question (no span, or only grade-0 spans) is left out by the caller, as for recall."""
    chunks = [Span("a", 0, 10)]
    for gold in ([], [Span("a", 2, 5, grade=0)]):
        with pytest.raises(ValueError, match="no-answer question"):
            metric(chunks, gold)


def test_no_retrieved_chunk_scores_zero_on_every_metric() -> None:
    """Chroma divides by the retrieved length, 0 here; nothing retrieved delivers nothing: 0."""
    gold = [Span("a", 2, 5)]
    assert [metric([], gold) for metric in METRICS] == [0.0, 0.0, 0.0, 0.0]


def test_grades_only_say_which_spans_are_gold() -> None:
    """A grade-0 span is judged not to answer and counts nowhere; grade 2 weighs as grade 1."""
    chunks = [Span("a", 0, 10)]
    graded = [Span("a", 2, 6, grade=2), Span("a", 20, 30, grade=0)]
    plain = [Span("a", 2, 6)]
    for metric in METRICS:
        assert metric(chunks, graded) == metric(chunks, plain), metric.__name__
    assert char_recall(chunks, graded) == 1.0 and answer_hit(chunks, graded) == 1.0


def test_characters_are_matched_within_their_document() -> None:
    """A chunk of document b at the gold's offsets covers nothing of document a's span; its length
    still counts in precision (Chroma's denominator sums every retrieved chunk)."""
    gold = [Span("a", 0, 10), Span("b", 0, 10)]
    assert char_recall([Span("b", 0, 10)], gold) == 0.5
    assert char_precision([Span("a", 0, 10), Span("c", 0, 30)], gold) == 0.25
    assert char_iou([Span("b", 0, 10)], gold) == 0.5
    assert answer_hit([Span("b", 0, 10)], gold) == 0.0


def test_answer_hit_needs_every_gold_span_inside_the_chunks_union() -> None:
    """Two chunks that touch cover a span cut by their boundary; a one-character gap does not."""
    gold = [Span("a", 8, 14)]
    assert answer_hit([Span("a", 10, 20), Span("a", 0, 10)], gold) == 1.0
    assert answer_hit([Span("a", 0, 10), Span("a", 11, 20)], gold) == 0.0
    assert answer_hit([Span("a", 0, 20)], [*gold, Span("a", 30, 31)]) == 0.0


def test_overlapping_chunks_count_twice_in_precision_and_iou() -> None:
    """Sums, not unions: two chunks sharing 5 characters are 20 characters retrieved, not 15."""
    chunks = [Span("a", 0, 10), Span("a", 5, 15)]
    gold = [Span("a", 4, 8)]
    assert char_precision(chunks, gold) == 4 / 20
    assert char_iou(chunks, gold) == 4 / 20
    assert char_recall(chunks, gold) == 1.0


def test_a_chunk_too_long_for_the_budget_stops_the_filling() -> None:
    """The budget fills in rank order: a chunk that does not fit whole ends it, and a shorter chunk
    ranked after it is not taken (skipping would need a prompt filled out of rank order)."""
    first, long, short = Span("a", 0, 300), Span("a", 300, 900), Span("b", 0, 100)
    assert within_budget([first, long, short], 500) == [first]
    assert within_budget([first, short, long], 400) == [first, short]
    assert within_budget([long, first], 500) == []
    assert within_budget([first], 0) == []


spans_in_a_doc = st.tuples(st.sampled_from(DOCS), st.integers(0, LENGTH - 1), st.integers(1, LENGTH)).map(
    lambda t: Span(t[0], min(t[1], t[2] - 1), max(t[2], t[1] + 1)))
"""A span of positive length in one of the documents."""
chunk_lists = st.lists(spans_in_a_doc, max_size=8)
any_gold = st.lists(spans_in_a_doc, min_size=1, max_size=4)


@st.composite
def disjoint_gold(draw: st.DrawFn) -> list[Span]:
    """1-4 gold spans that do not overlap one another (they may touch), as one answer's pieces."""
    doc = draw(st.sampled_from(DOCS))
    cuts = sorted(draw(st.sets(st.integers(0, LENGTH), min_size=2, max_size=8)))
    pieces = [Span(doc, a, b) for a, b in zip(cuts, cuts[1:])]
    return draw(st.lists(st.sampled_from(pieces), min_size=1, max_size=4, unique=True))


@SETTINGS
@given(chunk_lists, any_gold)
def test_every_value_lies_in_zero_to_one(chunks: list[Span], gold: list[Span]) -> None:
    for metric in METRICS:
        assert 0.0 <= metric(chunks, gold) <= 1.0, metric.__name__
    assert char_iou(chunks, gold) <= char_precision(chunks, gold)


@SETTINGS
@given(chunk_lists, any_gold)
def test_recall_never_falls_as_k_grows(chunks: list[Span], gold: list[Span]) -> None:
    values = [char_recall(chunks[:k], gold) for k in range(len(chunks) + 1)]
    assert values == sorted(values)


@SETTINGS
@given(chunk_lists, disjoint_gold())
def test_iou_is_at_most_recall_and_precision(chunks: list[Span], gold: list[Span]) -> None:
    """By definition where the gold spans do not overlap: the IoU denominator then holds at least the
    gold's length and the chunks' length."""
    assert char_iou(chunks, gold) <= min(char_recall(chunks, gold), char_precision(chunks, gold))


@SETTINGS
@given(chunk_lists, disjoint_gold())
def test_an_answer_hit_is_full_recall(chunks: list[Span], gold: list[Span]) -> None:
    assert answer_hit(chunks, gold) == (1.0 if char_recall(chunks, gold) == 1.0 else 0.0)


def test_overlapping_gold_spans_count_their_shared_characters_twice() -> None:
    """Chroma's recall divides by the sum of the excerpts' lengths (test_spans_chroma.py's q10): two
    gold spans sharing characters cannot reach recall 1, though the answer was retrieved whole."""
    gold = [Span("a", 0, 10), Span("a", 5, 15)]
    chunks = [Span("a", 0, 20)]
    assert answer_hit(chunks, gold) == 1.0
    assert char_recall(chunks, gold) == 15 / 20


@SETTINGS
@given(chunk_lists, st.integers(0, 4 * LENGTH))
def test_the_budget_takes_the_longest_prefix_that_fits(chunks: list[Span], chars: int) -> None:
    taken = within_budget(chunks, chars)
    assert taken == chunks[: len(taken)]
    used = sum(span.end - span.start for span in taken)
    assert used <= chars
    if len(taken) < len(chunks):
        following = chunks[len(taken)]
        assert used + following.end - following.start > chars
