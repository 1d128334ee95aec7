"""The run record's codec: msgspec's errors said as one line naming the exact JSON path, the numbers
types cannot check, older results read as they were meant, and the verdicts handed to xdist workers."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_ragretrieval.core.errors import BaselineError
from pytest_ragretrieval.record.codec import decode, read_verdicts, write_verdicts
from pytest_ragretrieval.record.types import Adjustment, Status, Verdict

FIX = "; fix it, or delete it and run `pytest --rag-update-baseline` to record a new one"
COMPARISON = {"baseline": 0.5, "value": 0.4, "delta": -0.1, "p_value": 0.02, "p_unadjusted": 0.01, "family": 3,
              "ci95": [-0.2, -0.01], "questions": 20, "whole": True, "value_all": None, "mde": 0.08}


def results(**entry: Any) -> str:
    doc = {"format_version": 3, "k": 5, "plugin_version": "0.1.0",
           "fingerprint": {"retrievers": {"bm25": {"type": "bm25"}}},
           "retrievers": {"bm25": {"metrics": {"ndcg@5": 0.4}, "latency_ms": {"p50": 1.0, "p95": 2.0}, **entry}}}
    return json.dumps(doc)


@pytest.mark.parametrize(("entry", "problem"), [
    ({"comparison": {"ndcg@5": {**COMPARISON, "value": "high"}}},
     "retrievers.bm25.comparison.ndcg@5.value: expected a number, got a string"),
    ({"latency_ms": {"p50": float("nan"), "p95": 2.0}}, "retrievers.bm25.latency_ms.p50 = NaN is not a finite number"),
    ({"comparison": {"ndcg@5": {**COMPARISON, "mde": float("inf")}}},
     "retrievers.bm25.comparison.ndcg@5.mde = Infinity is not a finite number"),
    ({"comparison": {"ndcg@5": {**COMPARISON, "family": -1}}},
     "retrievers.bm25.comparison.ndcg@5.family: expected an integer >= 0"),
    ({"questions": {"q1": {"ranking": ["a", ""], "metrics": {}}}},
     "retrievers.bm25.questions.q1.ranking must be a list of chunk ids"),
    ({"no_answer": {"questions": 1, "skipped": 0}},
     "retrievers.bm25.no_answer must map questions, empty, answerable_empty to counts"),
])
def test_a_bad_value_is_one_line_naming_its_json_path(entry: dict[str, Any], problem: str) -> None:
    with pytest.raises(BaselineError) as error:
        decode(Path("r.json"), results(**entry))
    assert str(error.value) == f"r.json: {problem}{FIX}"


def test_a_comparison_written_before_max_t_was_holm_s_in_a_family_and_unadjusted_outside() -> None:
    older = {key: value for key, value in COMPARISON.items() if key != "adjustment"}
    record = decode(Path("r.json"), results(comparison={"ndcg@5": older, "recall@5": {**older, "family": 0}})).record
    comparisons = record.retrievers["bm25"].comparison
    assert isinstance(comparisons, dict)
    assert comparisons["ndcg@5"].adjustment is Adjustment.HOLM and comparisons["recall@5"].adjustment is None


def test_the_verdicts_round_trip_with_their_status(tmp_path: Path) -> None:
    verdicts = {"rag::b::ndcg@5": Verdict(Status.FAILED, ("ndcg@5 dropped", "q1")),
                "rag::a::latency": Verdict(Status.SKIPPED, ("no baseline",))}
    write_verdicts(tmp_path / "v.json", verdicts)
    assert read_verdicts(tmp_path / "v.json") == verdicts
    assert list(json.loads((tmp_path / "v.json").read_text(encoding="utf-8"))) == sorted(verdicts)
