"""The bar through pytest (docs/verdicts.md, "The bar"): drops the gate accepted stay accepted without
accumulating, an edited question recorded lower is a lowering, and a refused update writes nothing,
whatever the baseline's format."""
from __future__ import annotations

import json
from collections.abc import Callable
from fnmatch import fnmatchcase
from typing import Any

import pytest
from projects import (
    GOLD,
    QUESTIONS,
    RUN,
    TABLE_ONLY,
    baseline,
    baseline_bytes,
    one_line_error,
    set_rankings,
    write_project,
)

Q01_SWAPPED = ["travel-002", "travel-001"]
"""q01's gold chunk second: ndcg@3 1 -> 1/log2(3) = 0.6309, the mean of the five answerable questions -0.0738."""
Q03_SWAPPED = ["travel-003", "travel-002"]
"""q03's grades 2 and 1 swapped: ndcg@3 1 -> (1 + 2/log2 3) / (2 + 1/log2 3) = 0.8597, the mean -0.0281."""


@pytest.fixture
def tolerant(pytester: pytest.Pytester) -> pytest.Pytester:
    write_project(pytester.path, retrievers=TABLE_ONLY, settings="tolerance = 0.1")
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    return pytester


def test_accepted_drops_do_not_accumulate(tolerant: pytest.Pytester) -> None:
    """The first drop (-0.0738) passes and is recorded without the flag, the bar staying at 1.0; the second
    (-0.0281 against what was recorded) is -0.1019 against the bar: the gate fails and the update refuses."""
    set_rankings(tolerant.path, dict(GOLD, q01=Q01_SWAPPED))
    first = tolerant.runpytest("--rag-update-baseline", *RUN)
    assert first.ret == 0, first.stdout.str()
    recorded = baseline(tolerant.path)["retrievers"]["table"]
    assert recorded["metrics"]["ndcg@3"] == 0.926186 and list(recorded["approved"]) == ["q01"]
    assert recorded["approved"]["q01"] != Q01_SWAPPED, "the approved ranking is the first one"
    set_rankings(tolerant.path, dict(GOLD, q01=Q01_SWAPPED, q03=Q03_SWAPPED))
    gate = tolerant.runpytest("--rag-eval", "-k", "ndcg", *RUN)
    gate.assert_outcomes(failed=1)
    gate.stdout.fnmatch_lines(["*ndcg@3 of 'table' fell from 1.0000 to 0.8981 (-0.1019, tolerance 0.1000)*"])
    before = baseline_bytes(tolerant.path)
    refused = tolerant.runpytest("--rag-update-baseline", *RUN)
    assert refused.ret == 1
    refused.stdout.fnmatch_lines([
        "rag: refused to record ndcg@3 of 'table': 0.8981 is below the bar's 1.0000 (-0.1019, tolerance 0.1000); "
        "fix it and re-run, or pass --rag-allow-regression *",
        "rag: baselines/retrieval.json is left as it was, byte for byte",
    ])
    assert baseline_bytes(tolerant.path) == before


def test_an_edited_query_recorded_lower_is_a_lowering(tolerant: pytest.Pytester) -> None:
    """Edited questions are not compared on their own, but their bar values leave the bar: replaced by lower
    values, that is a lowering, which the gate fails and the update refuses without the flag."""
    questions = [dict(q, query=q["query"] + "？") if q["id"] == "q01" else q for q in QUESTIONS]
    (tolerant.path / "fixtures" / "evalset.jsonl").write_text(
        "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in questions), encoding="utf-8")
    set_rankings(tolerant.path, dict(GOLD, q01=["travel-002", "travel-003", "refund-001"]), questions)
    judged = tolerant.runpytest("--rag-eval", *RUN)  # the gate says what the update will (issue 48)
    judged.assert_outcomes(failed=4)
    judged.stdout.fnmatch_lines(["ndcg@3 of 'table' lowers the bar through its questions: the 1 edited question (q01): "
                                 "bar 1.0000, their new values 0.0000, below the bar, as the update and the "
                                 "pull-request check count it; *"])
    before = baseline_bytes(tolerant.path)
    refused = tolerant.runpytest("--rag-update-baseline", *RUN)
    assert refused.ret == 1 and baseline_bytes(tolerant.path) == before
    refused.stdout.fnmatch_lines([
        "rag: refused to record ndcg@3 of 'table': the 1 edited question (q01): bar 1.0000, their new values 0.0000, "
        "below the bar; fix it and re-run, or pass --rag-allow-regression *"])
    assert tolerant.runpytest("--rag-update-baseline", "--rag-allow-regression", *RUN).ret == 0
    assert "bar" not in baseline(tolerant.path)["retrievers"]["table"]


def format_1(text: str) -> str:
    """A baseline as format 1 wrote it: one digest for the corpus and one for the eval set."""
    doc = json.loads(text)
    fingerprint = doc["fingerprint"]
    doc["fingerprint"] = {"chunks_sha256": fingerprint["chunks"]["sha256"],
                          "evalset_sha256": fingerprint["questions"]["sha256"], "k": fingerprint["yardstick"]["k"],
                          "metrics_version": fingerprint["yardstick"]["metrics_version"],
                          "tokenizer": fingerprint["tokenizer"], "retrievers": fingerprint["retrievers"]}
    doc["format_version"] = 1
    return json.dumps(doc, ensure_ascii=False, sort_keys=True, indent=2) + "\n"


def format_2(text: str) -> str:
    doc = json.loads(text)
    doc["format_version"] = 2
    return json.dumps(doc, ensure_ascii=False, sort_keys=True, indent=2) + "\n"


@pytest.mark.parametrize("older", [format_1, format_2])
def test_a_refused_update_leaves_an_older_format_byte_for_byte(pytester: pytest.Pytester,
                                                               older: Callable[[str], str]) -> None:
    """Issue 32: bm25 unchanged, table refused: the update rewrote a format-1 file as format 2."""
    write_project(pytester.path)
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    path = pytester.path / "baselines" / "retrieval.json"
    path.write_text(older(path.read_text(encoding="utf-8")), encoding="utf-8")
    before = baseline_bytes(pytester.path)
    pytester.runpytest("--rag-eval", *RUN).assert_outcomes(passed=8)
    set_rankings(pytester.path, dict(GOLD, q01=Q01_SWAPPED))
    refused = pytester.runpytest("--rag-update-baseline", *RUN)
    assert refused.ret == 1
    assert baseline_bytes(pytester.path) == before


def _k(doc: dict[str, Any]) -> None:
    doc["fingerprint"]["yardstick"]["k"] = 7


def _key(doc: dict[str, Any]) -> None:
    doc["retrievers"]["table"]["questions"]["q01"]["metrics"]["ndcg@²"] = 1.0


def _long_key(doc: dict[str, Any]) -> None:
    doc["retrievers"]["table"]["metrics"]["ndcg@" + "5" * 5001] = 1.0


def _unfingerprinted(doc: dict[str, Any]) -> None:
    del doc["fingerprint"]["retrievers"]["table"]


@pytest.mark.parametrize(("damage", "problem"), [
    (_k, "k = 3 disagrees with fingerprint.yardstick.k = 7; one run writes both; *"),
    (_key, "retrievers.table.questions.q01.metrics key 'ndcg@²' is not a metric key*"),
    (_long_key, "retrievers.table.metrics key 'ndcg@5555555555555555555555555... (5006 characters)' is not a metric key*"),
    (_unfingerprinted, "retrievers.table has no fingerprint.retrievers.table: *"),
])
@pytest.mark.parametrize("flag", ["--rag-eval", "--rag-update-baseline"])
def test_a_baseline_that_disagrees_with_itself_is_damage(pytester: pytest.Pytester, damage: Callable[[Any], None],
                                                         problem: str, flag: str) -> None:
    """Issue 32: a k of 7 beside the yardstick's 5 was read; `ndcg@²` was an INTERNALERROR; an entry without its
    fingerprint was dropped by a refused update. Each is one line, and nothing is written."""
    write_project(pytester.path)
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    path = pytester.path / "baselines" / "retrieval.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    damage(doc)
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=2), encoding="utf-8")
    before = baseline_bytes(pytester.path)
    line = one_line_error(pytester.runpytest(flag, *RUN))
    assert fnmatchcase(line, f"ERROR: baselines/retrieval.json: {problem}"), line
    assert baseline_bytes(pytester.path) == before
