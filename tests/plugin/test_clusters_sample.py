"""Clusters on the sample as documents (issue 50 item 2): the 53 answerable questions fall in 8 documents,
so the side-by-side comparison flips whole documents; 4 documents can never reach alpha 0.05, so the gate
judges by the tolerance alone. The p-values are checked against a cluster sign-flip enumeration written
here, apart from the code under test."""
from __future__ import annotations

import json
import shutil
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from projects import RUN

from pytest_ragretrieval.scoring.stats import randomization_p

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "fixtures" / "documents"
CONFIG = """documents = "kb"
evalset = "evalset.jsonl"
baseline = "baseline.json"
k = 5
metrics = {metrics}
significance = "randomization"
tokenizer = "jieba"
cache = "cache"
compare = [["bm25_512", "bm25"]]

[chunker]
type = "python"
python = "sample_chunker:split"

[chunkings.t512]
type = "tokens"
size = 512
overlap = 64
tokenizer = "unicode"

[retrievers.bm25]
type = "bm25"

[retrievers.bm25_512]
type = "bm25"
chunking = "t512"
"""
FOUR = {"差旅报销制度.md", "考勤与休假制度.md", "退换货与退款政策.md", "客服服务时间与渠道.md"}


def document_of(question: dict[str, Any]) -> str:
    """The document holding the question's gold: its highest-graded span's, the first by name on a tie."""
    return str(min(question["relevant_spans"], key=lambda span: (-span.get("grade", 1), span["doc"]))["doc"])


def enumerated(differences: dict[str, float], clusters: dict[str, str]) -> float:
    """The two-sided p of flipping whole clusters: the share of all sign patterns whose sum is at least as far
    from 0 as the observed one."""
    sums: dict[str, float] = {}
    for qid, value in differences.items():
        sums[clusters[qid]] = sums.get(clusters[qid], 0.0) + value
    totals = list(sums.values())
    observed = abs(sum(totals))
    flips = list(product([1, -1], repeat=len(totals)))
    return sum(1 for signs in flips if abs(sum(s * t for s, t in zip(signs, totals, strict=True))) >= observed - 1e-9
               ) / len(flips)


def sample(folder: Path, documents: set[str] | None = None, metrics: str = '["recall", "char_recall", "answer_hit"]'
           ) -> list[dict[str, Any]]:
    """The sample's documents, chunker and eval set in `folder` (only the questions whose gold lies in
    `documents`, and the no-answer ones, where given), with the config above."""
    shutil.copytree(SAMPLE / "kb", folder / "kb")
    shutil.copy(SAMPLE / "sample_chunker.py", folder / "sample_chunker.py")
    rows = [json.loads(line) for line in (SAMPLE / "evalset.jsonl").read_text(encoding="utf-8").splitlines()]
    if documents is not None:
        rows = [row for row in rows if {span["doc"] for span in row.get("relevant_spans") or []} <= documents]
    (folder / "evalset.jsonl").write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows),
                                          encoding="utf-8")
    (folder / "rag.toml").write_text(CONFIG.format(metrics=metrics), encoding="utf-8")
    return rows


def test_the_side_by_side_comparison_flips_whole_documents(pytester: pytest.Pytester) -> None:
    """bm25 at 512 tokens against the sample's own chunks: each comparison's p is the cluster sign-flip
    enumeration's over the 8 documents, where per question answer_hit@5's was below 0.01."""
    rows = sample(pytester.path)
    result = pytester.runpytest("--rag-eval", "-m", "rag_eval", "--rag-config", "rag.toml", "--rag-json=r.json",
                                "-p", "no:xdist", *RUN)
    result.stdout.fnmatch_lines(["rag: clusters: the 53 answerable questions fall in 8 clusters (the documents "
                                 "holding their gold); tests flip and resample whole clusters, so no p falls below "
                                 "2^-8 = 0.0039"])
    found = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))
    clusters = {row["id"]: document_of(row) for row in rows if row.get("relevant_spans")}
    compared = {c["metric"]: c for c in found["comparisons"]}
    questions = {name: found["retrievers"][name]["questions"] for name in ("bm25_512", "bm25")}
    a, b = questions["bm25_512"], questions["bm25"]
    for label in ("answer_hit@5", "char_recall@5"):
        differences = {qid: a[qid]["metrics"][label] - b[qid]["metrics"][label]
                       for qid in a if label in a[qid]["metrics"] and label in b[qid]["metrics"]}
        assert len(differences) == 53 and set(differences) == set(clusters)
        assert abs(compared[label]["p_value"] - enumerated(differences, clusters)) <= 0.01
        if label == "answer_hit@5":  # per question below 0.01; whole documents: not significant
            assert randomization_p(np.array(list(differences.values())), "two-sided") < 0.01
            assert compared[label]["p_value"] > 0.05


def test_four_documents_judge_by_the_tolerance_alone(pytester: pytest.Pytester) -> None:
    """The sample's questions about 4 documents: the header says no item can reach alpha 0.05, and a change
    that lowers the values (bm25 cutting Chinese with the English tokenizer) fails by the tolerance alone,
    naming the 4 clusters: a test that could never give p < 0.05 does not pass it. The adjustment line says no
    item was tested (not that nothing moved), and the results file says each was judged over 4 clusters."""
    sample(pytester.path, FOUR, metrics='["char_recall", "answer_hit"]')
    recorded = pytester.runpytest("--rag-update-baseline", "--rag-config", "rag.toml", "-p", "no:xdist", *RUN)
    assert recorded.ret == 0, recorded.stdout.str()
    (pytester.path / "rag.toml").write_text((pytester.path / "rag.toml").read_text(encoding="utf-8").replace(
        'type = "bm25"\n\n', 'type = "bm25"\ntokenizer = "english"\n\n'), encoding="utf-8")
    result = pytester.runpytest("--rag-eval", "--rag-config", "rag.toml", "--rag-json=r.json", "-p", "no:xdist", *RUN)
    result.stdout.fnmatch_lines([
        "rag: clusters: the 26 answerable questions fall in 4 clusters (the documents holding their gold); tests "
        "flip and resample whole clusters, so no p falls below 2^-4 = 0.0625, not below alpha 0.05: no item can "
        'reach it, so a drop beyond the tolerance fails by the tolerance alone (as significance = "none")',
        "*answer_hit@5 of 'bm25' fell from * its 4 clusters (today's exam) allow no p below 2^-4 = 0.0625, not "
        "below alpha 0.05: judged by the tolerance alone*",
        "p-values of a randomization test (alpha 0.05): no metric item was tested: their clusters allow no p below "
        "alpha, and each was judged by the tolerance alone, so none was adjusted",
    ])
    assert "no metric item moved on any question" not in result.stdout.str()
    assert result.ret == 1
    found = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))
    judged = found["retrievers"]["bm25"]["comparison"]["answer_hit@5"]
    assert judged["clusters"] == 4 and judged["p_value"] is None
