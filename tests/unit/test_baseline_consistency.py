"""A baseline must agree with itself: k and fingerprint.k, rankings no deeper than a run records,
a retriever either recorded or unavailable. Each contradiction is one line naming both JSON paths."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_ragretrieval.baseline.format import document, dumps, parse, retriever_entry
from pytest_ragretrieval.errors import BaselineError
from pytest_ragretrieval.evalset.records import Question
from pytest_ragretrieval.scoring.evaluate import score
from pytest_ragretrieval.scoring.metrics import MetricSpec

QUESTIONS = (Question("q1", "a", {"c1": 1}), Question("q2", "b", {"c2": 1}))


def doc(k: int = 2, cutoffs: tuple[int, ...] = (), rankings: dict[str, list[str]] | None = None) -> dict[str, Any]:
    specs = (MetricSpec("ndcg", k), *(MetricSpec("recall", cut) for cut in cutoffs))
    found = rankings or {"q1": ["c2", "c1"], "q2": ["c2"]}
    result = score("bm25", QUESTIONS, found, specs)
    return document(k, {"k": k, "retrievers": {"bm25": {"type": "bm25"}}}, {"bm25": retriever_entry(result)})


def error(data: dict[str, Any]) -> str:
    with pytest.raises(BaselineError) as raised:
        parse(Path("b.json"), dumps(data))
    assert "\n" not in str(raised.value)
    return str(raised.value)


def test_a_consistent_file_reads() -> None:
    assert parse(Path("b.json"), dumps(doc())).k == 2


def test_k_disagreeing_with_fingerprint_k_names_both() -> None:
    data = doc()
    data["fingerprint"]["k"] = 3
    assert error(data).startswith("b.json: k = 2 disagrees with fingerprint.k = 3; one run writes both; fix it, or delete it")


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
