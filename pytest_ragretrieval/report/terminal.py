"""The terminal summary as pure lines: one row per retriever, one column per metric."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..config.settings import Config
from ..gate.checks import Comparison
from ..gate.judge import Judge
from ..gate.pairs import Pairs
from ..scoring.evaluate import RetrieverResult, Run, latency_summary
from ..values import fmt, p_value, signed
from .wording import width


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(width(str(row[i])) for row in [headers, *rows]) for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(str(c) + " " * (w - width(str(c))) for c, w in zip(cells, widths, strict=True)).rstrip()

    return [line(headers), line(["-" * w for w in widths]), *(line(row) for row in rows)]


def cell(value: float | None, before: float | None) -> str:
    if value is None:
        return "-"
    if before is None:
        return fmt(value)
    return f"{fmt(value)} ({signed(value - before)})"


def comparison_lines(pairs: Pairs) -> list[str]:
    """One row per pair and metric: delta of the means, the two-sided test, wins/ties/losses of a over b."""
    if not pairs.comparisons:
        return []
    rows = [
        [f"{c.a} vs {c.b}", c.metric, signed(c.delta), "-" if c.p_value is None else p_value(c.p_value),
         "-" if c.ci95 is None else f"[{signed(c.ci95[0])}, {signed(c.ci95[1])}]", f"{c.wins}/{c.ties}/{c.losses}"]
        for c in pairs.comparisons
    ]
    test = f"paired two-sided {pairs.method} test"
    return ["", f"comparisons ({test}; w/t/l: questions a wins, ties, loses against b):",
            *table(["a vs b", "metric", "delta", "p", "95% CI", "w/t/l"], rows)]


def significance_lines(config: Config, runs: Mapping[str, Run], judge: Judge) -> list[str]:
    """With `significance` on: the smallest drop each item can detect, and how its p was adjusted."""
    if config.significance == "none":
        return []
    labels = [spec.label for spec in config.metrics]
    rows: list[list[str]] = []
    counts: set[int] = set()
    for spec in config.retrievers:
        if spec.name not in runs or runs[spec.name].result is None:
            continue
        found = [judge.comparison(spec.name, label) for label in labels]
        if any(c is not None and c.mde is not None for c in found):
            rows.append([spec.name, *("-" if c is None or c.mde is None else fmt(c.mde) for c in found)])
            counts.update(c.questions for c in found if c is not None)
    if not rows:
        return []
    family = len(judge.family())
    over = f"{min(counts)}" if len(counts) == 1 else f"{min(counts)}-{max(counts)}"
    return ["", f"minimum detectable drop (80% power, two-sided 5%; sd of the baseline's per-question values over "
                f"the {over} comparable questions, per retriever and metric):",
            *table(["retriever", *labels], rows),
            f"p-values Holm-adjusted over the {family} metric item{'s' if family != 1 else ''} judged with a "
            f"{config.significance} test (alpha {config.alpha:g})"]


def summary_lines(config: Config, runs: Mapping[str, Run], judge: Judge) -> list[str]:
    """The changes since the baseline, the summary table, the per-tag table, the comparisons, and the
    no-answer and latency lines."""
    labels = [spec.label for spec in config.metrics]
    since = judge.since()
    comparable = since is not None and since.comparable
    tag_deltas = comparable and since is not None and not since.questions.changed
    answerable = None
    rows: list[list[str]] = []
    tag_rows: list[list[str]] = []
    notes: list[str] = []
    no_answer: list[str] = []
    wrongly_empty: list[str] = []
    latency: list[str] = []
    diagnostics: list[str] = []
    partial = False
    for spec in config.retrievers:
        run = runs.get(spec.name)
        if run is None:
            continue
        if run.skipped is not None:
            notes.append(f"{spec.name}: unavailable: {run.skipped}")
            continue
        if run.error is not None:
            notes.append(f"{spec.name}: error: {run.error}")
            continue
        result: RetrieverResult | None = run.result
        assert result is not None
        answerable = len(result.questions) - result.no_answer_total
        found = {label: judge.comparison(spec.name, label) for label in labels}
        partial = partial or any(c is not None and not c.whole for c in found.values())
        rows.append([spec.name] + [delta_cell(result.metrics[label], found[label]) for label in labels])
        recorded = judge.recorded(spec.name) if tag_deltas else None
        for tag, values in result.tags.items():
            old = recorded.tags.get(tag, {}) if recorded else {}
            tag_rows.append([spec.name, tag] + [cell(values.get(label), old.get(label)) for label in labels])
        if result.no_answer_total:
            no_answer.append(f"{spec.name} {result.no_answer_empty}/{result.no_answer_total}")
        if result.answerable_empty:
            wrongly_empty.append(f"{spec.name} {result.answerable_empty}/{answerable}")
        diagnostics.extend(f"{spec.name} {label} {fmt(value)}" for label, value in sorted(run.diagnostics.items()))
        notes.extend(f"{spec.name}: {note}" for note in run.notes)
        summary = latency_summary(result)
        latency.append(f"{spec.name} {summary['p50']:.1f}/{summary['p95']:.1f}")
    lines = [f"k={config.k}" + (f", {answerable} answerable questions" if answerable is not None else "")]
    lines.extend(since.lines() if since is not None else [])
    if rows:
        lines.extend(table(["retriever", *labels], rows))
    if partial:
        lines.append("deltas over the comparable questions both the baseline and this run scored; "
                     "values over this run's whole eval set")
    if rows:
        lines.extend(significance_lines(config, runs, judge))
    if tag_rows:
        lines.append("")
        lines.append("per tag:" if tag_deltas or not comparable else "per tag (no deltas: the questions changed):")
        lines.extend(table(["retriever", "tag", *labels], tag_rows))
    pairs: Pairs | None = judge.pairs() if runs else None
    if pairs is not None:
        lines.extend(comparison_lines(pairs))
        notes.extend(pairs.notes)
    lines.extend(notes)
    if no_answer:
        lines.append("no-answer questions that got an empty result: " + ", ".join(no_answer))
    if wrongly_empty:
        lines.append("answerable questions that wrongly got an empty result: " + ", ".join(wrongly_empty))
    if latency:
        lines.append("latency per question p50/p95 ms: " + ", ".join(latency))
    if diagnostics:
        lines.append(
            "diagnostics (ann_recall: the ANN index against exact search; pool_recall: the ceiling of a reranker): "
            + ", ".join(diagnostics)
        )
    if since is not None and not comparable:
        lines.append("deltas not shown: the baseline's yardstick differs from this run's")
    return lines


def delta_cell(value: float, comparison: Comparison | None) -> str:
    """Today's value with its change against the baseline over the comparable questions."""
    if comparison is None or comparison.delta is None:
        return fmt(value)
    return f"{fmt(value)} ({signed(comparison.delta)})"
