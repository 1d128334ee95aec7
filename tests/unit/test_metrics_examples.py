"""Worked examples: the tutorial's hand calculations, plus the edge cases trec_eval decides.

The tutorial (week 15, day 5) prints its results to 2 decimals, so those are compared the same
way; the other examples are exact or computed from the arithmetic written next to them.
"""
from __future__ import annotations

import math

import pytest

from pytest_ragretrieval.scoring.metrics import (
    MetricSpec,
    ann_overlap,
    average_precision,
    f1,
    mrr,
    ndcg,
    precision,
    recall,
)

TRAVEL = {"12": 1, "34": 1}
TOP5 = ["12", "88", "91", "34", "7"]


def two_decimals(value: float) -> str:
    """Print a score as the tutorial does."""
    return f"{value:.2f}"


def test_tutorial_precision_recall_f1() -> None:
    """relevant {12, 34}, top5 [12, 88, 91, 34, 7]: 2 hits of 5 slots, both relevant found."""
    assert two_decimals(precision(TOP5, TRAVEL, 5)) == "0.40"
    assert two_decimals(recall(TOP5, TRAVEL, 5)) == "1.00"
    assert two_decimals(f1(TOP5, TRAVEL, 5)) == "0.57"


@pytest.mark.parametrize(
    ("ranking", "expected"),
    [
        (["12", "34", "88", "91", "7"], "1.00"),
        (["12", "88", "91", "34", "7"], "0.88"),
        (["7", "88", "91", "12", "34"], "0.50"),
    ],
    ids=["A-ranks-1-2", "B-ranks-1-4", "C-ranks-4-5"],
)
def test_tutorial_ndcg_rewards_position(ranking: list[str], expected: str) -> None:
    """Same hits, same P/R/F1, but nDCG@5 drops as the relevant chunks sink."""
    assert precision(ranking, TRAVEL, 5) == precision(TOP5, TRAVEL, 5)
    assert two_decimals(ndcg(ranking, TRAVEL, 5)) == expected


def test_tutorial_self_test() -> None:
    """relevant {A, B, C}, top5 [B, X, A, Y, Z]: P 2/5, R 2/3, F1 = 2PR/(P+R) = 0.5."""
    relevance = {"A": 1, "B": 1, "C": 1}
    ranking = ["B", "X", "A", "Y", "Z"]
    assert two_decimals(precision(ranking, relevance, 5)) == "0.40"
    assert two_decimals(recall(ranking, relevance, 5)) == "0.67"
    assert two_decimals(f1(ranking, relevance, 5)) == "0.50"


def test_graded_ndcg_uses_the_grade_as_gain() -> None:
    """Gain is the grade itself (not 2^g - 1), discounted by log2(rank + 1)."""
    relevance = {"a": 3, "b": 2, "c": 1, "n": 0}
    # DCG@3 of [b, x, a]  = 2/log2(2) + 0/log2(3) + 3/log2(4) = 2 + 0 + 1.5       = 3.5
    # IDCG@3 of [a, b, c] = 3/log2(2) + 2/log2(3) + 1/log2(4) = 3 + 1.26186 + 0.5 = 4.76186
    # nDCG@3 = 3.5 / 4.76186 = 0.73501
    score = ndcg(["b", "x", "a"], relevance, 3)
    assert score == pytest.approx((2 / 1 + 3 / 2) / (3 / 1 + 2 / math.log2(3) + 1 / 2), abs=1e-12)
    assert f"{score:.4f}" == "0.7350"


def test_ranking_shorter_than_k() -> None:
    """Missing slots count as misses: P divides by k and the ideal DCG is still cut at k."""
    relevance = {"a": 1, "b": 1, "c": 1}
    assert precision(["a"], relevance, 5) == 1 / 5
    assert recall(["a"], relevance, 5) == 1 / 3
    # DCG = 1/log2(2) = 1; IDCG@5 holds all 3 relevant: 1 + 1/log2(3) + 1/log2(4) = 2.13093
    assert ndcg(["a"], relevance, 5) == pytest.approx(1 / (1 + 1 / math.log2(3) + 1 / 2), abs=1e-12)


def test_ideal_dcg_is_cut_at_k() -> None:
    """With more relevant chunks than k, a top k full of them is already ideal."""
    relevance = dict.fromkeys("abcdef", 1)
    assert ndcg(["a", "b"], relevance, 2) == pytest.approx(1.0, abs=1e-12)
    # IDCG@2 = 1 + 1/log2(3), never the 6-document ideal: one of two slots filled scores 0.6131.
    assert ndcg(["a"], relevance, 2) == pytest.approx(1 / (1 + 1 / math.log2(3)), abs=1e-12)


def test_mrr_is_cut_at_k() -> None:
    """A first relevant chunk below rank k earns nothing at k, its reciprocal rank beyond it."""
    ranking = ["x", "y", "z", "a"]
    relevance = {"a": 1}
    assert mrr(ranking, relevance, 3) == 0.0
    assert mrr(ranking, relevance, 4) == 1 / 4


def test_map_cut_divides_by_all_relevant() -> None:
    """Relevant chunks never retrieved in the top k still count in the denominator."""
    relevance = {"a": 1, "b": 1, "c": 1, "d": 1}
    # precision at each hit: a@1 = 1/1, b@3 = 2/3; summed 5/3, over 4 relevant (not 2 found).
    expected = (1 / 1 + 2 / 3) / 4
    assert average_precision(["a", "x", "b"], relevance, 3) == pytest.approx(expected, abs=1e-12)


def test_metric_spec_uses_the_default_cutoff() -> None:
    """A bare name takes the configured k."""
    spec = MetricSpec.parse("ndcg", 5)
    assert spec == MetricSpec("ndcg", 5)
    assert spec.label == "ndcg@5"


def test_metric_spec_explicit_cutoff_wins() -> None:
    """`name@k` overrides the default and scores with that k."""
    spec = MetricSpec.parse("recall@20", 5)
    assert spec == MetricSpec("recall", 20)
    assert MetricSpec.parse("precision@5", 10).score(TOP5, TRAVEL) == precision(TOP5, TRAVEL, 5)


@pytest.mark.parametrize("text", ["bogus", "ndcg@0", "ndcg@", "@5", "recall@-1"])
def test_metric_spec_rejects_bad_labels(text: str) -> None:
    """Unknown names and non-positive cutoffs are configuration errors, reported up front."""
    with pytest.raises(ValueError):
        MetricSpec.parse(text, 5)


# ann_recall's share per query (ann_overlap): the exact top 3 at cosine distances 0.10, 0.20, 0.30.
EXACT = [("a", 0.10), ("b", 0.20), ("c", 0.30)]


@pytest.mark.parametrize(("found", "epsilon", "share"), [
    ([("a", 0.10), ("b", 0.20), ("c", 0.30)], 1e-4, 1.0),          # the same top 3
    ([("a", 0.10), ("b", 0.20), ("d", 0.30)], 0.0, 1.0),           # d ties c exactly: a swap, no miss
    ([("a", 0.10), ("b", 0.20), ("d", 0.30009)], 1e-4, 1.0),       # 0.00009 from the 3rd: within 1e-4
    ([("a", 0.10), ("b", 0.20), ("d", 0.30011)], 1e-4, 2 / 3),     # 0.00011 from the 3rd: just outside, a miss
    ([("a", 0.10), ("d", 0.30005), ("e", 0.30008)], 1e-4, 1.0),    # two ties for b and c
    ([("a", 0.10), ("d", 0.30005), ("e", 0.4)], 1e-4, 2 / 3),      # one tie, one real miss
    ([("d", 0.30011), ("e", 0.5), ("f", 0.6)], 0.0, 0.0),          # nothing of the exact top 3, no tie
])
def test_ann_overlap_counts_a_swap_within_epsilon_of_the_exact_kth_as_no_miss(
    found: list[tuple[str, float]], epsilon: float, share: float
) -> None:
    assert ann_overlap(found, EXACT, epsilon) == pytest.approx(share, abs=1e-12)


def test_ann_overlap_without_an_exact_top_k_is_refused() -> None:
    with pytest.raises(ValueError, match="needs the exact top k"):
        ann_overlap([("a", 0.1)], [], 1e-4)
