"""The Markdown evaluation report: sections, cells, changed questions, escaping and determinism."""
from __future__ import annotations

import re
from dataclasses import replace

from msgspec import structs
from report_samples import sample_input, without_baseline

from pytest_ragretrieval.record.report import Failure, RetrieverView
from pytest_ragretrieval.report.markdown import render as render_markdown
from pytest_ragretrieval.report.wording import heading


def section(text: str, key: str) -> str:
    """The body of one `## ` section."""
    start = text.index("## " + heading('both', key) + "\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def rows(text: str) -> list[list[str]]:
    """Every pipe-table row of the text as stripped cells, rules left out; `\\|` stays inside a cell."""
    found = []
    for line in text.splitlines():
        if line.startswith("| ") and not re.fullmatch(r"[|\s:-]+", line):
            found.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]])
    return found


def row(text: str, first: str) -> list[str]:
    return next(r for r in rows(text) if r[0] == first)


def test_sections_come_in_the_tutorial_order() -> None:
    text = render_markdown(sample_input())
    keys = ["configuration", "metrics", "conclusions", "next", "tags", "diagnostics", "changes", "no-answer", "failures"]
    positions = [text.index(f"## {heading('both', key)}") for key in keys]
    assert text.startswith("# RAG 检索层评估报告") and positions == sorted(positions)


def test_configuration_lists_the_eval_set_metrics_and_environment() -> None:
    text = section(render_markdown(sample_input()), "configuration")
    for line in [
        "- 评估集 / eval set：3 题 / questions（keyword 1 / no-answer 1 / semantic 1）",
        "- 可回答 / answerable：2",
        "- 无答案 / no-answer：1",
        "- 金标准相关块 / gold chunks：3",
        "- k：5",
        "- embedding：sentence-transformers:all-MiniLM-L6-v2",
        "- 重排模型 / rerankers：BAAI/bge-reranker-base（不可用 / unavailable）",
        "- 切块数 / chunks：4",
        "- 数据库 / database：embedded: PostgreSQL 16.2, pgvector 0.6.2",
        "- 基线 / baseline：baselines/retrieval.json（可比 / comparable）",
        "  - precision@5：relevant chunks in the top k / k",
        "  - ndcg@5：DCG@k / ideal DCG@k",
        "- ⚠️ the eval set has 2 answerable questions, fewer than 20",
    ]:
        assert line in text.splitlines()


def test_metrics_table_has_values_with_deltas_and_the_skipped_row() -> None:
    text = section(render_markdown(sample_input()), "metrics")
    assert rows(text)[0][:5] == ["retriever", "type", "status", "precision@5", "ndcg@5"]
    assert row(text, "hybrid") == [
        "hybrid", "hybrid", "ran", "0.3000", "0.7500 (-0.1000)", "0/1", "1.2 / 3.4"]
    assert row(text, "hybrid_rerank")[:5] == ["hybrid_rerank", "rerank", "unavailable", "—", "—"]
    assert "- hybrid_rerank: unavailable: cross-encoder not available" in text.splitlines()


def test_significance_table_shows_adjusted_and_unadjusted_p_the_interval_and_the_mde() -> None:
    text = section(render_markdown(sample_input()), "metrics")
    significance = text[text.index(heading('both', "significance")):]
    assert "p max-T-adjusted (one resample applied to every item together, step-down; items with no " in significance
    assert "difference at all leave the family) over the 2 metric items judged" in significance
    held = section(render_markdown(replace(sample_input(), adjustment="holm")), "metrics")
    assert "p Holm-adjusted (items with no difference at all leave the family) over the 2 metric items" in held
    unadjusted = section(render_markdown(replace(sample_input(), adjustment="none")), "metrics")
    assert 'p not adjusted for the number of items (adjustment = "none")' in unadjusted
    assert "(z0.975 + z0.80) · sd / √n" in significance
    hybrid = [line for line in significance.splitlines() if line.startswith("| hybrid ")]
    assert [cell.strip() for cell in hybrid[1].strip("|").split("|")] == [
        "hybrid", "ndcg@5", "0.8500", "0.7500", "-0.1000", "2", "0.0310", "0.0155", "[-0.1800, -0.0200]", "0.4203"]


def test_what_changed_since_the_baseline_is_listed_above_the_table() -> None:
    text = section(render_markdown(sample_input()), "metrics")
    since = text[text.index(heading('both', "since")):text.index("| retriever")]
    assert "- compared across changes: hybrid.weights [1.0, 0.5] -> [0.2, 1.0]" in since
    assert "- questions: 2 comparable, 1 added (q03)" in since


def test_per_tag_table_against_the_baseline_tags() -> None:
    text = section(render_markdown(sample_input()), "tags")
    assert "### hybrid" in text
    assert row(text, "keyword") == ["keyword", "1", "0.2000", "1.0000 (+0.3000)"]
    assert row(text, "semantic") == ["semantic", "1", "0.4000", "0.5000 (-0.5000)"]


def test_diagnostics_explain_the_pool_recall_ceiling() -> None:
    cells = row(section(render_markdown(sample_input()), "diagnostics"), "hybrid")
    assert cells[1:3] == ["pool_recall@20", "0.9000"] and "ceiling no reranker can pass" in cells[3]


def test_regressed_and_improved_questions_with_both_rankings() -> None:
    text = section(render_markdown(sample_input()), "changes")
    assert "### hybrid — ndcg@5" in text
    assert text.index("退步 / regressed") < text.index("q01") < text.index("进步 / improved") < text.index("q02")
    assert row(text, "q01") == [
        "q01", "住宿标准一晚多少钱", "1.0000", "0.5000", "-0.5000", "travel-001 ✓2, travel-002 ✓1",
        "**travel-001** ✓2, **travel-002** ✓1", "service-001, **travel-001** ✓2",
    ]
    assert row(text, "q02")[2:5] == ["0.7000", "1.0000", "+0.3000"]
    assert row(text, "q02")[6:] == ["travel-002, **error-001** ✓2", "**error-001** ✓2"]


def test_no_answer_question_shows_what_came_back() -> None:
    text = section(render_markdown(sample_input()), "no-answer")
    assert row(text, "q03") == ["q03", "公司年会在哪里办", "✗ service-001"]
    assert row(text, "空返回 / empty")[-1] == "0/1"


def test_an_empty_no_answer_result_is_marked_right() -> None:
    data = sample_input()
    hybrid = replace(data.retrievers[0], rankings={**data.retrievers[0].rankings, "q03": ()})
    text = section(render_markdown(replace(data, retrievers=(hybrid, data.retrievers[1]))), "no-answer")
    assert row(text, "q03")[2] == "✓ （空 / empty）" and row(text, "空返回 / empty")[-1] == "1/1"


def test_failures_are_listed_with_their_message() -> None:
    text = section(render_markdown(sample_input()), "failures")
    assert "- ❌ **hybrid · ndcg@5** — rag::hybrid::ndcg@5" in text
    assert "  ndcg@5 of 'hybrid' fell from 0.8500 to 0.7500" in text.splitlines()
    assert render_markdown(sample_input()).splitlines()[2] == "结果 / result：❌ 1 项未通过 / 1 failed; 1 项无定论 / 1 inconclusive"


def test_a_failure_message_with_backticks_gets_a_longer_fence() -> None:
    failure = Failure("rag::x", "hybrid", "ndcg@5", "first\n```\nlast")
    text = section(render_markdown(replace(sample_input(), failures=(failure,))), "failures")
    assert "  ````text" in text.splitlines() and "  ```" in text.splitlines() and "  ````" in text.splitlines()


def test_no_baseline_means_no_deltas_no_significance_no_changes() -> None:
    # comparisons between configurations do not need a baseline and print their own deltas: left out here
    text = render_markdown(replace(without_baseline(sample_input()), pairs=()))
    assert "(+" not in text and "(-" not in text and heading('both', "significance") not in text
    assert row(section(text, "metrics"), "hybrid")[3:5] == ["0.3000", "0.7500"]
    assert row(section(text, "tags"), "keyword") == ["keyword", "1", "0.2000", "1.0000"]
    assert "不可比或不存在" in section(text, "configuration")
    assert "no per-question baseline to compare with" in section(text, "changes")


def test_an_error_retriever_and_no_failures() -> None:
    data = sample_input()
    broken = RetrieverView(name="bm25", type="bm25", status="error", reason="index missing")
    text = render_markdown(replace(data, retrievers=(*data.retrievers, broken), failures=()))
    assert row(section(text, "metrics"), "bm25")[:4] == ["bm25", "bm25", "error", "—"]
    assert "- bm25: error: index missing" in section(text, "metrics").splitlines()
    assert section(text, "failures").rstrip().endswith("无 / none")
    assert "结果 / result：✅ 无失败项 / no failures" in text


def test_only_skipped_retrievers_still_render() -> None:
    data = sample_input()
    text = render_markdown(replace(data, retrievers=(data.retrievers[1],), failures=()))
    assert "hybrid_rerank" in text and section(text, "no-answer").rstrip().endswith("无 / none")


def test_table_cells_escape_pipes_newlines_and_html() -> None:
    data = sample_input()
    odd = RetrieverView(name="a|b", type="bm25", status="unavailable", reason="line one\nline <two>")
    text = section(render_markdown(replace(data, retrievers=(odd,))), "metrics")
    assert "| a\\|b " in text and "line one<br>line &lt;two>" in text
    assert len(row(text, "a\\|b")) == len(rows(text)[0])



def test_comparisons_conclusions_and_next_steps_come_from_the_numbers() -> None:
    text = render_markdown(sample_input())
    pairs = section(text, "metrics").split(f"### {heading('both', 'pairs')}", 1)[1]
    assert row(pairs, "hybrid vs vector") == ["hybrid vs vector", "precision@5", "-0.0500", "0.5000", "[-0.1000, +0.0000]", "0 / 1 / 1"]
    assert "paired two-sided randomization test" in pairs
    conclusions = section(text, "conclusions")
    assert "- hybrid vs vector: precision@5 -0.0500 (p = 0.5000, not significant), ndcg@5 +0.1000 (p = 0.0310, significant)" in conclusions
    assert "- highest: precision@5 hybrid 0.3000, ndcg@5 hybrid 0.7500" in conclusions
    steps = section(text, "next")
    assert "- hybrid is significantly better than vector on ndcg@5 (p ≤ 0.0310)" in steps
    assert "- grow the eval set to at least 20 answerable questions (now 2)" in steps


def test_a_pair_without_a_test_shows_deltas_and_counts() -> None:
    """Two retrievers that share fewer than 2 scored questions get no p and no interval."""
    data = sample_input()
    bare = tuple(structs.replace(c, p_value=None, ci95=None) for c in data.pairs)
    text = render_markdown(replace(data, pairs=bare))
    assert row(section(text, "metrics").split(f"### {heading('both', 'pairs')}", 1)[1], "hybrid vs vector")[2:] == ["-0.0500", "—", "—", "0 / 1 / 1"]
    assert "- hybrid vs vector: precision@5 -0.0500, ndcg@5 +0.1000" in section(text, "conclusions")


def test_a_significant_loss_says_what_to_tune() -> None:
    data = sample_input()
    worse = tuple(structs.replace(c, delta=-c.delta) for c in data.pairs)
    steps = section(render_markdown(replace(data, pairs=worse)), "next")
    assert ("- hybrid is significantly worse than vector on ndcg@5 (p ≤ 0.0310): keep vector, "
            "or tune its weights, depth or rrf_k and compare again") in steps
