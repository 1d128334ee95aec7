"""Retrieval metrics, one pure function each, defined exactly as trec_eval defines them.

Every function takes one ranking (chunk ids, best first, no duplicates) and one relevance map
(chunk id -> grade) and scores the first `k` ids. A chunk is relevant when its grade is >= 1;
unjudged chunks count as grade 0 (only `judged` tells them apart). A ranking shorter than `k` is
scored as trec_eval scores it: precision still divides by `k` and the ideal DCG is still cut at `k`
(`judged`, ir_measures' measure, divides by the ranking's length, as ir_measures does).
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import cast

from ..core.errors import did_you_mean
from ..core.extensions import Registry
from ..evalset.records import Span
from ..files.jsontext import MAX_CUTOFF_DIGITS, METRIC_KEY, budget, cutoff
from .spans import answer_hit, char_iou, char_precision, char_recall

METRICS_VERSION = 2
"""Bumped whenever a definition changes, so old baselines stop comparing (pitfall 3). 2: `ann_recall` counts
a swap with a tie (within `ann_tie_epsilon` of the exact k-th distance) as no miss."""
ANN_TIE_EPSILON = 1e-4
"""The default `ann_tie_epsilon`: cosine distances this close to the exact k-th are ties."""

Ranking = Sequence[str]
Relevance = Mapping[str, int]
RankingFunction = Callable[[Ranking, Relevance, int], float]
SpanFunction = Callable[[Sequence[Span], Sequence[Span]], float]
"""A span metric's function (scoring/spans.py): the top k's chunk spans in rank order, the gold spans."""


def ann_overlap(found: Sequence[tuple[str, float]], exact: Sequence[tuple[str, float]], epsilon: float) -> float:
    """The share of the exact top k (`exact`: (chunk id, distance), nearest first, ties by id) that the
    index returned (`found`), ties counted: a chunk the index returned outside the exact top k whose
    distance is at most the exact k-th's plus `epsilon` took the place of a chunk as near as it, which is
    no loss of the index's. What `ann_recall@k` averages over the queries."""
    if not exact:
        raise ValueError("ann_overlap needs the exact top k: an empty one has no share")
    kth = exact[-1][1]
    members = {chunk_id for chunk_id, _ in exact}
    kept = sum(1 for chunk_id, _ in found if chunk_id in members)
    tied = sum(1 for chunk_id, distance in found if chunk_id not in members and distance <= kth + epsilon)
    return min(len(exact), kept + tied) / len(exact)


def _relevant_count(relevance: Relevance) -> int:
    return sum(1 for grade in relevance.values() if grade >= 1)


def _hits(ranking: Ranking, relevance: Relevance, k: int) -> int:
    return sum(1 for chunk_id in ranking[:k] if relevance.get(chunk_id, 0) >= 1)


def precision(ranking: Ranking, relevance: Relevance, k: int) -> float:
    """Share of the k slots holding a relevant chunk (trec_eval P_k)."""
    return _hits(ranking, relevance, k) / k


def recall(ranking: Ranking, relevance: Relevance, k: int) -> float:
    """Share of the relevant chunks found in the top k (trec_eval recall_k); 0 when none exist."""
    total = _relevant_count(relevance)
    return _hits(ranking, relevance, k) / total if total else 0.0


def f1(ranking: Ranking, relevance: Relevance, k: int) -> float:
    """Harmonic mean of this question's precision@k and recall@k, as in the tutorial."""
    p = precision(ranking, relevance, k)
    r = recall(ranking, relevance, k)
    return 2 * p * r / (p + r) if p + r else 0.0


def ndcg(ranking: Ranking, relevance: Relevance, k: int) -> float:
    """Graded nDCG@k (trec_eval ndcg_cut_k): gain = grade, discount log2(rank + 1)."""
    dcg = sum(
        relevance.get(chunk_id, 0) / math.log2(rank + 1)
        for rank, chunk_id in enumerate(ranking[:k], start=1)
        if relevance.get(chunk_id, 0) > 0
    )
    ideal_grades = sorted((g for g in relevance.values() if g > 0), reverse=True)[:k]
    ideal = sum(grade / math.log2(rank + 1) for rank, grade in enumerate(ideal_grades, start=1))
    return dcg / ideal if ideal else 0.0


def hit_rate(ranking: Ranking, relevance: Relevance, k: int) -> float:
    """1 when any relevant chunk is in the top k, else 0 (trec_eval success_k)."""
    return 1.0 if _hits(ranking, relevance, k) else 0.0


def mrr(ranking: Ranking, relevance: Relevance, k: int) -> float:
    """Reciprocal rank of the first relevant chunk within the top k, else 0 (recip_rank cut at k)."""
    for rank, chunk_id in enumerate(ranking[:k], start=1):
        if relevance.get(chunk_id, 0) >= 1:
            return 1.0 / rank
    return 0.0


def average_precision(ranking: Ranking, relevance: Relevance, k: int) -> float:
    """Average precision cut at k, divided by all relevant chunks (trec_eval map_cut_k)."""
    total = _relevant_count(relevance)
    if not total:
        return 0.0
    found = 0
    summed = 0.0
    for rank, chunk_id in enumerate(ranking[:k], start=1):
        if relevance.get(chunk_id, 0) >= 1:
            found += 1
            summed += found / rank
    return summed / total


def judged(ranking: Ranking, relevance: Relevance, k: int) -> float:
    """Share of the top k holding a judged chunk, grade 0 included, as ir_measures' Judged@k (0.3.1 on)
    computes it: a ranking shorter than k is divided by its length, since no slot past its end exists to
    be unjudged. An empty ranking judges nothing: 0 (ir_measures cannot score it)."""
    top = ranking[:k]
    return sum(1 for chunk_id in top if chunk_id in relevance) / len(top) if top else 0.0


def abstention(ranking: Ranking, relevance: Relevance, k: int) -> float:
    """1 when a no-answer question got an empty result (the honest answer), else 0."""
    return 0.0 if ranking[:k] else 1.0


class Measures(Enum):
    """What a metric's value says something about."""

    RETRIEVER = "retriever"
    """The retriever: a higher value is a better retriever; it can lead, drop and improve."""
    LABELS = "labels"
    """The eval set's labels (judged@k: how much of the top k anyone judged): shown beside the
    retriever's metrics, it leads nothing and counts as neither a drop nor an improvement."""


class Shown(Enum):
    """When a metric is shown and scored."""

    LISTED = "listed"
    """When the config's `metrics` lists it (gated then)."""
    ALWAYS = "always"
    """Always, beside the listed ones; gated and in the baseline only when `metrics` lists it, so
    showing it changes no baseline's comparability."""


@dataclass(frozen=True)
class Metric:
    """One metric: its function, the definition every report prints, the questions it scores, and its
    roles (what it measures, whether it is gated by default, how it is shown): the one place a metric's
    name is known, so no other module compares names.

    A new metric is one function and one `Metric` line in METRICS (or, from another distribution,
    an entry point in the group `pytest_ragretrieval.metrics` naming its `Metric`). The roles have
    defaults, so a `Metric` written before them still loads.
    """

    name: str
    function: RankingFunction | SpanFunction
    """(ranking, relevance, k) -> value; a span metric's (`spans`) takes (retrieved spans, gold spans)."""
    definition: str
    no_answer: bool = False
    """True for metrics scored on no-answer questions only; they take no cutoff."""
    bounds: tuple[float, float] = (0.0, 1.0)
    """The values a question's score or a mean can take; a baseline value outside them is an error."""
    hit: bool = False
    """True when a question's value is above 0 exactly when a relevant chunk is within the cutoff:
    the baseline's per-question values then tell a hit (`fail_on = ["question"]`) apart."""
    measures: Measures = Measures.RETRIEVER
    """What its value is about; a metric of the labels leads nothing and counts in no diff."""
    default: bool = False
    """Listed (and so gated) when a config names no `metrics`; only a built-in can be (a
    distribution installed must not change what existing configs gate)."""
    shown: Shown = Shown.LISTED
    """Shown only when listed, or always (judged@k)."""
    primary: bool = False
    """The metric that decides which questions regressed or improved when listed (nDCG); else the first listed."""
    spans: bool = False
    """True for a span metric: scored on the characters the top k's chunks share with the question's gold
    spans (documents mode only; scoring/evaluate.py cuts the top k and passes the spans)."""

    def __call__(self, ranking: Ranking, relevance: Relevance, k: int) -> float:
        if self.spans:
            raise TypeError(f"{self.name} scores spans: call over_spans")
        return cast(RankingFunction, self.function)(ranking, relevance, k)

    def over_spans(self, retrieved: Sequence[Span], gold: Sequence[Span]) -> float:
        """A span metric's value for the retrieved chunks' spans (already cut to the top k) and the gold spans."""
        if not self.spans:
            raise TypeError(f"{self.name} scores rankings: call it")
        return cast(SpanFunction, self.function)(retrieved, gold)


_LABEL = METRIC_KEY


def checked_metric(name: str, value: object, members: Mapping[str, Metric]) -> Metric:
    """An entry point's Metric, named as the entry point and as a config can write it."""
    if not isinstance(value, Metric):
        raise ValueError(f"is a {type(value).__name__}, not a Metric (pytest_ragretrieval.scoring.metrics)")
    if value.name != name or not re.fullmatch(r"[a-z_0-9]+", name):
        raise ValueError(f"names the metric {value.name!r}; the entry point's name must be the metric's, "
                         "in lower-case letters, digits and '_'")
    if value.default or value.primary:
        raise ValueError("is a default or primary metric; a config lists a metric of another distribution itself")
    return value


METRICS: Registry[Metric] = Registry("metrics", {
    metric.name: metric
    for metric in (
        Metric("precision", precision, "relevant chunks in the top k / k", hit=True, default=True),
        Metric("recall", recall, "relevant chunks in the top k / all relevant chunks", hit=True, default=True),
        Metric("f1", f1, "2PR/(P+R) of the question's own precision@k and recall@k", hit=True, default=True),
        Metric("ndcg", ndcg, "DCG@k / ideal DCG@k, gain = grade, discount = log2(rank + 1)", hit=True, default=True,
               primary=True),
        Metric("hit_rate", hit_rate, "1 if any relevant chunk is in the top k, else 0", hit=True),
        Metric("mrr", mrr, "1 / rank of the first relevant chunk within the top k, else 0", hit=True),
        Metric("map", average_precision, "sum of precision@rank at each relevant hit within k / all relevant chunks",
               hit=True),
        Metric("char_recall", char_recall, "gold characters in the top k's chunks / the sum of the gold spans' "
               "lengths", spans=True),
        Metric("char_precision", char_precision, "gold characters in the top k's chunks / the sum of their lengths",
               spans=True),
        Metric("char_iou", char_iou, "gold characters in the top k's chunks / (the sum of their lengths + the gold "
               "characters missed)", spans=True),
        Metric("answer_hit", answer_hit, "1 if every gold span lies inside the top k's chunks, else 0", spans=True),
        Metric("abstention", abstention, "share of no-answer questions that got an empty result", no_answer=True),
        Metric("judged", judged, "judged chunks (any grade, 0 included) in the top k / min(k, ranking length)",
               measures=Measures.LABELS, shown=Shown.ALWAYS),
    )
}, checked_metric)

DEFAULT_METRICS = tuple(name for name, metric in METRICS.builtins.items() if metric.default)
"""What a config that names no `metrics` lists."""


def of_label(label: str) -> Metric | None:
    """The metric a label (`ndcg@5`, `abstention`) names; None for one the registry does not hold
    (a baseline written with an extension that is not installed here)."""
    return METRICS.get(label.partition("@")[0])


def of_retriever(label: str) -> bool:
    """Whether a label's values are about the retriever (they lead, drop and improve), not the labels."""
    found = of_label(label)
    return found is None or found.measures is Measures.RETRIEVER


def primary(labels: Sequence[str]) -> str:
    """The label that decides which questions regressed or improved: the primary metric's when
    listed, else the first."""
    return next((label for label in labels if (found := of_label(label)) is not None and found.primary), labels[0])


def always_shown(k: int) -> tuple[MetricSpec, ...]:
    """The metrics shown beside the listed ones whatever the config lists (judged@k), at cutoff k."""
    return tuple(MetricSpec(name, k) for name, metric in METRICS.items() if metric.shown is Shown.ALWAYS)


@dataclass(frozen=True, order=True)
class MetricSpec:
    """A metric at a cutoff, or a span metric at a budget of characters; its label, `name@k` or
    `name@<budget>c`, is how reports and files name it.

    A budget spec reads the top k (the config's k: the yardstick every baseline records, so a budget
    value keeps its meaning while the baseline stays comparable, whatever other cutoffs are listed) and
    scores the chunks of those that fit in `budget` characters (`spans.within_budget`)."""

    name: str
    k: int
    budget: int = 0
    """Characters; 0: none (the top k are scored whole)."""

    @property
    def metric(self) -> Metric:
        return METRICS[self.name]

    @property
    def label(self) -> str:
        if self.on_no_answer:
            return self.name
        return f"{self.name}@{self.budget}c" if self.budget else f"{self.name}@{self.k}"

    @property
    def on_no_answer(self) -> bool:
        """Whether this metric is averaged over no-answer questions instead of answerable ones."""
        return self.metric.no_answer

    @property
    def definition(self) -> str:
        return definition(self.label)

    def score(self, ranking: Ranking, relevance: Relevance) -> float:
        return self.metric(ranking, relevance, self.k)

    @classmethod
    def parse(cls, text: str, default_k: int) -> MetricSpec:
        """Parse `ndcg`, `recall@20` or `char_recall@2000c` (a span metric at a budget, over the top
        `default_k`); raises ValueError with the accepted forms."""
        match = _LABEL.fullmatch(text)
        written_name, at, written = text.partition("@")
        if not match and at and written_name in METRICS:
            if METRICS[written_name].no_answer:
                raise ValueError(f"metric {text!r}: {written_name} takes no cutoff")
            budget_form = (f", or such digits then 'c' for a budget of characters ({written_name}@2000c)"
                           if METRICS[written_name].spans else "")
            raise ValueError(f"unknown metric {text!r}: {written_name} takes a cutoff of 1 to {MAX_CUTOFF_DIGITS} "
                             f"ASCII digits, the first not 0 ({written_name}@5){budget_form}")
        if not match or match.group(1) not in METRICS:
            hint = did_you_mean(text, [name + at + written for name in METRICS])
            raise ValueError(f"unknown metric {text!r}{hint or ';'} known metrics: {', '.join(METRICS)} (optionally "
                             "as name@k, a span metric also as name@<n>c)")
        name, digits, chars = match.groups()
        metric = METRICS[name]
        if metric.no_answer:
            if digits:
                raise ValueError(f"metric {text!r}: {name} takes no cutoff")
            return cls(name, default_k)
        if chars and not metric.spans:
            spanned = ", ".join(other for other, found in METRICS.items() if found.spans)
            raise ValueError(f"metric {text!r}: a budget of characters (@<n>c) is for the span metrics ({spanned}), "
                             f"and {name} counts chunks: write {name}@<k> for the top k, or a span metric at the "
                             f"budget (char_recall@{digits}c)")
        if chars:
            return cls(name, default_k, int(digits))
        k = int(digits) if digits else default_k
        if k < 1:
            raise ValueError(f"metric {text!r}: the cutoff must be >= 1")
        return cls(name, k)


def definition(label: str) -> str:
    """What a label measures, as the reports print it: its metric's definition, and a budget's rule."""
    found = METRICS[label.partition("@")[0]]
    chars = budget(label)
    if chars is None:
        return found.definition
    return (f"{found.definition}; the top k's chunks here are those that fit whole in {chars} characters, taken in "
            "rank order until one does not")


def metric_order(label: str) -> tuple[int, int, int, str]:
    """The plugin's metric order (precision, recall, f1, ndcg, ...), then by cutoff, then budgets by size."""
    name = label.partition("@")[0]
    names = list(METRICS)
    return (names.index(name) if name in names else len(names)), budget(label) or 0, cutoff(label) or 0, label
