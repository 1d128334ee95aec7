"""A small, fully populated report input for the renderer tests (Markdown, HTML, GitHub output)."""
from __future__ import annotations

import re
from dataclasses import replace

from pytest_ragretrieval.record.report import (
    ChunkView,
    Failure,
    QuestionView,
    ReportInput,
    RetrieverView,
)
from pytest_ragretrieval.record.types import Comparison, Finding, ItemOutcome, PairComparison, Retriever

CJK = re.compile("[\u2e80-\u2fff\u3000-\u303f\u3040-\u9fff\uac00-\ud7af\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]")
"""Any CJK character, full-width punctuation included: what an English-only report must not hold."""


def sample_input() -> ReportInput:
    """A small, fully populated input for renderer tests and examples."""
    questions = (
        QuestionView("q01", "住宿标准一晚多少钱", ("semantic",), {"travel-001": 2, "travel-002": 1}),
        QuestionView("q02", "ORDER-2024 是什么错误", ("keyword",), {"error-001": 2}),
        QuestionView("q03", "公司年会在哪里办", ("no-answer",), {}),
    )
    chunks = {
        "travel-001": ChunkView("travel-001", "一线城市住宿标准为每晚不超过600元。", "差旅报销制度.md"),
        "travel-002": ChunkView("travel-002", "城市等级划分：一线城市包括北京、上海。", "差旅报销制度.md"),
        "error-001": ChunkView("error-001", "ORDER-2024 表示订单已超时关闭，请重新下单。", "错误码手册.md"),
        "service-001": ChunkView("service-001", "客服工作时间为周一至周五9:00到18:00。<b>", "客服.md"),
    }
    labels = ("precision@5", "ndcg@5")
    ran = RetrieverView(
        name="hybrid", type="hybrid", status="ran",
        metrics={"precision@5": 0.3, "ndcg@5": 0.75},
        tags={"keyword": {"precision@5": 0.2, "ndcg@5": 1.0}, "semantic": {"precision@5": 0.4, "ndcg@5": 0.5}},
        rankings={"q01": ("service-001", "travel-001"), "q02": ("error-001",), "q03": ("service-001",)},
        values={"q01": {"precision@5": 0.2, "ndcg@5": 0.5}, "q02": {"precision@5": 0.2, "ndcg@5": 1.0}, "q03": {}},
        comparisons={
            "precision@5": Comparison(0.3, 0.3, 0.0, 1.0, (0.0, 0.0), 1.0, 2, 2, mde=0.0),
            "ndcg@5": Comparison(0.85, 0.75, -0.1, 0.031, (-0.18, -0.02), 0.0155, 2, 2, mde=0.4203),
        },
        baseline_tags={"keyword": {"precision@5": 0.2, "ndcg@5": 0.7}, "semantic": {"precision@5": 0.4, "ndcg@5": 1.0}},
        baseline_rankings={"q01": ("travel-001", "travel-002"), "q02": ("travel-002", "error-001"), "q03": ()},
        baseline_values={"q01": {"precision@5": 0.4, "ndcg@5": 1.0}, "q02": {"precision@5": 0.2, "ndcg@5": 0.7}},
        no_answer_total=1, no_answer_empty=0, latency_p50=1.2, latency_p95=3.4,
        diagnostics={"pool_recall@20": 0.9},
        entry=Retriever(metrics={"precision@5": 0.3, "ndcg@5": 0.75}, segments={
            "lang:de": {"ndcg@5": Comparison(0.9, 0.6, -0.3, 0.0156, (-0.5, -0.1), 0.0156, 2, 20)},
            "lang:en": {"ndcg@5": Comparison(0.8, 0.8, 0.0, 1.0, (0.0, 0.0), 1.0, 2, 30)},
            # shown, not judged; its `_` and `|` are escaped in Markdown
            "lang:fr_[ca]|": {"ndcg@5": Comparison(0.7, 0.5, -0.2, None, None, 0.25, 0, 4)},
        }),
    )
    skipped = RetrieverView(name="hybrid_rerank", type="rerank", status="unavailable", reason="cross-encoder not available")
    return ReportInput(
        k=5, metrics=labels,
        definitions={"precision@5": "relevant chunks in the top k / k", "ndcg@5": "DCG@k / ideal DCG@k"},
        questions=questions, chunks=chunks, retrievers=(ran, skipped),
        embedder="sentence-transformers:all-MiniLM-L6-v2", rerankers=("BAAI/bge-reranker-base",),
        unavailable_rerankers=("BAAI/bge-reranker-base",),
        database="embedded: PostgreSQL 16.2, pgvector 0.6.2", baseline_path="baselines/retrieval.json",
        comparable=True, notes=("the eval set has 2 answerable questions, fewer than 20",),
        failures=(Failure("rag::hybrid::ndcg@5", "hybrid", "ndcg@5", "ndcg@5 of 'hybrid' fell from 0.8500 to 0.7500"),),
        pairs=(
            PairComparison("hybrid", "vector", "precision@5", -0.05, 0, 1, 1, 0.5, (-0.1, 0.0)),
            PairComparison("hybrid", "vector", "ndcg@5", 0.1, 2, 0, 0, 0.031, (0.02, 0.18)),
        ),
        pair_method="randomization",
        since=("compared across changes: hybrid.weights [1.0, 0.5] -> [0.2, 1.0]",
               "questions: 2 comparable, 1 added (q03), 0 removed, 0 edited; added ones are scored, never judged"),
        significance="randomization", family=2,
        outcomes=(ItemOutcome("rag::hybrid::precision@5", "hybrid", "precision@5", Finding.INCONCLUSIVE, "today", 0.0,
                              1.0, True, 44),
                  ItemOutcome("rag::hybrid::ndcg@5", "hybrid", "ndcg@5", Finding.REGRESSION, "today", -0.1, 0.0155,
                              False),
                  ItemOutcome("rag::hybrid::segment::lang:de::ndcg@5", "hybrid", "lang:de::ndcg@5", Finding.REGRESSION,
                              "today", -0.3, 0.0156, False)),
    )


def without_baseline(data: ReportInput) -> ReportInput:
    """The same run with no comparable baseline: no recorded values anywhere."""
    views = tuple(
        replace(view, comparisons={label: Comparison(None, c.value, None) for label, c in view.comparisons.items()},
                baseline_tags={}, baseline_rankings={}, baseline_values={})
        for view in data.retrievers
    )
    return replace(data, retrievers=views, comparable=False)
