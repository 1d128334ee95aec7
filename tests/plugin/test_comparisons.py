"""Comparisons between configurations through the gate: the terminal, --rag-json and the report; never a failure."""
from __future__ import annotations

import pytest
from projects import GOLD, RUN, read_results, write_project

RETRIEVERS = """
[tool.ragretrieval.retrievers.bm25]
type = "bm25"

[tool.ragretrieval.retrievers.table]
type = "python"
factory = "table_retriever:make"

[tool.ragretrieval.retrievers.fused]
type = "hybrid"
sources = ["table", "bm25"]
"""


def test_pairs_are_shown_written_and_never_fail(pytester: pytest.Pytester) -> None:
    write_project(pytester.path, retrievers=RETRIEVERS, settings='metrics = ["recall", "mrr"]')
    result = pytester.runpytest("--rag-update-baseline", "--rag-json", "out.json", "--rag-report", "report.md", *RUN)
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines([
        "comparisons (paired two-sided randomization test; w/t/l: questions a wins, ties, loses against b):",
        "a vs b          metric    delta    p       95% CI              w/t/l",
        "*",
        "fused vs table  recall@3  +0.0000  1.0000  [+0.0000, +0.0000]  0/5/0",
        "fused vs table  mrr@3     *",
        "fused vs bm25   recall@3  +0.1000  1.0000  [+0.0000, +0.3000]  1/4/0",
        "fused vs bm25   mrr@3     *",
    ])
    comparisons = read_results(pytester.path / "out.json")["comparisons"]
    assert [(c["a"], c["b"], c["metric"]) for c in comparisons] == [
        ("fused", "table", "recall@3"), ("fused", "table", "mrr@3"), ("fused", "bm25", "recall@3"), ("fused", "bm25", "mrr@3"),
    ]
    first = comparisons[0]
    assert set(first) == {"a", "b", "metric", "delta", "p_value", "ci95", "wins", "ties", "losses"}
    assert first["wins"] + first["ties"] + first["losses"] == 5 and 0 < first["p_value"] <= 1
    report = (pytester.path / "report.md").read_text(encoding="utf-8")
    assert "## 结论 / Conclusions" in report and "- fused vs table: recall@3 " in report
    assert "## 下一步 / Next steps" in report


def test_compare_chooses_the_pairs(pytester: pytest.Pytester) -> None:
    write_project(pytester.path, settings='compare = [["bm25", "table"]]', rankings=dict(GOLD, q01=[]))
    result = pytester.runpytest("--rag-update-baseline", "--rag-json", "out.json", *RUN)
    result.assert_outcomes(passed=8)
    assert {(c["a"], c["b"]) for c in read_results(pytester.path / "out.json")["comparisons"]} == {("bm25", "table")}
    result.stdout.fnmatch_lines(["bm25 vs table  precision@3  *"])
