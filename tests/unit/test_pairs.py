"""Comparisons between configurations: default pairs, deltas, win/tie/loss, the two-sided test, and what is left out."""
from __future__ import annotations

from pathlib import Path

import pytest
from stages import GOOD, QUESTIONS, WORSE, config, ran

from pytest_ragretrieval.core.errors import ConfigError
from pytest_ragretrieval.evalset.records import Question
from pytest_ragretrieval.gate.pairs import compare_configurations, compare_pair, pairs
from pytest_ragretrieval.record.codec import to_document
from pytest_ragretrieval.record.report import conclusion
from pytest_ragretrieval.record.types import PairComparison
from pytest_ragretrieval.scoring.evaluate import RetrieverResult, Run, score
from pytest_ragretrieval.scoring.metrics import MetricSpec
from pytest_ragretrieval.scoring.stats import paired_test


def test_by_default_each_fused_or_reranked_retriever_meets_each_of_its_sources(tmp_path: Path) -> None:
    assert pairs(config(tmp_path)) == [("fused", "one"), ("fused", "two")]
    assert pairs(config(tmp_path, 'compare = [["two", "one"]]')) == [("two", "one")]
    assert pairs(config(tmp_path, "compare = []")) == []


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('"one"', "must be a list of [a, b] pairs of retriever names, got 'one'"),
        ('[["one"]]', "each entry must be a pair of retriever names [a, b], got ['one']"),
        ('[["one", "nope"]]', "'nope' is not a configured retriever; configured: fused, one, two"),
        ('[["one", "one"]]', "['one', 'one'] compares a retriever with itself or repeats a pair"),
        ('[["one", "two"], ["one", "two"]]', "['one', 'two'] compares a retriever with itself or repeats a pair"),
    ],
)
def test_bad_pairs_name_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str, message: str) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as error:
        config(tmp_path, f"compare = {value}")
    assert str(error.value) == f"rag.toml key 'compare': {message}"


SPECS = [MetricSpec("recall", 3)]
MANY = tuple(Question(f"q{i:02d}", f"text {i}", {"a": 1}) for i in range(12))


def result(name: str, hits: list[bool]) -> RetrieverResult:
    rankings = {q.id: ["a"] if hit else ["x"] for q, hit in zip(MANY, hits, strict=True)}
    return score(name, MANY, rankings, SPECS)


def test_delta_wins_ties_losses_and_a_two_sided_p() -> None:
    a = result("a", [True] * 9 + [False] * 3)
    b = result("b", [True] * 4 + [False] * 6 + [True, False])
    found = compare_pair(a, b, "recall@3", "randomization")
    assert (found.delta, found.wins, found.ties, found.losses) == (0.333333, 5, 6, 1)
    before = [1.0] * 4 + [0.0] * 6 + [1.0, 0.0]
    after = [1.0] * 9 + [0.0] * 3
    two_sided = paired_test(before, after, "randomization", alternative="two-sided")
    assert two_sided is not None and found.ci95 is not None
    assert found.p_value == two_sided.p_value and found.ci95 == two_sided.ci95
    # two-sided: the same p whichever side is a (a one-sided test would not say so)
    assert compare_pair(b, a, "recall@3", "randomization").p_value == found.p_value
    assert compare_pair(b, a, "recall@3", "randomization").delta == -0.333333
    assert to_document(found) == {"a": "a", "b": "b", "metric": "recall@3", "delta": 0.333333, "p_value": found.p_value,
                               "ci95": list(found.ci95), "wins": 5, "ties": 6, "losses": 1}


def test_identical_retrievers_tie_everywhere_with_p_one() -> None:
    a = result("a", [True, False] * 6)
    found = compare_pair(a, result("b", [True, False] * 6), "recall@3", "bootstrap")
    assert (found.delta, found.wins, found.ties, found.losses, found.p_value) == (0.0, 0, 12, 0, 1.0)


def test_a_whole_run_compares_every_pair_that_ran(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    runs = {"one": ran(cfg, "one", GOOD), "two": ran(cfg, "two", WORSE), "fused": ran(cfg, "fused", GOOD)}
    found = compare_configurations(cfg, runs)
    assert [(c.a, c.b, c.metric) for c in found.comparisons] == [
        ("fused", "one", "ndcg@3"), ("fused", "one", "recall@3"), ("fused", "two", "ndcg@3"), ("fused", "two", "recall@3"),
    ]
    assert found.method == "randomization" and found.notes == ()
    fused_two = found.comparisons[2]
    assert fused_two.wins == 2 and fused_two.losses == 0 and fused_two.ties == 0
    assert len(QUESTIONS) - 1 == fused_two.questions, "no-answer questions are not in answer metrics"


def test_a_pair_whose_retriever_did_not_run_is_noted_not_compared(tmp_path: Path) -> None:
    cfg = config(tmp_path, 'significance = "bootstrap"')
    runs = {"one": ran(cfg, "one", GOOD), "two": Run(skipped="no model"), "fused": ran(cfg, "fused", GOOD)}
    found = compare_configurations(cfg, runs)
    assert {(c.a, c.b) for c in found.comparisons} == {("fused", "one")} and found.method == "bootstrap"
    assert found.notes == ("fused vs two: not compared, two was skipped",)
    assert compare_configurations(cfg, {"one": runs["one"]}).notes == (), "unselected retrievers are not news"


def test_conclusions_read_as_the_tutorial_writes_them() -> None:
    group = [PairComparison("hybrid", "vector", "recall@5", -0.0336, 4, 41, 8, 0.41, (-0.08, 0.01)),
             PairComparison("hybrid", "vector", "ndcg@5", -0.0597, 7, 27, 19, 0.0459, (-0.11, -0.01))]
    assert conclusion(group, 0.05) == (
        "hybrid vs vector: recall@5 -0.0336 (p = 0.4100, not significant), ndcg@5 -0.0597 (p = 0.0459, significant)"
    )
