"""Property tests: on random small cases our metrics equal pytrec_eval's, and keep their invariants.

pytrec_eval (package pytrec-eval-terrier) wraps trec_eval's own C code, so agreeing with it on
arbitrary judgments, rankings and cutoffs is agreeing with trec_eval beyond its test files.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_ragretrieval.scoring.metrics import (
    METRICS,
    average_precision,
    f1,
    hit_rate,
    mrr,
    ndcg,
    precision,
    recall,
)

Metric = Callable[[Sequence[str], Mapping[str, int], int], float]

SETTINGS = settings(max_examples=250, deadline=None)
RANKING_METRICS = [name for name, metric in METRICS.items() if not metric.spans]
"""The metrics of a ranking; the span metrics' properties are tests/unit/test_spans.py's."""


class Case(NamedTuple):
    ranking: list[str]
    relevance: dict[str, int]
    k: int


@st.composite
def cases(draw: st.DrawFn) -> Case:
    """A corpus of 1-30 ids, some judged 0-3, and a ranking that may hold unjudged ids."""
    corpus = [f"d{i}" for i in range(draw(st.integers(1, 30)))]
    # Lengths are drawn explicitly: plain st.lists would keep most rankings a few ids long.
    judged = draw(st.permutations(corpus))[: draw(st.integers(1, len(corpus)))]
    grades = draw(st.lists(st.integers(0, 3), min_size=len(judged), max_size=len(judged)))
    ranking = draw(st.permutations(corpus))[: draw(st.integers(0, len(corpus)))]
    return Case(list(ranking), dict(zip(judged, grades)), draw(st.integers(1, 20)))


def trec_eval(case: Case, measure: str, ranking: Sequence[str] | None = None) -> float:
    """pytrec_eval's value of `measure` (e.g. 'P.5') for one query.

    Scores fall strictly along the ranking, so trec_eval's own tie rule never reorders it.
    """
    ranking = case.ranking if ranking is None else ranking
    run = {"q": {chunk_id: float(len(ranking) - rank) for rank, chunk_id in enumerate(ranking)}}
    evaluator = pytrec_eval.RelevanceEvaluator({"q": dict(case.relevance)}, {measure})
    return evaluator.evaluate(run)["q"][measure.replace(".", "_")]


# trec_eval measure family -> our function; each is evaluated as `family.k`.
AGREEING: dict[str, Metric] = {
    "P": precision,
    "recall": recall,
    "ndcg_cut": ndcg,
    "map_cut": average_precision,
    "success": hit_rate,
}


@pytest.mark.parametrize("family", list(AGREEING))
@SETTINGS
@given(case=cases())
def test_agrees_with_pytrec_eval(family: str, case: Case) -> None:
    """Our metric@k equals trec_eval's `family_k` on arbitrary graded judgments."""
    ours = AGREEING[family](case.ranking, case.relevance, case.k)
    assert ours == pytest.approx(trec_eval(case, f"{family}.{case.k}"), abs=1e-9, rel=0)


@SETTINGS
@given(case=cases())
def test_mrr_is_recip_rank_of_the_top_k(case: Case) -> None:
    """trec_eval's recip_rank has no cutoff; on the run cut to k it is our mrr@k."""
    expected = trec_eval(case, "recip_rank", case.ranking[: case.k])
    assert mrr(case.ranking, case.relevance, case.k) == pytest.approx(expected, abs=1e-9, rel=0)


@pytest.mark.parametrize("name", [name for name in RANKING_METRICS if name != "judged"])  # judged: counts grade 0 (test_judged.py)
@pytest.mark.parametrize(
    "relevance",
    [{}, {"a": 0, "b": 0}],
    ids=["nothing-judged", "all-judged-irrelevant"],
)
def test_zero_without_a_relevant_chunk(name: str, relevance: dict[str, int]) -> None:
    """A question with no relevant chunk scores 0, not a division error or 1."""
    assert METRICS[name](["a", "b", "c"], relevance, 3) == 0.0


ANSWER_METRICS = [name for name in RANKING_METRICS if not METRICS[name].no_answer]


@pytest.mark.parametrize("name", ANSWER_METRICS)
def test_zero_for_an_empty_ranking(name: str) -> None:
    """Retrieving nothing scores 0 even when relevant chunks exist."""
    assert METRICS[name]([], {"a": 1, "b": 3}, 5) == 0.0


@pytest.mark.parametrize("name", RANKING_METRICS)
@SETTINGS
@given(case=cases())
def test_in_unit_interval(name: str, case: Case) -> None:
    """Every metric is a share or a normalised score, so it lies in [0, 1]."""
    assert 0.0 <= METRICS[name](case.ranking, case.relevance, case.k) <= 1.0


@pytest.mark.parametrize("name", RANKING_METRICS)
@SETTINGS
@given(case=cases(), tail=st.lists(st.integers(0, 60), unique=True, max_size=10))
def test_depends_only_on_the_first_k(name: str, case: Case, tail: list[int]) -> None:
    """Whatever follows rank k, including relevant chunks, does not change the score at k."""
    head = case.ranking[: case.k]
    pool = [*case.relevance, *(f"t{i}" for i in tail)]
    # Only a full top k has a "below rank k"; a shorter ranking is compared with itself cut.
    other = head + [c for c in pool if c not in head] if len(head) == case.k else head
    metric = METRICS[name]
    assert metric(other, case.relevance, case.k) == metric(head, case.relevance, case.k)
    assert metric(case.ranking, case.relevance, case.k) == metric(head, case.relevance, case.k)


@SETTINGS
@given(case=cases())
def test_f1_is_harmonic_mean_of_precision_and_recall(case: Case) -> None:
    """f1 is built from this question's own precision@k and recall@k, 0 when both are 0."""
    p = precision(case.ranking, case.relevance, case.k)
    r = recall(case.ranking, case.relevance, case.k)
    expected = 2 * p * r / (p + r) if p + r else 0.0
    assert f1(case.ranking, case.relevance, case.k) == pytest.approx(expected, abs=1e-12, rel=0)


@SETTINGS
@given(case=cases())
def test_ndcg_of_the_ideal_ordering_is_one(case: Case) -> None:
    """Ranking the relevant chunks by grade, best first, is what nDCG normalises by."""
    relevant = [c for c, grade in case.relevance.items() if grade > 0]
    ideal = sorted(relevant, key=lambda c: -case.relevance[c])
    extra = [c for c in case.ranking if c not in ideal]
    expected = 1.0 if ideal else 0.0
    assert ndcg(ideal + extra, case.relevance, case.k) == pytest.approx(expected, abs=1e-12, rel=0)
    assert math.isclose(ndcg(ideal, case.relevance, case.k), expected, abs_tol=1e-12)
