"""Segments (`segments = ["lang"]`): each segment value's items judged in a family of their own."""
from __future__ import annotations

import json
from typing import Any

import pytest
from projects import RUN, TABLE_ONLY, baseline_bytes, jsonl, set_rankings, synthetic, write_project

SETTINGS = 'metrics = ["recall@3", "ndcg@3"]\ntolerance = 0.1\nsignificance = "randomization"\nmin_questions = 20'
HURT = [f"q{i:02d}" for i in range(81, 87)]
"""Six of the 20 German questions: the whole set's recall falls by 0.06 (within the tolerance), German's by 0.3."""


def questions(langs: dict[str, str] | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, list[str]]]:
    """100 questions: q01-q80 English, q81-q100 German (`langs` overrides some)."""
    chunks, found, gold = synthetic(100)
    for question in found:
        number = int(question["id"][1:])
        question["metadata"] = {"lang": (langs or {}).get(question["id"], "en" if number <= 80 else "de")}
    return chunks, found, gold


def project(pytester: pytest.Pytester, settings: str = SETTINGS) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """The project with its baseline recorded on perfect rankings."""
    chunks, found, gold = questions()
    write_project(pytester.path, retrievers=TABLE_ONLY, settings=settings, chunks=chunks, questions=found,
                  rankings=gold)
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    return found, gold


def hurt(pytester: pytest.Pytester, found: list[dict[str, Any]], gold: dict[str, list[str]]) -> None:
    set_rankings(pytester.path, {qid: ["z-noise"] if qid in HURT else ranking for qid, ranking in gold.items()}, found)


def configure(pytester: pytest.Pytester, old: str, new: str) -> None:
    pyproject = pytester.path / "pyproject.toml"
    pyproject.write_text(pyproject.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")


def results(pytester: pytest.Pytester) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((pytester.path / "results.json").read_text(encoding="utf-8"))
    return found


def test_a_change_that_hurts_one_language_fails_its_segment_and_passes_the_whole(pytester: pytest.Pytester) -> None:
    found, gold = project(pytester, SETTINGS + '\nsegments = ["lang"]')
    collected = pytester.runpytest("--rag-eval", "--collect-only", "-q", *RUN)
    collected.stdout.fnmatch_lines(["rag::table::recall@3", "rag::table::ndcg@3", "rag::table::segment::lang:de::recall@3",
                                    "rag::table::segment::lang:de::ndcg@3", "rag::table::segment::lang:en::recall@3"])
    selected = pytester.runpytest("--rag-eval", "--collect-only", "-q", "-k", "lang:de", *RUN)
    assert [line for line in selected.stdout.lines if line.startswith("rag::")] == [
        "rag::table::segment::lang:de::recall@3", "rag::table::segment::lang:de::ndcg@3"]
    hurt(pytester, found, gold)
    result = pytester.runpytest("--rag-eval", "-rA", "--rag-json", "results.json", *RUN)
    result.assert_outcomes(passed=4, failed=2)
    result.stdout.fnmatch_lines([
        "segment lang:de: recall@3 of 'table' fell from 1.0000 to 0.7000 (-0.3000, tolerance 0.1000) over the 20 "
        "questions both runs share; randomization test p = 0.0156 < alpha 0.05 (max-T-adjusted over 2 items; "
        "unadjusted 0.0156)*", "  q86: 1.0000 -> 0.0000 (-1.0000)"])
    result.stdout.fnmatch_lines(["PASSED rag::table::recall@3", "PASSED rag::table::ndcg@3",
                                 "PASSED rag::table::segment::lang:en::recall@3"])
    segments = results(pytester)["retrievers"]["table"]["segments"]
    assert segments["lang:de"]["recall@3"]["family"] == 2  # German's two metrics, nothing else
    assert segments["lang:en"]["recall@3"]["delta"] == 0.0
    assert [failure["item"] for failure in results(pytester)["failures"]] == [
        "rag::table::segment::lang:de::ndcg@3", "rag::table::segment::lang:de::recall@3"]


def test_adding_segments_leaves_every_whole_set_p_unchanged(pytester: pytest.Pytester) -> None:
    found, gold = project(pytester)
    hurt(pytester, found, gold)
    pytester.runpytest("--rag-eval", "--rag-json", "results.json", *RUN)
    without = results(pytester)["retrievers"]["table"]["comparison"]
    configure(pytester, "min_questions = 20", 'min_questions = 20\nsegments = ["lang"]')
    segmented = pytester.runpytest("--rag-eval", "--rag-json", "results.json", *RUN)
    segmented.assert_outcomes(passed=4, failed=2)
    record = results(pytester)
    assert record["retrievers"]["table"]["comparison"] == without
    assert record["significance"]["family"] == 2  # the whole set's family, as without segments
    assert without["recall@3"]["p_value"] is not None and without["recall@3"]["family"] == 2


def test_a_value_below_min_questions_is_shown_not_judged(pytester: pytest.Pytester) -> None:
    found, gold = project(pytester, SETTINGS.replace("min_questions = 20", "min_questions = 21")
                          + '\nsegments = ["lang", "region"]')
    hurt(pytester, found, gold)
    result = pytester.runpytest("--rag-eval", "-rA", "--rag-json", "results.json", *RUN)
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines([
        "rag: warning: segments lists 'region', which no question of fixtures/evalset.jsonl names in its metadata: "
        "it adds no items; check its spelling"])
    result.stdout.fnmatch_lines([
        "*warning: segment lang:de: 20 comparable questions, fewer than min_questions = 21: its items are shown, not "
        "judged*"])
    assert "segment lang:en" not in result.stdout.str()  # 80 questions: judged
    shown = results(pytester)["retrievers"]["table"]["segments"]["lang:de"]["recall@3"]
    assert shown["p_value"] is None and shown["p_unadjusted"] is not None and shown["family"] == 0


def test_a_retag_cannot_take_a_failing_segment_below_min_questions(pytester: pytest.Pytester) -> None:
    """The baseline keeps each question's segment values: questions retagged away still count in German."""
    found, gold = project(pytester, SETTINGS + '\nsegments = ["lang"]')
    kept = json.loads(baseline_bytes(pytester.path))["fingerprint"]["questions"]["segments"]
    assert kept["q81"] == {"lang": "de"} and kept["q01"] == {"lang": "en"}
    _, retagged, _ = questions(dict.fromkeys(HURT, "xx"))  # German now has 14 questions, below 20
    (pytester.path / "fixtures" / "evalset.jsonl").write_text(jsonl(retagged), encoding="utf-8")
    hurt(pytester, retagged, gold)
    result = pytester.runpytest("--rag-eval", "-rA", *RUN)
    result.stdout.fnmatch_lines([
        "segment lang:de: recall@3 of 'table' fell from 1.0000 to 0.7000 (-0.3000, tolerance 0.1000) over the 20 "
        "questions both runs share; randomization test p = 0.0156 < alpha 0.05*",
        "warning: segment lang:xx: 6 comparable questions, fewer than min_questions = 20: its items are shown, not "
        "judged"])
    result.assert_outcomes(passed=6, failed=2)


def test_an_update_that_lowers_a_segment_is_refused(pytester: pytest.Pytester) -> None:
    found, gold = project(pytester, SETTINGS + '\nsegments = ["lang"]')
    before = baseline_bytes(pytester.path)
    hurt(pytester, found, gold)
    refused = pytester.runpytest("--rag-update-baseline", *RUN)
    assert refused.ret != 0
    refused.stdout.fnmatch_lines(["rag: refused to record 'table': segment lang:de: recall@3 of 'table' fell from "
                                  "1.0000 to 0.7000*--rag-allow-regression*"])
    assert baseline_bytes(pytester.path) == before
    allowed = pytester.runpytest("--rag-update-baseline", "--rag-allow-regression", *RUN)
    assert allowed.ret == 0
    assert pytester.runpytest("--rag-eval", *RUN).ret == 0  # the lowered bar is today's rankings


def test_segment_values_are_checked_where_the_eval_set_names_them(pytester: pytest.Pytester) -> None:
    chunks, found, _ = questions({"q05": "two words"})
    write_project(pytester.path, retrievers=TABLE_ONLY, settings=SETTINGS + '\nsegments = ["lang"]', chunks=chunks,
                  questions=found)
    result = pytester.runpytest("--rag-eval", *RUN)
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*evalset.jsonl: question 'q05': metadata.lang = 'two words' is a segment (the "
                                 "config's `segments` lists 'lang') and must be a non-empty string of letters*"])


def test_an_update_that_raises_the_whole_keeps_the_bar_where_a_segment_fell(pytester: pytest.Pytester) -> None:
    """English gains 0.3 while three German questions lose their hit (-0.15, p 1/8: it passes): the update keeps
    the approved rankings, so German's drop stays visible against the same bar; without segments it would not."""
    chunks, found, gold = questions()
    missed = [f"q{i:02d}" for i in range(1, 31)]
    write_project(pytester.path, retrievers=TABLE_ONLY, settings=SETTINGS + '\nsegments = ["lang"]', chunks=chunks,
                  questions=found, rankings={qid: ["z-noise"] if qid in missed else r for qid, r in gold.items()})
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    fell = ["q81", "q82", "q83"]
    set_rankings(pytester.path, {qid: ["z-noise"] if qid in fell else ranking for qid, ranking in gold.items()}, found)
    assert pytester.runpytest("--rag-eval", *RUN).ret == 0
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    approved = json.loads(baseline_bytes(pytester.path))["retrievers"]["table"]["approved"]
    assert sorted(approved) == [*missed, *fell] and approved["q81"] == gold["q81"]
    configure(pytester, '\nsegments = ["lang"]', "")
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    assert "approved" not in json.loads(baseline_bytes(pytester.path))["retrievers"]["table"]  # raised: today's


def test_shards_merged_judge_the_segments_as_one_run(pytester: pytest.Pytester,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_ragretrieval.cli import main

    found, gold = project(pytester, SETTINGS + '\nsegments = ["lang"]')
    hurt(pytester, found, gold)
    pytester.runpytest("--rag-eval", "--rag-json=whole.json", *RUN)
    for index in (1, 2):
        shard = pytester.runpytest("--rag-eval", f"--rag-shard={index}/2", f"--rag-json=part{index}.json", *RUN)
        assert shard.ret == 0  # a shard judges nothing
    capsys.readouterr()
    assert main(["merge", "part1.json", "part2.json", "--json", "merged.json"]) == 1
    out = capsys.readouterr().out
    assert sorted(line.split(" ", 2)[1].rstrip(":") for line in out.splitlines() if line.startswith("FAILED ")) == [
        "rag::table::segment::lang:de::ndcg@3", "rag::table::segment::lang:de::recall@3"]
    merged, whole = (json.loads((pytester.path / name).read_text(encoding="utf-8"))
                     for name in ("merged.json", "whole.json"))
    assert merged["retrievers"]["table"]["segments"] == whole["retrievers"]["table"]["segments"]
