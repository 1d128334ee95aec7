"""The terminal's lines, pure: the summary (one row per retriever, one column per metric), from the
reports' view of the run (`record.report.ReportInput`), as every other renderer."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core.values import fmt, listed, moved, p_value, signed
from ..record.report import ADJUSTED, ReportInput, RetrieverView
from ..record.types import Adjustment, Comparison, PairComparison
from .segments import HEADERS, HINT, segment_tables
from .wording import inconclusive_lines, outcome_counts, say, unavailable, width

LISTED = 5
"""Question ids listed in a line of the summary; the rest are counted."""


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(width(str(row[i])) for row in [headers, *rows]) for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(str(c) + " " * (w - width(str(c))) for c, w in zip(cells, widths, strict=True)).rstrip()

    return [line(headers), line(["-" * w for w in widths]), *(line(row) for row in rows)]


def fitted(headers: Sequence[str], rows: Sequence[Sequence[str]], keys: int, columns: int | None) -> list[str]:
    """`table`, split by columns where it would be wider than `columns` (the terminal): each part
    repeats the first `keys` columns and takes as many of the others, in order, as fit; parts are
    separated by a blank line. A column too wide for any terminal gets a part of its own."""
    whole = table(headers, rows)
    if columns is None or max(map(width, whole)) <= columns:
        return whole
    parts: list[list[int]] = []
    for index in range(keys, len(headers)):
        candidate = [*parts[-1], index] if parts else [index]
        if parts and max(map(width, _part(headers, rows, keys, candidate))) <= columns:
            parts[-1] = candidate
        else:
            parts.append([index])
    lines: list[str] = []
    for number, part in enumerate(parts):
        lines += ([""] if number else []) + _part(headers, rows, keys, part)
    return lines


def _part(headers: Sequence[str], rows: Sequence[Sequence[str]], keys: int, picked: Sequence[int]) -> list[str]:
    chosen = [*range(keys), *picked]
    return table([headers[i] for i in chosen], [[row[i] for i in chosen] for row in rows])


def cell(value: float | None, before: float | None) -> str:
    """A value, with its change in brackets only where it moved."""
    if value is None:
        return "-"
    if before is None or not moved(value - before):
        return fmt(value)
    return f"{fmt(value)} ({signed(value - before)})"


def comparison_lines(comparisons: Sequence[PairComparison], method: str, columns: int | None = None) -> list[str]:
    """One row per pair and metric: delta of the means, the two-sided test, wins/ties/losses of a over b."""
    if not comparisons:
        return []
    rows = [
        [f"{c.a} vs {c.b}", c.metric, signed(c.delta), "-" if c.p_value is None else p_value(c.p_value),
         "-" if c.ci95 is None else f"[{signed(c.ci95[0])}, {signed(c.ci95[1])}]", f"{c.wins}/{c.ties}/{c.losses}"]
        for c in comparisons
    ]
    test = f"paired two-sided {method} test"
    return ["", f"comparisons ({test}; w/t/l: questions a wins, ties, loses against b):",
            *fitted(["a vs b", "metric", "delta", "p", "95% CI", "w/t/l"], rows, 2, columns)]


def ran(data: ReportInput) -> list[RetrieverView]:
    return [view for view in data.retrievers if view.status == "ran"]


def significance_lines(data: ReportInput, columns: int | None = None) -> list[str]:
    """With `significance` on: the smallest drop each item can detect, and how its p was adjusted."""
    if data.significance == "none":
        return []
    labels = list(data.gated)
    rows: list[list[str]] = []
    counts: set[int] = set()
    for view in ran(data):
        found = [view.comparisons.get(label) for label in labels]
        if any(c is not None and c.mde is not None for c in found):
            rows.append([view.name, *("-" if c is None or c.mde is None else fmt(c.mde) for c in found)])
            counts.update(c.questions for c in found if c is not None)
    if not rows:
        return []
    over = f"{min(counts)}" if len(counts) == 1 else f"{min(counts)}-{max(counts)}"
    return ["", f"minimum detectable drop (80% power, two-sided 5%; sd of the baseline's per-question values over "
                f"the {over} comparable questions, per retriever and metric):",
            *fitted(["retriever", *labels], rows, 1, columns),
            adjustment_line(data)]


def segment_lines(data: ReportInput, columns: int | None = None) -> list[str]:
    """With `segments` compared: each key's table of its values' comparisons and outcomes (`report/segments.py`)."""
    lines = []
    for key, rows in segment_tables(data):
        lines += ["", f"segment {key} ({say('en', HINT)}):",
                  *fitted(list(HEADERS), [row.cells("en") for row in rows], 3, columns)]
    return lines


def adjustment_line(data: ReportInput) -> str:
    """How the p-values that decide were adjusted: `p-values max-T-adjusted over the 6 metric items ...`."""
    test = f"a {data.significance} test (alpha {data.alpha:g})"
    if data.adjustment == "none":
        return f'p-values of {test}, not adjusted for the number of items (adjustment = "none")'
    if not data.family:
        return f"p-values of {test}: {unadjusted(data)}, so none was adjusted"
    items = f"{data.family} metric item{'s' if data.family != 1 else ''}"
    return (f"p-values {ADJUSTED[Adjustment(data.adjustment)]}-adjusted over the {items} judged with {test} that "
            "moved (items with no difference on any question leave the family)")


def unadjusted(data: ReportInput) -> str:
    """Why no p was adjusted: no item moved, or their clusters allow no p below alpha (each judged by the
    tolerance alone, `bar/clusters.py`), or both, counted."""
    found = [c for view in ran(data) for c in view.comparisons.values()]
    untested = sum(1 for c in found if c.p_value is None and isinstance(c.clusters, int))
    if not untested:
        return "no metric item moved on any question"
    every = untested == sum(1 for c in found if c.p_value is not None or isinstance(c.clusters, int))
    left = ("no metric item was tested: their clusters allow no p below alpha, and each was judged by the "
            "tolerance alone" if every else f"{untested} metric item{'s' if untested != 1 else ''} judged by the "
            "tolerance alone (their clusters allow no p below alpha), the others moved on no question")
    return left


def tag_lines(data: ReportInput, every: bool, columns: int | None) -> list[str]:
    """The per-tag table: by default only the rows (retriever, tag) where a value moved since the
    baseline, else one line saying how to see them; with `every` (--rag-tags) every row."""
    labels = data.metrics
    has_since = data.since_comparable is not None
    deltas = bool(data.since_comparable) and not data.questions_changed
    rows: list[list[str]] = []
    count = compared = 0
    for view in ran(data):
        for tag, values in view.tags.items():
            count += 1
            old = view.baseline_tags.get(tag, {}) if deltas else {}
            compared += bool(old)
            if every or any(moved(values[label] - old[label]) for label in values if label in old):
                rows.append([view.name, tag] + [cell(values.get(label), old.get(label)) for label in labels])
    if not count:
        return []
    if every:
        title = "per tag:" if deltas or not data.since_comparable else "per tag (no deltas: the questions changed):"
    elif rows:
        title = f"per tag, where a value moved ({len(rows)} of {count} rows; --rag-tags shows every row):"
    else:
        why = "no value moved since the baseline" if compared else "no baseline values to compare with" \
            if deltas or not has_since else "no deltas: the questions or the yardstick changed"
        return ["", f"per tag: {count} rows, {why} (--rag-tags shows them)"]
    return ["", title, *fitted(["retriever", "tag", *labels], rows, 2, columns)]


@dataclass(frozen=True)
class _Table:
    """What the retrievers of the run give the summary: the table's rows and the lists of the lines below it."""

    answerable: int | None
    rows: list[list[str]]
    partial: bool
    notes: list[str]
    no_answer: list[str]
    wrongly_empty: list[str]
    latency: list[str]
    diagnostics: list[str]
    loads: list[str]


def _table(data: ReportInput) -> _Table:
    """One row per retriever that ran, in the config's order; one that could not run is a note instead."""
    answerable = None
    rows: list[list[str]] = []
    notes: list[str] = []
    no_answer: list[str] = []
    wrongly_empty: list[str] = []
    latency: list[str] = []
    diagnostics: list[str] = []
    loads: list[str] = []
    partial = False
    for view in data.retrievers:
        if view.status != "ran":
            notes.append(f"{view.name}: {view.status}: {view.reason}")
            continue
        answerable = view.scored - view.no_answer_total
        found = {label: view.comparisons.get(label) for label in data.metrics}
        partial = partial or any(c is not None and not c.whole for c in found.values())
        rows.append([view.name] + [delta_cell(view.metrics[label], found[label]) for label in data.metrics])
        if view.no_answer_total:
            no_answer.append(f"{view.name} {view.no_answer_empty}/{view.no_answer_total}")
        if view.answerable_empty:
            ids = f" ({listed(view.wrongly_empty, limit=LISTED)})" if view.wrongly_empty else ""
            wrongly_empty.append(f"{view.name} {view.answerable_empty}/{answerable}{ids}")
        diagnostics.extend(f"{view.name} {label} {fmt(value)}" for label, value in sorted(view.diagnostics.items()))
        notes.extend(f"{view.name}: {note}" for note in view.notes)
        latency.append(f"{view.name} {view.latency_p50:.1f}/{view.latency_p95:.1f}")
        found_loads = view.entry.loads_ms if view.entry is not None else None
        if isinstance(found_loads, dict):
            loads.extend(f"{view.name} {what} {ms:.1f}" for what, ms in found_loads.items())
    return _Table(answerable, rows, partial, notes, no_answer, wrongly_empty, latency, diagnostics, loads)


def _footer_lines(table: _Table) -> list[str]:
    """The lines under the tables: empty results, latency and diagnostics, each present only when it says something."""
    lines: list[str] = []
    if table.no_answer:
        lines.append("no-answer questions that got an empty result: " + ", ".join(table.no_answer))
    if table.wrongly_empty:
        lines.append("answerable questions that wrongly got an empty result: " + ", ".join(table.wrongly_empty))
    if table.latency:
        lines.append("latency per question p50/p95 ms: " + ", ".join(table.latency))
    if table.loads:
        lines.append("one-time loads before the first question, not in its latency, ms: " + ", ".join(table.loads))
    if table.diagnostics:
        lines.append(
            "diagnostics (ann_recall: the ANN index against exact search, _worst its worst question; "
            "pool_recall: the ceiling of a reranker): "
            + ", ".join(table.diagnostics)
        )
    return lines


def summary_lines(data: ReportInput, every_tag: bool = False, columns: int | None = None) -> list[str]:
    """The changes since the baseline, the summary table (split to fit `columns`), the per-tag table,
    the comparisons, the no-answer and latency lines, and the judged items' outcomes; judged@k is shown
    even when not listed."""
    table = _table(data)
    answerable = table.answerable
    absent = unavailable(data)
    lines = [f"k={data.k}" + (f", {answerable} answerable questions" if answerable is not None else "")
             + (f"; {absent}" if absent else "")]
    lines.extend(data.since)
    if table.rows:
        lines.extend(fitted(["retriever", *data.metrics], table.rows, 1, columns))
    if table.partial:
        lines.append("deltas over the comparable questions both the baseline and this run scored; "
                     "values over this run's whole eval set")
    if table.rows:
        lines.extend(significance_lines(data, columns))
    lines.extend(segment_lines(data, columns))
    lines.extend(tag_lines(data, every_tag, columns))
    notes = list(table.notes)
    if data.retrievers:
        lines.extend(comparison_lines(data.pairs, data.pair_method, columns))
        notes.extend(data.pair_notes)
    lines.extend(notes)
    lines.extend(_footer_lines(table))
    if data.since_comparable is False:
        lines.append("deltas not shown: the baseline's yardstick differs from this run's")
    if data.outcomes:
        lines.append(f"outcomes: {len(data.failures)} failed{outcome_counts(data, 'en')}")
        lines.extend(inconclusive_lines(data))
    return lines


def delta_cell(value: float, comparison: Comparison | None) -> str:
    """Today's value with its change against the baseline over the comparable questions."""
    if comparison is None or not moved(comparison.delta):
        return fmt(value)
    return f"{fmt(value)} ({signed(comparison.delta)})"
