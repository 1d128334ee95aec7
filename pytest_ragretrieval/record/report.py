"""The reports' view of a run: everything a report shows, built by one function (`report/view.py`) from
the run record, the eval set and the run's descriptions, for the live run and for a results file alike;
the renderers are pure functions of it."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..core.values import EPSILON, p_clause, signed
from ..scoring.metrics import primary
from .explain import Explanation
from .types import Adjustment, Comparison, ItemOutcome, PairComparison, Retriever


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
    status: str  # "ran", "unavailable" (its model or service is absent here) or "error"
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
    scored: int = 0
    """How many questions it was scored on."""
    answerable_empty: int = 0
    wrongly_empty: tuple[str, ...] = ()
    """Answerable questions it answered with nothing, by id (as many as the run lists)."""
    notes: tuple[str, ...] = ()
    """Its run's own notes."""
    entry: Retriever | None = field(default=None, hash=False)
    """Its entry in the record, whole (None when it did not run): a field added to the record's `Retriever`
    reaches every report from here, with no field to add above (CONTRIBUTING, "Adding a statistic")."""


@dataclass(frozen=True)
class Described:
    """What the reports say of the system that ran and the record does not hold: the embedder, the
    database and the configured rerankers (empty when rendered from a results file)."""

    embedder: str = ""
    database: str = ""
    rerankers: tuple[str, ...] = ()
    unavailable_rerankers: tuple[str, ...] = ()
    """Those among `rerankers` whose retriever could not run here."""


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
    """Warnings: what needs the reader's attention."""
    info: tuple[str, ...] = ()
    """Notes that need no action (rankings reused from a cached run)."""
    failures: tuple[Failure, ...] = ()
    pairs: tuple[PairComparison, ...] = ()
    """Comparisons between configurations (a against b, per metric)."""
    pair_method: str = "randomization"
    """The two-sided test that gave their p-values."""
    alpha: float = 0.05
    min_questions: int = 20
    since: tuple[str, ...] = ()
    """What changed since the baseline: the yardstick, the system under test, the questions (one line each)."""
    significance: str = "none"
    family: int = 0
    """How many metric items' p-values were adjusted together."""
    adjustment: str = "maxt"
    """How: "maxt", "holm" or "none"."""
    gated: tuple[str, ...] = ()
    """The metrics the gate judges (`metrics`, the shown ones, may add judged@k)."""
    pair_notes: tuple[str, ...] = ()
    """What kept configured pairs from being compared."""
    since_comparable: bool | None = None
    """Whether the baseline's yardstick is this run's; None without a baseline to compare with."""
    questions_changed: bool = False
    """Whether questions were added, removed or edited since the baseline."""
    unavailable_rerankers: tuple[str, ...] = ()
    """Those among `rerankers` whose retriever could not run here."""
    language: str = "both"
    """`report_language`: "both" (Chinese, then English) or "en" (English alone)."""
    explanations: Mapping[str, Mapping[str, Explanation]] = field(default_factory=dict, hash=False)
    """Question id -> retriever -> why it missed a gold chunk within k (the HTML's per-question view);
    empty when rendered from a results file."""
    outcomes: tuple[ItemOutcome, ...] = ()
    """Each judged metric item's outcome (docs/verdicts.md, "Three outcomes"), in the items' order."""

    @property
    def primary(self) -> str:
        """The metric that decides which questions regressed or improved: the registry's primary one
        (nDCG) when gated, else the first."""
        return primary(self.metrics)

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


ADJUSTED = {Adjustment.MAXT: "max-T", Adjustment.HOLM: "Holm"}
"""How each adjustment is named in a sentence: `max-T-adjusted over 6 items`."""


def no_answer_rows(data: ReportInput, view: RetrieverView) -> list[tuple[QuestionView, tuple[str, ...]]]:
    """Each no-answer question with what the retriever returned for it (empty is the right answer)."""
    return [(q, view.rankings.get(q.id, ())) for q in data.questions if not q.answerable]


def conclusion(comparisons: Sequence[PairComparison], alpha: float) -> str:
    """`hybrid vs vector: recall@5 -0.0336 (p = 0.2700, not significant), ...` for one pair."""
    parts = []
    for c in comparisons:
        if c.p_value is None:
            parts.append(f"{c.metric} {signed(c.delta)}")
            continue
        verdict = "significant" if c.significant(alpha) else "not significant"
        parts.append(f"{c.metric} {signed(c.delta)} ({p_clause(c.p_value)}, {verdict})")
    return f"{comparisons[0].a} vs {comparisons[0].b}: " + ", ".join(parts)


def by_pair(comparisons: Sequence[PairComparison]) -> list[list[PairComparison]]:
    """The comparisons grouped by (a, b), in the configured order."""
    groups: dict[tuple[str, str], list[PairComparison]] = {}
    for c in comparisons:
        groups.setdefault((c.a, c.b), []).append(c)
    return list(groups.values())
