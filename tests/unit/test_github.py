"""GitHub Actions output: the job summary and the `::error` workflow commands with GitHub's escaping."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from report_samples import sample_input

from pytest_ragretrieval.record.report import Failure, QuestionView
from pytest_ragretrieval.report.github import (
    SUMMARY_CHANGES,
    append_summary,
    error_annotations,
    escape_data,
    escape_property,
    step_summary,
)
from pytest_ragretrieval.report.wording import heading


def test_one_error_line_per_failure_on_the_baseline_file() -> None:
    assert error_annotations(sample_input()) == [
        "::error file=baselines/retrieval.json,title=rag%3A hybrid ndcg@5::"
        "ndcg@5 of 'hybrid' fell from 0.8500 to 0.7500"
    ]


def test_multi_line_messages_and_odd_names_are_escaped() -> None:
    failure = Failure("rag::a,b::ndcg@5", "a,b:c", "ndcg@5", "fell 10%\r\nq01: 1.0 -> 0.5\nq02")
    data = replace(sample_input(), failures=(failure,), baseline_path="base,lines/r:1.json")
    (line,) = error_annotations(data)
    assert line == (
        "::error file=base%2Clines/r%3A1.json,title=rag%3A a%2Cb%3Ac ndcg@5::"
        "fell 10%25%0D%0Aq01: 1.0 -> 0.5%0Aq02"
    )
    assert "\n" not in line and "\r" not in line


def test_escaping_rules() -> None:
    assert escape_data("a%b\rc\nd:e,f") == "a%25b%0Dc%0Ad:e,f"
    assert escape_property("a%b\rc\nd:e,f") == "a%25b%0Dc%0Ad%3Ae%2Cf"
    assert escape_property("%3A") == "%253A"


def test_no_failures_no_annotations_and_no_file_without_a_baseline_path() -> None:
    assert error_annotations(replace(sample_input(), failures=())) == []
    data = replace(sample_input(), baseline_path="", failures=(Failure("rag::startup", "", "", ""),))
    assert error_annotations(data) == ["::error title=rag%3A rag%3A%3Astartup::rag::startup"]


def test_step_summary_is_the_short_report() -> None:
    text = step_summary(sample_input())
    assert text.startswith("# RAG 检索层评估报告") and "结果 / result：❌ 1 项未通过 / 1 failed" in text
    assert "| hybrid        | hybrid | ran " in text and "0.7500 (-0.1000)" in text
    assert f"### {heading('both', 'significance')}" in text and f"## {heading('both', 'tags')}" in text
    assert "| q01      | 住宿标准一晚多少钱 | 1.0000 | 0.5000 | -0.5000 |" in text
    assert "service-001, **travel-001** ✓2" in text and "| q02 " in text
    assert "- ❌ **hybrid · ndcg@5** — rag::hybrid::ndcg@5" in text
    assert "baselines/retrieval.json（可比 / comparable）" in text and "⚠️ the eval set has 2" in text
    assert heading('both', "no-answer") not in text and heading('both', "diagnostics") not in text


def test_step_summary_cuts_long_question_lists() -> None:
    data = sample_input()
    ids = [f"r{i:02d}" for i in range(SUMMARY_CHANGES + 3)]
    questions = tuple(QuestionView(q, f"query {q}", ("semantic",), {"travel-001": 1}) for q in ids)
    hybrid = replace(data.retrievers[0], values={q: {"ndcg@5": 0.0} for q in ids},
                     baseline_values={q: {"ndcg@5": 1.0} for q in ids})
    text = step_summary(replace(data, questions=questions, retrievers=(hybrid,)))
    assert "**退步 / regressed**（13）" in text and "| r09 " in text and "| r10 " not in text
    assert "…另有 3 题 / 3 more in the full report" in text



def test_a_step_summary_that_cannot_be_appended_is_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "missing" / "summary.md"))
    warning = append_summary(sample_input())
    assert warning == (
        f"rag: warning: could not append the step summary to $GITHUB_STEP_SUMMARY ({tmp_path}/missing/summary.md): "
        "No such file or directory"
    )
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    assert append_summary(sample_input()) is None
    assert (tmp_path / "summary.md").read_text(encoding="utf-8").startswith("# ")
