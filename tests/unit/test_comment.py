"""The sticky pull-request comment: rendered from a results file, marker first, under GitHub's limit."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from msgspec import UnsetType
from projects import retriever
from stages import document

from pytest_ragretrieval.baseline.format import dumps
from pytest_ragretrieval.cli import main
from pytest_ragretrieval.core.errors import BaselineError
from pytest_ragretrieval.record.codec import decode
from pytest_ragretrieval.record.report import Failure
from pytest_ragretrieval.report.view import results_view
from pytest_ragretrieval.review.approval import Decision, decision_document
from pytest_ragretrieval.review.approved import Review, approval_of, record_line
from pytest_ragretrieval.review.changes import Changes, Entry, ValueChange, dumps_changes
from pytest_ragretrieval.review.comment import LIMIT, MARKER, CommentInput, baseline_summary, render, size

FINGERPRINT: dict[str, Any] = {"k": 5, "tokenizer": "jieba 0.42.1", "retrievers": {"hybrid": {"type": "hybrid"}}}


def fingerprinted(*names: str) -> dict[str, Any]:
    """FINGERPRINT with an entry for each of `names` too: a file holds each retriever's."""
    return {**FINGERPRINT, "retrievers": {**FINGERPRINT["retrievers"], **{name: {"type": "bm25"} for name in names}}}
DROPS = tuple(f"  q{n:02d}: 1.0000 -> 0.0000 (-1.0000)" for n in range(1, 11))
FAILURE = {"item": "rag::hybrid::ndcg@5", "retriever": "hybrid", "metric": "ndcg@5",
           "summary": "ndcg@5 of 'hybrid' fell from 0.8500 to 0.7500 (-0.1000, tolerance 0.0000)",
           "details": ["questions that dropped, worst first:", *DROPS]}
LOWERED = Changes("main:baselines/retrieval.json", "baselines/retrieval.json",
                  fingerprint=("bm25.k1 1.5 -> 1.2",), questions=("questions: 59 comparable, 1 added (q61), 0 removed, 0 edited",),
                  lowered=(ValueChange("bm25", "ndcg@5", 0.5885, 0.51),),
                  raised=(ValueChange("hybrid", "recall@5", 0.6182, 0.63),),
                  removed=(Entry("hybrid", "mrr@5", "no longer in the baseline"),))
FAIL = Decision("fail", "lowered without the label", "rag-baseline-approved", True, "sticky comment")
PAIR = {"a": "hybrid", "b": "vector", "metric": "recall@5", "delta": 0.24, "p_value": 0.00001,
        "ci95": [0.15, 0.33], "wins": 20, "ties": 30, "losses": 3}


def results(failed: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    entry = {"metrics": {"precision@5": 0.3, "ndcg@5": 0.75}, "questions": {},
             "no_answer": {"questions": 2, "empty": 1, "answerable_empty": 0},
             "comparison": {"ndcg@5": {"baseline": 0.85, "value": 0.75, "delta": -0.1, "p_value": None, "ci95": None}},
             "latency_ms": {"p50": 1.25, "p95": 3.5}}
    doc = document(5, FINGERPRINT, {"hybrid": entry}, {"hybrid_rerank": "cross-encoder not available"})
    if failed is not None:
        doc["failures"] = failed
    return {**doc, **extra}


def comment_input(doc: dict[str, Any], **options: Any) -> CommentInput:
    path = Path("reports/rag-eval.json")
    record = decode(path, dumps(doc)).record
    return CommentInput(results_view(path, record), not isinstance(record.failures, UnsetType), **options)


def render_doc(doc: dict[str, Any], **options: Any) -> str:
    return render(comment_input(doc, **options))


def test_marker_first_then_verdicts_metrics_failures_changes_and_links() -> None:
    body = render_doc(results([FAILURE]), changes=LOWERED, decision=FAIL, artifact_url="https://example.invalid/a/1",
                      run_url="https://example.invalid/r/2")
    lines = body.splitlines()
    assert lines[0] == MARKER
    # A retriever that could not run is named in the first line (a missing CI secret is never silently green).
    assert "- **门禁 / gate**：❌ 1 项未通过 / 1 failed; unavailable: `hybrid_rerank` (cross-encoder not available)" in lines
    assert ("- **基线 / baseline**：❌ 降低且无标签 / lowered (1 lowered, 1 removed) without the label "
            "`rag-baseline-approved`: a maintainer who approves the lower bar adds it") in lines
    # The Markdown report's own metrics section, one heading level down.
    assert "### 指标结果 / Metrics" in lines
    assert "| hybrid        | hybrid | ran         |      0.3000 | 0.7500 (-0.1000) |             1/2 |          1.2 / 3.5 |" in lines
    assert "- hybrid_rerank: unavailable: cross-encoder not available" in lines
    assert "- ❌ **hybrid · ndcg@5** — rag::hybrid::ndcg@5" in lines
    start = lines.index("  ```text")
    assert lines[start + 1: start + 4] == [
        "  ndcg@5 of 'hybrid' fell from 0.8500 to 0.7500 (-0.1000, tolerance 0.0000)",
        "  questions that dropped, worst first:", "    q01: 1.0000 -> 0.0000 (-1.0000)"]
    assert "### 基线变化 / Baseline changes against `main:baselines/retrieval.json`" in lines
    assert "- ℹ️ compared across changes: `bm25.k1 1.5 -> 1.2`" in lines
    assert "- ℹ️ questions: 59 comparable, 1 added (q61), 0 removed, 0 edited" in lines
    assert "| bm25      | ndcg@5 | 0.5885 |  0.5100 | -0.0785 |" in lines
    assert "- mrr@5 of `hybrid`: no longer in the baseline" in lines
    assert lines[-1] == ("📦 [完整报告 / full report (Markdown + HTML)](https://example.invalid/a/1) · "
                         "[运行记录 / run](https://example.invalid/r/2)")
    assert "…" not in body  # nothing cut
    assert body == render_doc(results([FAILURE]), changes=LOWERED, decision=FAIL,
                              artifact_url="https://example.invalid/a/1", run_url="https://example.invalid/r/2")


def test_no_failures_and_an_unlowered_baseline() -> None:
    decision = Decision("pass", "not lowered", "rag-baseline-approved", True, "")
    body = render_doc(results([]), changes=Changes("main:b.json", "b.json"), decision=decision)
    assert "- **门禁 / gate**：✅ 无失败项 / no failures" in body
    assert "- **基线 / baseline**：✅ 未降低 / not lowered" in body
    assert "- 无变化 / the baseline and the gate's settings are unchanged" in body
    assert "### 失败项" not in body


def test_an_approved_lowering_and_one_without_a_decision() -> None:
    approved = Decision("approved", "ok", "lower-ok", True, "")
    assert "⚠️ 已批准降低 / lowered (1 lowered, 1 removed), approved with the label `lower-ok`" in render_doc(
        results([]), changes=LOWERED, decision=approved)
    # --baseline-diff without pr-check: no label known, the verdict says what the check needs.
    assert "❌ 降低 / lowered (1 lowered, 1 removed): the pull-request check needs the approval label" in render_doc(
        results([]), changes=LOWERED)


def test_a_lowering_of_todays_rankings_is_named_in_the_comment() -> None:
    changes = Changes("main:b.json", "b.json", lowered=(ValueChange("bm25", "recall@2", 0.75, 0.5, side="today"),))
    (row,) = [line for line in render_doc(results([]), changes=changes).splitlines() if line.startswith("| bm25")]
    assert "recall@2, today's rankings" in row


APPROVAL = approval_of(Changes("a", "b", lowered=(ValueChange("bm25", "ndcg@5", 0.5885, 0.5),)), 42,
                       "4f3c2b1a" + "0" * 32, "rag-baseline-approved")
BEYOND = Decision("fail", "beyond", "rag-baseline-approved", True, "sticky comment", APPROVAL,
                  Review(("bm25 ndcg@5 0.5885 -> 0.5100 (approved: 0.5000)",), ("hybrid mrr@5 removed (new)",)),
                  unlabel=True)


def test_the_approval_record_is_the_hidden_second_line_and_the_lowerings_are_listed_apart() -> None:
    body = render_doc(results([]), changes=LOWERED, decision=BEYOND)
    lines = body.splitlines()
    assert lines[:3] == [MARKER, record_line(APPROVAL), "## RAG 检索层评估报告 / RAG retrieval evaluation report"]
    assert ("- **基线 / baseline**：❌ 超出批准 / lowered beyond what was approved at `4f3c2b1` (1 not approved): "
            "a maintainer who approves them applies the label `rag-baseline-approved` again") in lines
    section = body[body.index("### 批准 / Approval"):]
    assert section.startswith(
        "### 批准 / Approval\n\n- 标签 / label `rag-baseline-approved` applied at `4f3c2b1` approved 1 lowering "
        f"(digest `{APPROVAL.digest[:19]}`)\n"
        "- 🏷️ the action takes the label off: it does not cover what the pull request lowers now\n\n**✅ 已批准 / approved (1)**\n\n"
        "- bm25 ndcg@5 0.5885 -> 0.5100 (approved: 0.5000)\n\n**❌ 未批准 / not approved (1)**\n\n"
        "- hybrid mrr@5 removed (new)\n")
    # The approved run says where it was approved; without a label nothing is recorded or listed.
    approved = replace(BEYOND, check="approved", review=Review(BEYOND.review.approved), unlabel=False)
    assert ("approved with the label `rag-baseline-approved` at `4f3c2b1`"
            in render_doc(results([]), changes=LOWERED, decision=approved))
    plain = render_doc(results([]), changes=LOWERED, decision=FAIL)
    assert plain.splitlines()[1].startswith("## ") and "### 批准" not in plain


def test_the_job_summary_carries_the_record_and_the_note_where_nothing_is_kept() -> None:
    note = "the pull request comes from the fork alice/repo, so GitHub's token is read-only: no approval is recorded"
    fork = replace(BEYOND, comment=False, unlabel=False, note=note)
    summary = baseline_summary(LOWERED, fork)
    assert summary.startswith(record_line(APPROVAL) + "\n## 基线检查 / Baseline check")
    assert f"- ℹ️ {note}" in summary and "**❌ 未批准 / not approved (1)**" in summary


def test_results_without_a_failure_list_take_the_verdict_from_the_workflow() -> None:
    # Results files written before the plugin recorded its failures.
    assert "- **门禁 / gate**：❌ 未通过 / failed (see the job log)" in render_doc(results(), gate_outcome="failure")
    assert "- **门禁 / gate**：✅ 通过 / passed" in render_doc(results(), gate_outcome="success")
    assert "- **门禁 / gate**：— 未知 / unknown" in render_doc(results())
    assert "- **基线 / baseline**：— 未与目标分支比较 / not compared with a base branch" in render_doc(results())


def test_comparisons_between_configurations_when_present() -> None:
    body = render_doc(results([], comparisons=[PAIR]))
    assert "### 配置对比 / Comparisons between configurations" in body and body.count("配置对比") == 1
    assert "| hybrid vs vector | recall@5 | +0.2400 | < 0.0001 | [+0.1500, +0.3300] |      20/30/3 |" in body
    assert "配置对比" not in render_doc(results([]))


def test_comparisons_are_read_by_the_record_types() -> None:
    # p and the interval may be absent (null); what the record requires is one line naming the JSON path.
    minimal = {"a": "x", "b": "y", "metric": "ndcg@5", "delta": 0.1, "wins": 3, "ties": 1, "losses": 0,
               "extra": {"nested": True}}
    assert "| x vs y | ndcg@5 | +0.1000 |   — |      — |        3/1/0 |" in render_doc(results([], comparisons=[minimal]))
    with pytest.raises(BaselineError, match=r"^reports/rag-eval\.json: comparisons\[1\]: object missing required "
                       r"field `b`; fix it"):
        render_doc(results([], comparisons=[minimal, {"a": "x"}]))
    with pytest.raises(BaselineError, match=r"^reports/rag-eval\.json: comparisons: expected an array, got an object"):
        render_doc(results([], comparisons={"not": "a list"}))


def many_failures(count: int) -> list[dict[str, Any]]:
    return [{**FAILURE, "item": f"rag::r{n}::ndcg@5", "retriever": f"r{n}"} for n in range(count)]


def test_question_lists_are_cut_first_with_a_note() -> None:
    body = render_doc(results(many_failures(300)))
    assert size(body) <= LIMIT and body.startswith(MARKER + "\n")
    assert body.count("- ❌ **r") == 300  # every failure still named
    assert "  …另有 11 行 / 11 more lines in the report artifact" in body.splitlines()
    assert "…另有" not in render_doc(results(many_failures(30)))  # nothing to cut: every line stays


def test_change_lists_are_cut_after_the_question_lists() -> None:
    lowered = tuple(ValueChange(f"retriever{n}", "ndcg@5", 0.5, 0.4) for n in range(3000))
    body = render_doc(results(many_failures(5)), changes=replace(LOWERED, lowered=lowered), decision=FAIL)
    assert size(body) <= LIMIT
    assert "q01" not in body  # the question lists went first
    assert "…另有 2990 项 / 2990 more in the report artifact" in body


def test_a_comment_that_cannot_fit_is_cut_at_a_line_with_a_note() -> None:
    entry = {"metrics": {"ndcg@5": 0.5}, "questions": {}, "latency_ms": {"p50": 1.0, "p95": 2.0}}
    body = render_doc(document(5, fingerprinted(*(f"retriever_{n:05d}" for n in range(4000))),
                                    {f"retriever_{n:05d}": entry for n in range(4000)}))
    assert size(body) <= LIMIT and body.startswith(MARKER)
    assert body.endswith("comment cut at GitHub's size limit: the report artifact has everything\n")


def test_the_limit_counts_bytes_so_cjk_text_never_overflows() -> None:
    # 30,000 characters fit GitHub's count of characters, but not 65,536 bytes: cut anyway.
    failure = Failure("rag::hybrid::question::q01", "hybrid", "question::q01",
                      "\n".join(["问题", *("住宿标准一晚多少钱" * 10,) * 330]))
    data = comment_input(results())
    assert data.report is not None
    data = replace(data, report=replace(data.report, failures=(failure,)), failures_recorded=True)
    assert len(render(data, limit=10**6)) < LIMIT < size(render(data, limit=10**6))
    body = render(data)
    assert size(body) <= LIMIT and "…另有 320 行 / 320 more lines in the report artifact" in body


# The command, as the workflow runs it.


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results.json").write_text(dumps(results([FAILURE])), encoding="utf-8")
    (tmp_path / "changes.json").write_text(dumps_changes(LOWERED), encoding="utf-8")
    (tmp_path / "decision.json").write_text(json.dumps(decision_document(FAIL)), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("decision", [FAIL, BEYOND], ids=["no-label", "with-a-record"])
def test_comment_command_reads_the_files_the_workflow_writes(workspace: Path, capsys: pytest.CaptureFixture[str],
                                                            decision: Decision) -> None:
    (workspace / "decision.json").write_text(json.dumps(decision_document(decision)), encoding="utf-8")
    code = main(["comment", "results.json", "--baseline-changes", "changes.json", "--decision", "decision.json",
                 "--artifact-url", "https://example.invalid/a"])
    out = capsys.readouterr().out
    assert code == 0 and out.startswith(MARKER + "\n")
    assert out == render_doc(results([FAILURE]), changes=LOWERED, decision=decision,
                             artifact_url="https://example.invalid/a")


def test_a_link_with_credentials_is_refused_not_shown(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """issue 40, item 11: every URL option refuses credentials; a link the comment shows would publish them."""
    code = main(["comment", "results.json", "--run-url", "https://user:hunter22@example.invalid/run"])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "") and "hunter22" not in err
    assert err.splitlines() == ["ragretrieval: error: argument --run-url: holds a user name or password "
                                "(user:password@), which an HTTP client sends as Basic auth and a server may echo; "
                                "remove them (a link the comment shows needs none)"]


def test_comment_with_the_issue_s_baseline_diff_form(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `comment RESULTS.json --baseline-diff OLD`: OLD against the baseline the config names.
    entry = {"metrics": {"ndcg@5": 0.6}, "questions": {}}
    (workspace / "base.json").write_text(dumps(document(5, fingerprinted("bm25"), {"bm25": entry})), encoding="utf-8")
    (workspace / "baselines").mkdir()
    lowered = {"metrics": {"ndcg@5": 0.5}, "questions": {}}
    (workspace / "baselines" / "retrieval.json").write_text(dumps(document(5, fingerprinted("bm25"), {"bm25": lowered})),
                                                            encoding="utf-8")
    (workspace / "pyproject.toml").write_text(
        '[tool.ragretrieval]\nchunks = "c.jsonl"\nevalset = "e.jsonl"\nk = 5\n'
        + retriever("bm25", "bm25"), encoding="utf-8")
    assert main(["comment", "results.json", "--baseline-diff", "base.json"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "### 基线变化 / Baseline changes against `base.json`" in out
    assert "| bm25      | ndcg@5 | 0.6000 |  0.5000 | -0.1000 |" in out
    assert any(line.startswith("- ℹ️ settings (tolerance, ...) not compared") for line in out)
    assert "- **基线 / baseline**：❌ 降低 / lowered (1 lowered): the pull-request check needs the approval label" in out


@pytest.mark.parametrize(("name", "text", "message"), [
    ("results.json", "{", "results.json: not valid JSON"),
    ("results.json", dumps(results([{"item": "x"}])), "results.json: failures must list objects"),
    ("results.json", dumps(document(5, fingerprinted("bm25"), {"bm25": {"metrics": {}, "questions": {}}})),
     "results.json: retrievers.bm25.latency_ms is missing: this is a baseline, not --rag-json results"),
    ("decision.json", '{"check": "maybe"}', "decision.json: not a decision written by `ragretrieval pr-check --json`"),
    ("decision.json", "[", "decision.json: not valid JSON"),
    ("changes.json", "{}", "changes.json: not a baseline-changes file of version 1"),
], ids=["results-json", "failures", "a-baseline", "decision", "decision-json", "changes"])
def test_bad_files_are_one_line(workspace: Path, capsys: pytest.CaptureFixture[str], name: str, text: str,
                                message: str) -> None:
    (workspace / name).write_text(text, encoding="utf-8")
    argv = ["comment", "results.json", "--baseline-changes", "changes.json", "--decision", "decision.json"]
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"ragretrieval: error: {message}")


def test_baseline_diff_and_baseline_changes_exclude_each_other(workspace: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["comment", "results.json", "--baseline-diff", "x.json", "--baseline-changes", "changes.json"]) == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_without_results_the_comment_still_shows_the_baseline_check(workspace: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["comment", "--baseline-changes", "changes.json", "--decision", "decision.json",
                 "--gate-outcome", "failure"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(MARKER) and "- **门禁 / gate**：❌ 未通过 / failed (see the job log)" in out
    assert "the gate wrote no results (it stopped before any retriever ran): see the job log" in out
    assert "| bm25      | ndcg@5 | 0.5885 |  0.5100 | -0.0785 |" in out


def test_the_segments_judged_and_a_lowered_segment_are_in_the_comment() -> None:
    """The results' segment values (read from the file as `--rag-json` writes them) get their key's table; a
    lowered segment is a row of the lowered values, named."""
    doc = results([])
    doc["retrievers"]["hybrid"]["segments"] = {"lang:de": {"ndcg@5": {
        "baseline": 0.9, "value": 0.6, "delta": -0.3, "p_value": 0.0156, "ci95": None, "questions": 20, "family": 2}}}
    doc["outcomes"] = [{"item": "rag::hybrid::segment::lang:de::ndcg@5", "retriever": "hybrid",
                        "metric": "lang:de::ndcg@5", "outcome": "regression", "exam": "today", "delta": -0.3,
                        "p_value": 0.0156, "passed": False}]
    german = replace(LOWERED, lowered=(ValueChange("bm25", "recall@3", 1.0, 0.7, exam="today", segment="lang:de"),))
    body = render_doc(doc, changes=german)
    assert "#### 分段 / Segments" in body and "##### lang" in body, body
    assert "| hybrid    | lang:de | ndcg@5 | 退化 / regression |  20 | 0.9000 | 0.6000 | -0.3000 | 0.0156 |" in body, body
    assert "| bm25      | recall@3, 分段 / segment lang:de | 1.0000 |  0.7000 | -0.3000 |" in body, body
