"""A baseline must agree with itself: k and fingerprint.yardstick.k, metric keys that parse, an entry
with its fingerprint, rankings no deeper than a run records,
a retriever either recorded or unavailable. Each contradiction is one line naming both JSON paths."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from stages import document, retriever_entry

from pytest_ragretrieval.baseline.format import dumps, parse
from pytest_ragretrieval.core.errors import BaselineError
from pytest_ragretrieval.evalset.records import Question
from pytest_ragretrieval.scoring.evaluate import score
from pytest_ragretrieval.scoring.metrics import MetricSpec

QUESTIONS = (Question("q1", "a", {"c1": 1}), Question("q2", "b", {"c2": 1}))


def doc(k: int = 2, cutoffs: tuple[int, ...] = (), rankings: dict[str, list[str]] | None = None) -> dict[str, Any]:
    specs = (MetricSpec("ndcg", k), *(MetricSpec("recall", cut) for cut in cutoffs))
    found = rankings or {"q1": ["c2", "c1"], "q2": ["c2"]}
    result = score("bm25", QUESTIONS, found, specs)
    return document(k, {"yardstick": {"k": k}, "retrievers": {"bm25": {"type": "bm25"}}},
                    {"bm25": retriever_entry(result)})


def error(data: dict[str, Any]) -> str:
    with pytest.raises(BaselineError) as raised:
        parse(Path("b.json"), dumps(data))
    assert "\n" not in str(raised.value)
    return str(raised.value)


def test_a_consistent_file_reads() -> None:
    assert parse(Path("b.json"), dumps(doc())).k == 2


def test_k_disagreeing_with_the_yardstick_names_both() -> None:
    """Issue 32: a top-level k of 7 beside a yardstick k of 5 was read, the check looking at a key no file has."""
    data = doc()
    data["fingerprint"]["yardstick"]["k"] = 3
    assert error(data).startswith(
        "b.json: k = 2 disagrees with fingerprint.yardstick.k = 3; one run writes both; fix it, or delete it")


def test_k_disagreeing_with_a_format_1_fingerprint_names_it() -> None:
    data = doc()
    data.update(format_version=1, fingerprint={"k": 3, "metrics_version": 1, "retrievers": {"bm25": {}}})
    assert error(data).startswith("b.json: k = 2 disagrees with fingerprint.k = 3; one run writes both")


@pytest.mark.parametrize("key", ["ndcg@²", "ndcg@" + "9" * 5001, "ndcg@", "ndcg@0", "ndcg@05", "NDCG@5", "@5",
                                 "ndcg@1000000000", "ndcg@5 "])
@pytest.mark.parametrize("where", ["metrics", "tags", "question"])
def test_a_metric_key_that_does_not_parse_is_damage(key: str, where: str) -> None:
    """Issue 32: `ndcg@²` or a cutoff of 5,001 digits ended in an internal error; now one line naming the place."""
    data = doc()
    entry = data["retrievers"]["bm25"]
    target = {"metrics": entry["metrics"], "tags": entry["tags"].setdefault("t", {}),
              "question": entry["questions"]["q1"]["metrics"]}[where]
    target[key] = 0.5
    line = error(data)
    assert "is not a metric key: a lower-case name" in line and len(line) < 400, line


def test_a_bar_key_that_does_not_parse_is_damage() -> None:
    data = doc()
    data["retrievers"]["bm25"]["bar"] = {"ndcg@²": {"q1": 0.5}}
    assert "retrievers.bm25.bar key 'ndcg@²' is not a metric key" in error(data)


@pytest.mark.parametrize("bar, problem", [
    ({"ndcg@2": {"q9": 0.5}}, "retrievers.bm25.bar.ndcg@2.q9 is a bar value of no recorded value"),
    ({"recall@2": {"q1": 0.5}}, "retrievers.bm25.bar.recall@2.q1 is a bar value of no recorded value"),
    ({"ndcg@2": {"q1": 1.5}}, "retrievers.bm25.bar.ndcg@2.q1 = 1.5 is not a finite number in [0, 1]"),
    ({"ndcg@2": {"q1": "0.5"}}, "retrievers.bm25.bar.ndcg@2 must map question ids to numbers"),
    ({"ndcg@2": {"q1": True}}, "retrievers.bm25.bar.ndcg@2 must map question ids to numbers"),
    ({"ndcg@2": []}, "retrievers.bm25.bar.ndcg@2 must map question ids to numbers"),
    ([], "retrievers.bm25.bar must map metric names to objects"),
])
def test_a_damaged_bar_is_named(bar: Any, problem: str) -> None:
    data = doc()
    data["retrievers"]["bm25"]["bar"] = bar
    assert error(data).startswith(f"b.json: {problem}"), error(data)


def test_an_entry_without_its_fingerprint_is_damage() -> None:
    """Issue 32: a refused update on such a file removed the entry; the next update then recorded lower values."""
    data = doc()
    del data["fingerprint"]["retrievers"]["bm25"]
    assert error(data).startswith("b.json: retrievers.bm25 has no fingerprint.retrievers.bm25")


def test_a_ranking_deeper_than_k_is_refused() -> None:
    data = doc(rankings={"q1": ["c2", "c1", "c3"], "q2": ["c2"]})
    assert error(data).startswith(
        "b.json: retrievers.bm25.questions.q1.ranking holds 3 ids, more than the 2 that k and the entry's cutoffs ask for"
    )


def test_a_metric_cutoff_beyond_k_allows_that_depth() -> None:
    data = doc(cutoffs=(3,), rankings={"q1": ["c2", "c1", "c3"], "q2": ["c2"]})
    assert parse(Path("b.json"), dumps(data)).retrievers["bm25"].questions["q1"].ranking == ("c2", "c1", "c3")
    data["retrievers"]["bm25"]["questions"]["q1"]["ranking"].append("c4")
    assert "holds 4 ids, more than the 3" in error(data)


def test_a_retriever_both_recorded_and_unavailable_is_refused() -> None:
    data = doc()
    data["unavailable"] = {"bm25": "no model here"}
    assert error(data).startswith(
        "b.json: unavailable.bm25 names a retriever that retrievers.bm25 also holds; a retriever either ran or could not"
    )
