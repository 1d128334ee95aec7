"""Weighted Reciprocal Rank Fusion, computed by hand: score = sum of weight / (rrf_k + rank)."""
from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from projects import retriever

from pytest_ragretrieval.config.settings import Config, load_config
from pytest_ragretrieval.core.errors import ConfigError
from pytest_ragretrieval.retrievers.hybrid import HybridRetriever, fuse
from pytest_ragretrieval.retrievers.protocol import Query, Retriever

RANKINGS = [["a", "b"], ["b", "c"]]


@pytest.mark.parametrize(
    ("weights", "expected"),
    [
        # a 1/61 = .016393; b 1/62 + 1/61 = .032522; c 1/62 = .016129
        (None, ["b", "a", "c"]),
        # a 1/61 = .016393; b 1/62 + .5/61 = .024326; c .5/62 = .008065
        ([1.0, 0.5], ["b", "a", "c"]),
        # a 1/61 = .016393; b 1/62 + 3/61 = .065310; c 3/62 = .048387
        ([1.0, 3.0], ["b", "c", "a"]),
        # a .1/61 = .001639; b .1/62 + 2/61 = .034399; c 2/62 = .032258
        ([0.1, 2.0], ["b", "c", "a"]),
    ],
)
def test_weighted_rrf_by_hand(weights: list[float] | None, expected: list[str]) -> None:
    assert fuse(RANKINGS, 60, weights) == expected


def test_a_heavier_source_overtakes_a_shared_hit() -> None:
    """x: 1/61 (first of source 1); y: 3/62 (second of source 2) beats it only with weight 3."""
    assert fuse([["x"], ["z", "y"]], 60) == ["x", "z", "y"]
    assert fuse([["x"], ["z", "y"]], 60, [1, 3]) == ["z", "y", "x"]


def test_equal_sums_tie_exactly_and_break_by_id() -> None:
    """a: .1/61 + .1/62, b: .1/62 + .1/61: equal in exact arithmetic (not in floats), so the smaller id wins."""
    assert fuse([["b", "a"], ["a", "b"]], 60, [0.1, 0.1]) == ["a", "b"]
    assert fuse([["b", "a"], ["a", "b"]], 60, [0.3, 0.3]) == ["a", "b"]


def test_the_retriever_asks_each_source_for_depth_and_cuts_to_k() -> None:
    asked: list[tuple[str, int]] = []

    def source(ids: list[str]) -> Retriever:
        def retrieve(query: str, k: int) -> list[str]:
            asked.append((query, k))
            return ids[:k]
        return retrieve

    hybrid = HybridRetriever([source(["a", "b", "c"]), source(["c", "d"])], depth=2, rrf_k=60, weights=[1.0, 2.0])
    # a 1/61, b 1/62 from the first; c 2/61, d 2/62 from the second (weight 2)
    assert hybrid("q", 2) == ["c", "d"]
    assert hybrid.ask(Query("q01", "q"), 3) == ["c", "d", "a"]
    assert asked == [("q", 2)] * 4


def config(tmp_path: Path, lines: str) -> Config:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.ragretrieval]\nchunks = "c.jsonl"\nevalset = "e.jsonl"\n'
        + retriever("a", "bm25") + retriever("b", "bm25") + retriever("h", "hybrid", sources=["a", "b"]) + f"{lines}\n",
        encoding="utf-8",
    )
    return load_config(None, tmp_path)


def test_weights_join_the_parameters_only_when_they_differ(tmp_path: Path) -> None:
    """Equal weights rank exactly like none: existing baselines stay comparable."""
    plain = config(tmp_path, "").retriever("h").params
    assert plain == {"sources": ["a", "b"], "depth": 10, "rrf_k": 60}
    assert config(tmp_path, "weights = [2, 2]").retriever("h").params == plain
    assert config(tmp_path, "weights = [1, 0.5]").retriever("h").params == {**plain, "weights": [1.0, 0.5]}


@pytest.mark.parametrize("weights", ["[1]", "[1, 0]", "[1, -1]", '[1, "2"]', "[1, true]", "0.5"])
def test_bad_weights_name_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, weights: str) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as error:
        config(tmp_path, f"weights = {weights}")
    assert str(error.value).startswith(
        "pyproject.toml [tool.ragretrieval.retrievers.h] key 'weights': must be 2 numbers > 0, one per source"
    )


def fuse_in_fractions(rankings: list[list[str]], rrf_k: int, weights: list[float] | None) -> list[str]:
    """The definition, summed as fractions: the reference the integer sums must order alike."""
    factors = [Fraction(str(w)) for w in weights] if weights is not None else [Fraction(1)] * len(rankings)
    scores: dict[str, Fraction] = {}
    for factor, ranking in zip(factors, rankings, strict=True):
        for rank, chunk_id in enumerate(ranking, start=1):
            scores[chunk_id] = scores.get(chunk_id, Fraction(0)) + factor / (rrf_k + rank)
    return sorted(scores, key=lambda chunk_id: (-scores[chunk_id], chunk_id))


@given(
    st.lists(st.lists(st.sampled_from([f"c{i}" for i in range(25)]), unique=True, max_size=25), min_size=2, max_size=3),
    st.sampled_from([0, 1, 2, 60]),
    st.one_of(st.none(), st.lists(st.sampled_from([0.1, 0.25, 0.3, 0.5, 1.0, 2.0, 3.7]), min_size=3, max_size=3)),
)
def test_integer_sums_order_exactly_as_fractions(rankings: list[list[str]], rrf_k: int, weights: list[float] | None) -> None:
    chosen = weights[: len(rankings)] if weights is not None else None
    assert fuse(rankings, rrf_k, chosen) == fuse_in_fractions(rankings, rrf_k, chosen)
