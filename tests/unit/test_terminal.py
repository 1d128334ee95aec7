"""The terminal summary: unchanged values without `(+0.0000)`, the per-tag table only where a value
moved, tables split by columns to fit the terminal, the wrongly empty questions named."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from report_samples import sample_input
from stages import GOOD, QUESTIONS, WORSE, baseline, config, fingerprint, ran

from pytest_ragretrieval.gate.judge import Judge
from pytest_ragretrieval.gate.record import run_record
from pytest_ragretrieval.record.report import ReportInput
from pytest_ragretrieval.report.terminal import cell, fitted, summary_lines, table
from pytest_ragretrieval.report.view import view
from pytest_ragretrieval.report.wording import width

HEADERS = ["retriever", "tag", "precision@5", "recall@5", "f1@5", "ndcg@5", "hit_rate@5", "mrr@5"]


def summary(judge: Judge) -> ReportInput:
    """What the terminal summary reads: the view of the gate's record, without the eval set."""
    return view(run_record(judge.config, judge.fingerprint, judge.runs, judge, {}))


ROWS = [["hybrid_rerank", "semantic", *(f"0.{n}453 (-0.0{n}21)" for n in range(1, 7))],
        ["bm25", "keyword", *(f"0.{n}698 (+0.0{n}10)" for n in range(1, 7))]]


def test_a_value_that_did_not_move_has_no_bracket() -> None:
    assert cell(0.24531, 0.24529) == "0.2453"
    assert cell(0.2453, 0.2453) == "0.2453"
    assert cell(0.2453, 0.2403) == "0.2453 (+0.0050)"
    assert cell(0.2453, None) == "0.2453"


def test_a_table_wider_than_the_terminal_is_split_by_columns_repeating_the_keys() -> None:
    whole = table(HEADERS, ROWS)
    assert max(map(width, whole)) > 80
    lines = fitted(HEADERS, ROWS, 2, 80)
    assert max(map(width, lines)) <= 80
    parts = "\n".join(lines).split("\n\n")
    assert len(parts) == 2
    for part in parts:
        header = part.splitlines()[0].split()
        assert header[:2] == ["retriever", "tag"] and len(header) == 5
    assert [cell for part in parts for cell in part.splitlines()[0].split()[2:]] == HEADERS[2:]
    assert parts[0].splitlines()[2] == (
        "hybrid_rerank  semantic  0.1453 (-0.0121)  0.2453 (-0.0221)  0.3453 (-0.0321)")
    assert fitted(HEADERS, ROWS, 2, None) == whole == fitted(HEADERS, ROWS, 2, 200)


def test_a_column_wider_than_the_terminal_gets_a_part_of_its_own() -> None:
    lines = fitted(["name", "a", "b"], [["x", "1" * 30, "2" * 30]], 1, 20)
    assert "\n".join(lines).split("\n\n") == [f"name  a\n----  {'-' * 30}\nx     {'1' * 30}",
                                              f"name  b\n----  {'-' * 30}\nx     {'2' * 30}"]


def test_the_per_tag_table_shows_only_the_tags_that_moved_unless_asked(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    recorded = baseline(cfg, {"one": ran(cfg, "one", GOOD), "two": ran(cfg, "two", GOOD)}, fingerprint(cfg))
    runs = {"one": ran(cfg, "one", GOOD), "two": ran(cfg, "two", {**GOOD, "q2": ["x", "c"]})}
    lines = summary_lines(summary(Judge(cfg, QUESTIONS, recorded, fingerprint(cfg), runs)), columns=80)
    start = lines.index("per tag, where a value moved (1 of 4 rows; --rag-tags shows every row):")
    assert lines[start + 3] == "two        keyword  0.6309 (-0.3691)  1.0000"
    assert not any(line.startswith(("one ", "two        semantic")) for line in lines[start:start + 5])
    assert not lines[start + 4].startswith(("one", "two"))  # the table ends there
    assert all("(+0.0000)" not in line and "(-0.0000)" not in line for line in lines)
    every = summary_lines(summary(Judge(cfg, QUESTIONS, recorded, fingerprint(cfg), runs)), every_tag=True)
    start = every.index("per tag:")
    assert [line.split()[:2] for line in every[start + 3:start + 7]] == [
        ["one", "keyword"], ["one", "semantic"], ["two", "keyword"], ["two", "semantic"]]


def test_an_unmoved_or_first_run_says_how_to_see_the_tags(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    runs = {"one": ran(cfg, "one", GOOD)}
    recorded = baseline(cfg, runs, fingerprint(cfg))
    unmoved = summary_lines(summary(Judge(cfg, QUESTIONS, recorded, fingerprint(cfg), runs)))
    assert "per tag: 2 rows, no value moved since the baseline (--rag-tags shows them)" in unmoved
    first = summary_lines(summary(Judge(cfg, QUESTIONS, None, fingerprint(cfg), runs)))
    assert "per tag: 2 rows, no baseline values to compare with (--rag-tags shows them)" in first


def test_the_answerable_questions_with_an_empty_result_are_named(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    runs = {"one": ran(cfg, "one", {**GOOD, "q1": [], "q2": []}), "two": ran(cfg, "two", WORSE)}
    lines = summary_lines(summary(Judge(cfg, QUESTIONS, None, fingerprint(cfg), runs)))
    assert "answerable questions that wrongly got an empty result: one 2/2 (q1, q2)" in lines


def test_each_segment_key_gets_a_table_of_its_values_with_their_outcomes() -> None:
    lines = summary_lines(sample_input(), columns=100)
    start = lines.index("segment lang (each segment value is a family of its own, its p adjusted within it; a value "
                        "with fewer compared questions than min_questions is shown, not judged):")
    assert lines[start + 1:start + 6] == [
        "retriever  segment        metric  outcome                 n   base    value   delta    p",
        "---------  -------------  ------  ----------------------  --  ------  ------  -------  ------",
        "hybrid     lang:de        ndcg@5  regression              20  0.9000  0.6000  -0.3000  0.0156",
        "hybrid     lang:en        ndcg@5  not judged in this run  30  0.8000  0.8000  +0.0000  1.0000",
        "hybrid     lang:fr_[ca]|  ndcg@5  shown, not judged       4   0.7000  0.5000  -0.2000  —"]
    plain = replace(sample_input(), retrievers=tuple(replace(v, entry=None) for v in sample_input().retrievers))
    assert not any(line.startswith("segment ") for line in summary_lines(plain))  # no segments, no table
