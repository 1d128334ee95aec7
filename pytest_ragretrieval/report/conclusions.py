"""The report's conclusions (结论) and next steps (下一步), written from the numbers alone.

Plain sentences, the same for Markdown, HTML and the job summary: which retriever leads each
metric, what each comparison between configurations says (with its p-value when there is one),
and what to do next given the comparisons, the eval set's size, abstention and the failures.
"""
from __future__ import annotations

from ..core.values import fmt, p_clause
from ..record.report import ReportInput, RetrieverView, by_pair, conclusion
from ..record.types import Finding, PairComparison
from ..scoring.metrics import of_retriever
from .wording import ran

TUNING = {"hybrid": "weights, depth or rrf_k", "rerank": "depth or the model"}


def leaders(data: ReportInput) -> str | None:
    """`highest: recall@5 hybrid 0.7783, ndcg@5 vector 0.7401` (ties name every leader; judged@k measures
    the labels, not the retriever, so it leads nothing)."""
    views = [view for view in ran(data) if view.metrics]
    if not views:
        return None
    parts = []
    for label in data.metrics:
        if not of_retriever(label):
            continue
        scored = [(view.metrics[label], view.name) for view in views if label in view.metrics]
        if not scored:
            continue
        best = max(value for value, _ in scored)
        names = " = ".join(name for value, name in scored if value == best)
        parts.append(f"{label} {names} {fmt(best)}")
    return "highest: " + ", ".join(parts) if parts else None


def conclusion_lines(data: ReportInput) -> list[str]:
    lines = [found] if (found := leaders(data)) is not None else []
    lines += [conclusion(group, data.alpha) for group in by_pair(data.pairs)]
    if not data.pairs and len(ran(data)) > 1:
        lines.append("no comparisons between configurations: add compare = [[\"a\", \"b\"]] to the config")
    return lines or ["nothing ran: no conclusion"]


def _metrics(group: list[PairComparison]) -> str:
    """`ndcg@5, mrr@5 (p ≤ 0.0384)`: the metrics, and the largest p among them."""
    largest = max(c.p_value for c in group if c.p_value is not None)
    return f"{', '.join(c.metric for c in group)} ({p_clause(largest, '≤')})"


def _pair_step(data: ReportInput, group: list[PairComparison], views: dict[str, RetrieverView]) -> str:
    a, b = group[0].a, group[0].b
    worse = [c for c in group if c.significant(data.alpha) and c.delta < 0]
    better = [c for c in group if c.significant(data.alpha) and c.delta > 0]
    if worse:
        tuning = TUNING.get(views[a].type) if a in views else None
        tune = f"tune its {tuning}" if tuning else "change it"
        return f"{a} is significantly worse than {b} on {_metrics(worse)}: keep {b}, or {tune} and compare again"
    if better:
        cost = ""
        if a in views and b in views:
            cost = f" (p95 latency {views[a].latency_p95:.1f} ms against {views[b].latency_p95:.1f} ms)"
        return f"{a} is significantly better than {b} on {_metrics(better)}: keep it if its cost is acceptable{cost}"
    differ = max(c.wins + c.losses for c in group)
    return (
        f"{a} vs {b}: no significant difference at alpha {data.alpha:g} over {group[0].questions} questions "
        f"(they disagree on at most {differ}); add questions before choosing between them"
    )


def _inconclusive_steps(data: ReportInput) -> list[str]:
    """One step for the inconclusive items: passes whose drop of the margin is not ruled out, and the
    questions that would decide the one that needs most."""
    found = [item for item in data.outcomes if item.outcome == Finding.INCONCLUSIVE]
    if not found:
        return []
    needed = [item.needed for item in found if item.needed is not None]
    most = f"; about {max(needed)} questions would decide them all" if needed else ""
    return [f"{len(found)} item(s) inconclusive ({', '.join(f'{i.retriever} {i.metric}' for i in found[:5])}"
            f"{', ...' if len(found) > 5 else ''}): they pass, but a drop of the margin is not ruled out{most}"]


def next_steps(data: ReportInput) -> list[str]:
    views = {view.name: view for view in ran(data)}
    steps: list[str] = []
    if data.failures:
        steps.append(
            f"{len(data.failures)} item(s) failed against the baseline: fix the regression, or, if it is intended, "
            "record it with `pytest --rag-update-baseline --rag-allow-regression`"
        )
    steps += _inconclusive_steps(data)
    if data.pairs:
        steps += [_pair_step(data, group, views) for group in by_pair(data.pairs)]
    answerable = sum(1 for q in data.questions if q.answerable)
    if answerable < data.min_questions:
        steps.append(f"grow the eval set to at least {data.min_questions} answerable questions (now {answerable})")
    no_answer = len(data.questions) - answerable
    if no_answer and views and all(view.no_answer_empty == 0 for view in views.values()):
        steps.append(
            f"no retriever abstains on the {no_answer} no-answer questions: set min_score where it applies "
            "and gate the abstention metric"
        )
    steps += [
        f"{view.name} did not run here ({view.status}): make it run, or record it where it does"
        for view in data.retrievers if view.status != "ran"
    ]
    return steps or ["nothing to act on: keep the baseline, and grow the eval set as the corpus grows"]
