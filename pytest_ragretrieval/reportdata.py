"""Everything a report shows, gathered once by the session; the renderers are pure functions of it."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping

EPSILON = 1e-9


@dataclass(frozen=True)
class Comparison:
    """One retriever x metric against the baseline; `p_value`/`ci95` only in significance mode."""

    baseline: float | None
    value: float
    delta: float | None
    p_value: float | None = None
    ci95: tuple[float, float] | None = None


@dataclass(frozen=True)
class QuestionView:
    id: str
    query: str
    tags: tuple[str, ...]
    relevance: Mapping[str, int] = field(hash=False)

    @property
    def answerable(self) -> bool:
        return any(grade >= 1 for grade in self.relevance.values())


@dataclass(frozen=True)
class ChunkView:
    id: str
    text: str
    doc: str | None


@dataclass(frozen=True)
class RetrieverView:
    """One retriever's results and, when the baseline is comparable, its recorded counterpart."""

    name: str
    type: str
    status: str  # "ran", "skipped" or "error"
    reason: str = ""
    metrics: Mapping[str, float] = field(default_factory=dict, hash=False)
    tags: Mapping[str, Mapping[str, float]] = field(default_factory=dict, hash=False)
    rankings: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)
    values: Mapping[str, Mapping[str, float]] = field(default_factory=dict, hash=False)
    comparisons: Mapping[str, Comparison] = field(default_factory=dict, hash=False)
    baseline_tags: Mapping[str, Mapping[str, float]] = field(default_factory=dict, hash=False)
    baseline_rankings: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)
    baseline_values: Mapping[str, Mapping[str, float]] = field(default_factory=dict, hash=False)
    no_answer_total: int = 0
    no_answer_empty: int = 0
    latency_p50: float = 0.0
    latency_p95: float = 0.0
    diagnostics: Mapping[str, float] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class Failure:
    """A failed item of the gate, as pytest reported it."""

    nodeid: str
    retriever: str
    metric: str
    message: str


@dataclass(frozen=True)
class ReportInput:
    k: int
    metrics: tuple[str, ...]
    definitions: Mapping[str, str] = field(hash=False)
    questions: tuple[QuestionView, ...]
    chunks: Mapping[str, ChunkView] = field(hash=False)
    retrievers: tuple[RetrieverView, ...]
    embedder: str
    rerankers: tuple[str, ...]
    database: str
    baseline_path: str
    comparable: bool
    notes: tuple[str, ...] = ()
    failures: tuple[Failure, ...] = ()

    @property
    def primary(self) -> str:
        """The metric that decides which questions regressed or improved: nDCG when gated, else the first."""
        return next((label for label in self.metrics if label.startswith("ndcg@")), self.metrics[0])

    @property
    def tag_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for question in self.questions:
            for tag in question.tags:
                counts[tag] = counts.get(tag, 0) + 1
        return dict(sorted(counts.items()))

    @property
    def gold_count(self) -> int:
        return sum(1 for q in self.questions for grade in q.relevance.values() if grade >= 1)


@dataclass(frozen=True)
class QuestionChange:
    question: QuestionView
    before: float
    after: float
    ranking_before: tuple[str, ...]
    ranking_after: tuple[str, ...]

    @property
    def delta(self) -> float:
        return self.after - self.before


def question_changes(data: ReportInput, view: RetrieverView) -> tuple[list[QuestionChange], list[QuestionChange]]:
    """(regressed worst first, improved best first) on the primary metric, ties by question id."""
    label = data.primary
    regressed: list[QuestionChange] = []
    improved: list[QuestionChange] = []
    for question in data.questions:
        now = view.values.get(question.id, {})
        then = view.baseline_values.get(question.id, {})
        if label not in now or label not in then:
            continue
        change = QuestionChange(
            question, then[label], now[label],
            view.baseline_rankings.get(question.id, ()), view.rankings.get(question.id, ()),
        )
        if change.delta < -EPSILON:
            regressed.append(change)
        elif change.delta > EPSILON:
            improved.append(change)
    regressed.sort(key=lambda c: (c.delta, c.question.id))
    improved.sort(key=lambda c: (-c.delta, c.question.id))
    return regressed, improved


def no_answer_rows(data: ReportInput, view: RetrieverView) -> list[tuple[QuestionView, tuple[str, ...]]]:
    """Each no-answer question with what the retriever returned for it (empty is the right answer)."""
    return [(q, view.rankings.get(q.id, ())) for q in data.questions if not q.answerable]


def format_value(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"


def format_delta(value: float | None) -> str:
    return "" if value is None else f"{value:+.4f}"


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
            "precision@5": Comparison(0.3, 0.3, 0.0),
            "ndcg@5": Comparison(0.85, 0.75, -0.1, 0.031, (-0.18, -0.02)),
        },
        baseline_tags={"keyword": {"precision@5": 0.2, "ndcg@5": 0.7}, "semantic": {"precision@5": 0.4, "ndcg@5": 1.0}},
        baseline_rankings={"q01": ("travel-001", "travel-002"), "q02": ("travel-002", "error-001"), "q03": ()},
        baseline_values={"q01": {"precision@5": 0.4, "ndcg@5": 1.0}, "q02": {"precision@5": 0.2, "ndcg@5": 0.7}},
        no_answer_total=1, no_answer_empty=0, latency_p50=1.2, latency_p95=3.4,
        diagnostics={"pool_recall@20": 0.9},
    )
    skipped = RetrieverView(name="hybrid_rerank", type="rerank", status="skipped", reason="cross-encoder not available")
    return ReportInput(
        k=5, metrics=labels,
        definitions={"precision@5": "relevant chunks in the top k / k", "ndcg@5": "DCG@k / ideal DCG@k"},
        questions=questions, chunks=chunks, retrievers=(ran, skipped),
        embedder="sentence-transformers:all-MiniLM-L6-v2", rerankers=("BAAI/bge-reranker-base",),
        database="embedded: PostgreSQL 16.2, pgvector 0.6.2", baseline_path="baselines/retrieval.json",
        comparable=True, notes=("the eval set has 2 answerable questions, fewer than 20",),
        failures=(Failure("rag::hybrid::ndcg@5", "hybrid", "ndcg@5", "ndcg@5 of 'hybrid' fell from 0.8500 to 0.7500"),),
    )


def without_baseline(data: ReportInput) -> ReportInput:
    """The same run with no comparable baseline: no recorded values anywhere."""
    views = tuple(
        replace(view, comparisons={label: Comparison(None, c.value, None) for label, c in view.comparisons.items()},
                baseline_tags={}, baseline_rankings={}, baseline_values={})
        for view in data.retrievers
    )
    return replace(data, retrievers=views, comparable=False)
