"""Three outcomes over clusters (issue 50 items 2 and 3): the lower bound draws whole clusters, the clusters
that would decide an item, the clusters a comparison was judged over, and the adjustment line when clusters
leave every item to the tolerance. Without clusters nothing changes."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from msgspec import UNSET
from stages import fingerprint
from test_clusters import EIGHT, KEYS, asked, config, recorded, result, values

from pytest_ragretrieval.gate.judge import Judge
from pytest_ragretrieval.record.codec import to_document
from pytest_ragretrieval.record.report import ReportInput, RetrieverView
from pytest_ragretrieval.record.types import Comparison, Finding, ItemOutcome
from pytest_ragretrieval.report.terminal import adjustment_line
from pytest_ragretrieval.report.wording import inconclusive_lines
from pytest_ragretrieval.scoring.evaluate import Run
from pytest_ragretrieval.scoring.margin import LARGE, clusters_needed, lower_bound, questions_needed
from pytest_ragretrieval.scoring.stats import labels

BLOCKS = [[-1, -1, -1, 0], [1, 1, 0, 1], [0, 0, 0, 0], [-1, 0, -1, 0], [1, 0, 1, 0], [0, 0, 0, 0],
          [-1, -1, 0, 0], [1, 1, 0, 0]]
"""8 documents of 4 questions, a hit metric's differences moving together within a document; mean 0."""
DATA = np.array([value for block in BLOCKS for value in block], dtype=float)
CLUSTERS = np.repeat(np.arange(8), 4)


def cluster_bootstrap(sums: np.ndarray, sizes: np.ndarray, sets: np.ndarray, resamples: int = 2000) -> np.ndarray:
    """Independently of the code under test: for each row of `sets` (cluster indices drawn into an eval set),
    the 5% quantile of its cluster bootstrap means (clusters redrawn with replacement, one count matrix shared)."""
    rng = np.random.default_rng(20261208)
    size = sets.shape[1]
    counts = np.zeros((resamples, size))
    np.add.at(counts, (np.arange(resamples)[:, None], rng.integers(0, size, (resamples, size))), 1)
    means = (counts @ sums[sets].T) / (counts @ sizes[sets].T)
    lows: np.ndarray = np.percentile(means, 5, axis=0)
    return lows


def test_the_lower_bound_draws_whole_clusters() -> None:
    """Questions that move together: the bound over 8 documents is the cluster bootstrap's 5% quantile (an
    independent one within 0.02) and well below the bound question by question, which treats 32 questions
    as 32 pieces of evidence."""
    sums = np.array([sum(block) for block in BLOCKS], dtype=float)
    clustered = lower_bound(DATA.tolist(), 0.05, CLUSTERS)
    alone = lower_bound(DATA.tolist(), 0.05)
    assert clustered is not None and alone is not None
    independent = cluster_bootstrap(sums, np.full(8, 4.0), np.arange(8)[None, :])[0]
    assert clustered == pytest.approx(independent, abs=0.02)
    assert clustered < alone - 0.05
    assert lower_bound(DATA.tolist(), 0.05, labels([f"q{i}" for i in range(32)])) == alone  # each its own: None


def test_from_800_clusters_the_bound_is_the_cluster_bootstraps_normal_limit() -> None:
    """799 clusters of 2 questions drawn by the bootstrap against 800 (a cluster of two 0s added) by the
    normal limit of the ratio mean: within a tenth of the standard error."""
    rng = np.random.default_rng(3)
    count = LARGE - 1
    data = rng.choice(np.array([-1.0, 0.0, 1.0, 0.0, 0.0]), 2 * count)
    drawn = lower_bound(data.tolist(), 0.05, np.repeat(np.arange(count), 2))
    normal = lower_bound([*data.tolist(), 0.0, 0.0], 0.05, np.repeat(np.arange(count + 1), 2))
    sums = data.reshape(count, 2).sum(axis=1)
    assert drawn is not None and normal is not None
    assert abs(drawn - normal) < 0.1 * float(np.std(sums)) / 2 / np.sqrt(count)


def test_the_clusters_needed_are_within_ten_percent_of_a_simulated_80_percent_power() -> None:
    """24 documents (the 8 patterns three times) at margin 0.2: the 96 questions alone would want 69
    questions; the documents' spread wants 43 documents like these (172 questions). Eval sets of 0.9 and 1.1
    times that many documents, drawn from the 24, straddle 80% power of the cluster bootstrap's bound at or
    above -0.2 (with 8 observed documents the sample sd, over G - 1, overstates the 8's own spread by 7%)."""
    data = np.tile(DATA, 3)
    clusters = np.repeat(np.arange(24), 4)
    assert questions_needed(data.tolist(), 0.2, 0.05) == 69
    needed = clusters_needed(data.tolist(), 0.2, 0.05, clusters)
    assert needed == 43  # ((1.6449 + 0.8416) * sqrt(3 * 2.125 / 23) / 0.2)^2 = 42.85, rounded up
    sums = np.array([sum(block) for block in BLOCKS] * 3, dtype=float)
    rng = np.random.default_rng(7)

    def power(count: int) -> float:
        sets = rng.integers(0, 24, (3000, count))
        return float(np.mean(cluster_bootstrap(sums, np.full(24, 4.0), sets) >= -0.2 - 1e-9))

    assert power(int(0.9 * needed)) < 0.8 < power(math.ceil(1.1 * needed))


def test_each_question_its_own_cluster_needs_what_questions_need() -> None:
    own = np.arange(32)
    assert clusters_needed(DATA.tolist(), 0.25, 0.05, own) == questions_needed(DATA.tolist(), 0.25, 0.05)
    assert clusters_needed([0.0] * 32, 0.25, 0.05, CLUSTERS) is None
    assert clusters_needed(DATA.tolist(), 0.25, 0.05, np.zeros(32, dtype=np.int64)) is None  # one cluster


def judged(tmp_path: Path, clusters: list[str]) -> Comparison:
    cfg = config(tmp_path)
    questions = asked(clusters)
    bar = {"ndcg@3": values({}), "recall@3": values({})}
    now = {"ndcg@3": values({0: 0.25, 1: 0.25, 2: 0.25, 9: -0.25}), "recall@3": values({})}
    ids = [q.id for q in questions]
    judge = Judge(cfg, questions, recorded(cfg, questions, bar), fingerprint(cfg, questions),
                  {"one": Run(result=result(now, ids))}, selected=KEYS)
    found = judge.comparison("one", "ndcg@3")
    assert found is not None
    if found.clusters == 8:  # the line docs/verdicts.md shows
        assert judge.outcome(KEYS[0]).details[-1] == (
            "inconclusive: the one-sided 95% lower bound of the difference over its 8 clusters (whole clusters "
            "drawn), -0.0625, is below -0.0200 (margin): a drop of the margin is not ruled out; about 2524 questions "
            "would decide it (80% power at the margin, at the observed mean and spread), or about 1713 clusters like "
            "these (at their observed spread)")
    return found


def test_a_comparison_carries_its_clusters_only_where_clusters_are_defined(tmp_path: Path) -> None:
    """Over 8 documents the comparison says 8 clusters and the documents that would decide it, its bound the
    clusters'; each question its own, no key is written, so a results file without clusters is unchanged."""
    found = judged(tmp_path, EIGHT)
    assert found.clusters == 8 and isinstance(found.needed_clusters, int)
    document = to_document(found)
    assert document["clusters"] == 8 and document["needed_clusters"] == found.needed_clusters
    alone = judged(tmp_path, [f"own-{i}" for i in range(32)])
    assert alone.clusters is UNSET and alone.needed_clusters is UNSET
    assert "clusters" not in to_document(alone) and "needed_clusters" not in to_document(alone)
    assert alone.lower is not None and found.lower is not None and found.lower < alone.lower


def test_the_inconclusive_line_names_the_clusters_that_would_decide_it() -> None:
    """The terminal's (and every report's) inconclusive line adds the clusters where the item has them; an
    outcome without clusters writes no key and reads as before."""
    clustered = ItemOutcome("rag::r::ndcg@5", "r", "ndcg@5", Finding.INCONCLUSIVE, "today", -0.01, 0.4, True, 120, 31)
    plain = ItemOutcome("rag::s::ndcg@5", "s", "ndcg@5", Finding.INCONCLUSIVE, "today", -0.01, 0.4, True, 120)
    data = ReportInput(k=5, metrics=("ndcg@5",), definitions={}, questions=(), chunks={}, retrievers=(),
                       embedder="", rerankers=(), database="", baseline_path="b.json", comparable=True,
                       language="en", outcomes=(clustered, plain))
    assert inconclusive_lines(data) == [
        "inconclusive: ndcg@5 of r passes: a drop of its margin is not ruled out; about 120 questions (or about 31 "
        "clusters like these) would decide it",
        "inconclusive: ndcg@5 of s passes: a drop of its margin is not ruled out; about 120 questions would decide it"]
    assert to_document(clustered)["needed_clusters"] == 31 and "needed_clusters" not in to_document(plain)


def report(*comparisons: Comparison) -> ReportInput:
    views = tuple(RetrieverView(name=f"r{i}", type="bm25", status="ran", comparisons={"ndcg@5": c})
                  for i, c in enumerate(comparisons))
    return ReportInput(k=5, metrics=("ndcg@5",), definitions={}, questions=(), chunks={}, retrievers=views,
                       embedder="", rerankers=(), database="", baseline_path="b.json", comparable=True,
                       language="en", significance="randomization", adjustment="maxt", family=0)


def test_clusters_that_leave_every_item_to_the_tolerance_are_not_called_unmoved() -> None:
    """4 documents allow no p below alpha: no item was tested, which the line says instead of claiming that
    nothing moved; where nothing moved it says so as before."""
    untested = Comparison(0.8, 0.7, -0.1, questions=12, clusters=4)
    assert adjustment_line(report(untested, untested)) == (
        "p-values of a randomization test (alpha 0.05): no metric item was tested: their clusters allow no p "
        "below alpha, and each was judged by the tolerance alone, so none was adjusted")
    still = Comparison(0.8, 0.8, 0.0, questions=12, p_value=1.0)
    assert "1 metric item judged by the tolerance alone (their clusters allow no p below alpha), the others " \
           "moved on no question" in adjustment_line(report(untested, still))
    assert adjustment_line(report(still)) == (
        "p-values of a randomization test (alpha 0.05): no metric item moved on any question, so none was adjusted")
