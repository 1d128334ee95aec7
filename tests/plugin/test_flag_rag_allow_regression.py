"""The ratchet: `--rag-update-baseline` will not record a value that lowers the bar without `--rag-allow-regression`."""
from __future__ import annotations

import json

import pytest
from projects import GOLD, RUN, baseline, baseline_bytes, one_line_error, set_rankings, write_project


@pytest.fixture
def worse(pytester: pytest.Pytester) -> pytest.Pytester:
    write_project(pytester.path)
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    set_rankings(pytester.path, dict(GOLD, q01=["travel-002", "travel-001"], q03=["travel-002", "travel-003", "refund-001"]))
    return pytester


def test_lower_values_are_refused_and_named(worse: pytest.Pytester) -> None:
    before = baseline(worse.path)
    result = worse.runpytest("--rag-update-baseline", "-k", "table", *RUN)
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        [
            "refused to record ndcg@3 of 'table': 0.9262 is below the bar's 1.0000 (-0.0738, tolerance 0.0000); "
            "fix it and re-run, or pass --rag-allow-regression to record it, which lowers the bar: the pull request then "
            "needs the approval label (rag-baseline-approved unless the action's `label` input names another)",
            "rag: refused to record ndcg@3 of 'table'*",
        ]
    )
    after = baseline(worse.path)
    assert after["retrievers"]["table"]["metrics"]["ndcg@3"] == before["retrievers"]["table"]["metrics"]["ndcg@3"]
    assert after["retrievers"]["table"]["questions"]["q01"]["metrics"]["ndcg@3"] == 1.0


def test_a_refusal_holds_the_whole_entry_of_its_retriever(worse: pytest.Pytester) -> None:
    """Values, per-question values and rankings are recorded together: none of them, beside a refusal."""
    before = baseline_bytes(worse.path)
    set_rankings(worse.path, dict(GOLD, q01=["travel-002", "travel-001"], q05=["refund-002"]))
    result = worse.runpytest("--rag-update-baseline", *RUN)
    result.assert_outcomes(passed=7, failed=1)
    result.stdout.fnmatch_lines([
        "rag: baseline not written: values of 'table' would lower the bar",
        "rag: baselines/retrieval.json is left as it was, byte for byte",
    ])
    assert baseline_bytes(worse.path) == before


def test_the_flag_records_the_regression(worse: pytest.Pytester) -> None:
    result = worse.runpytest("--rag-update-baseline", "--rag-allow-regression", *RUN)
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines(["  table ndcg@3: 1.0000 -> 0.9262"])
    assert baseline(worse.path)["retrievers"]["table"]["metrics"]["ndcg@3"] == 0.926186


def test_a_corpus_change_does_not_turn_the_ratchet_off(worse: pytest.Pytester) -> None:
    """One chunk edited and table worse: the lower value is refused as after any change, and since the one
    corpus record describes every entry, nothing is written and the run fails; the flag records it."""
    chunks = worse.path / "fixtures" / "chunks.jsonl"
    chunks.write_text(chunks.read_text(encoding="utf-8").replace("周末休息", "周末值班"), encoding="utf-8")
    before = baseline_bytes(worse.path)
    result = worse.runpytest("--rag-update-baseline", *RUN)
    result.assert_outcomes(passed=7, failed=1)
    result.stdout.fnmatch_lines([
        "refused to record ndcg@3 of 'table': 0.9262 is below the bar's 1.0000 (-0.0738, tolerance 0.0000) after a "
        "change of chunks; fix it and re-run, or pass --rag-allow-regression *",
        "rag: baseline not written: values of 'table' would lower the bar",
    ])
    assert result.ret == 1 and baseline_bytes(worse.path) == before
    allowed = worse.runpytest("--rag-update-baseline", "--rag-allow-regression", *RUN)
    allowed.assert_outcomes(passed=8)
    allowed.stdout.fnmatch_lines(["rag: the chunks changed: every retriever re-recorded"])
    assert baseline(worse.path)["fingerprint"]["chunks"]["digests"]["service-001"] != (
        json.loads(before)["fingerprint"]["chunks"]["digests"]["service-001"])
    worse.runpytest("--rag-eval", *RUN).assert_outcomes(passed=8)


@pytest.mark.parametrize("others", [(), ("--rag-eval",)])
def test_the_flag_alone_is_a_usage_error(worse: pytest.Pytester, others: tuple[str, ...]) -> None:
    """Without --rag-update-baseline it would do nothing: said in one line, before anything runs."""
    before = baseline_bytes(worse.path)
    result = worse.runpytest("--rag-allow-regression", *others, *RUN)
    assert one_line_error(result) == (
        "ERROR: --rag-allow-regression only applies to --rag-update-baseline (it lets an update record values "
        "below the baseline's); add --rag-update-baseline, or drop it"
    )
    assert baseline_bytes(worse.path) == before
