"""The terminal's lines, pure: the run header, and the summary (one row per retriever, one column per metric)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..baseline.format import Baseline
from ..baseline.gold import edited_gold, gold_texts, recorded_gold, review_line
from ..config.settings import Config
from ..evalset.records import Chunk, Question
from ..gate.checks import ADJUSTED
from ..gate.judge import Judge, baseline_questions, comparable_notes, small_set_notes
from ..gate.pairs import Pairs
from ..paths import display
from ..record.types import Adjustment, Comparison
from ..scoring.evaluate import RetrieverResult, Run, latency_summary
from ..values import fmt, moved, p_value, signed
from .wording import width

LISTED = 5
"""Question ids listed in a line of the summary; the rest are counted."""


def header_lines(config: Config, chunks: Sequence[Chunk], questions: Sequence[Question], baseline: Baseline | None,
                 update: bool) -> list[str]:
    """The run header: what was loaded, the baseline, and the warnings every report repeats."""
    answerable = sum(1 for q in questions if q.answerable)
    from_table = f" (the team's {config.team_corpus.describe()})" if config.team_corpus is not None else ""
    lines = [
        f"rag: config {config.where}",
        f"rag: {len(chunks)} chunks{from_table}, {len(questions)} questions "
        f"({answerable} answerable, {len(questions) - answerable} no-answer), "
        f"k={config.k}, metrics {', '.join(s.label for s in config.metrics)}",
    ]
    if baseline is None:
        lines.append(f"rag: no baseline yet at {display(config.baseline)}")
    else:
        lines.append(f"rag: baseline {display(config.baseline)}")
    empty = sum(1 for chunk in chunks if not chunk.text.strip())
    if empty:
        team = config.team_corpus
        where = f"the team's {team.describe()}" if team is not None else display(config.chunks_file("the header"))
        lines.append(
            f"rag: warning: {empty} chunk{'s' if empty != 1 else ''} in {where} "
            f"{'have' if empty != 1 else 'has'} an empty text; ranked and scored like any other"
        )
    if update:
        lines.append("rag: recording a new baseline (--rag-update-baseline)")
    if config.significance != "none":
        lines.append(f"rag: a drop fails only when a paired {config.significance} test gives p < {config.alpha:g}")
    notes = small_set_notes(config, questions)
    if baseline is not None:
        notes += comparable_notes(config, questions, baseline_questions(baseline, config, questions))
        review = review_line(edited_gold(recorded_gold(baseline), gold_texts(chunks, questions), questions))
        notes += [review] if review else []
    return lines + [f"rag: warning: {note}" for note in notes]


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


def listed(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:LISTED])
    return shown + (f" and {len(ids) - LISTED} more" if len(ids) > LISTED else "")


def comparison_lines(pairs: Pairs, columns: int | None = None) -> list[str]:
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
            *fitted(["a vs b", "metric", "delta", "p", "95% CI", "w/t/l"], rows, 2, columns)]


def significance_lines(config: Config, runs: Mapping[str, Run], judge: Judge, columns: int | None = None) -> list[str]:
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
            *fitted(["retriever", *labels], rows, 1, columns),
            adjustment_line(judge.adjustment(), family, config)]


def adjustment_line(adjustment: str, family: int, config: Config) -> str:
    """How the p-values that decide were adjusted: `p-values max-T-adjusted over the 6 metric items ...`."""
    test = f"a {config.significance} test (alpha {config.alpha:g})"
    if adjustment == "none":
        return f'p-values of {test}, not adjusted for the number of items (adjustment = "none")'
    if not family:
        return f"p-values of {test}: no metric item moved on any question, so none was adjusted"
    items = f"{family} metric item{'s' if family != 1 else ''}"
    return (f"p-values {ADJUSTED[Adjustment(adjustment)]}-adjusted over the {items} judged with {test} that moved "
            "(items with no difference on any question leave the family)")


def shown_labels(config: Config, runs: Mapping[str, Run]) -> list[str]:
    """The listed metrics, then judged@k where it was scored though not listed (see `Config.shown`)."""
    listed = [spec.label for spec in config.metrics]
    return listed + [spec.label for spec in config.shown if spec.label not in listed and any(
        run.result is not None and spec.label in run.result.metrics for run in runs.values())]


def tag_lines(config: Config, runs: Mapping[str, Run], judge: Judge, every: bool, columns: int | None) -> list[str]:
    """The per-tag table: by default only the rows (retriever, tag) where a value moved since the
    baseline, else one line saying how to see them; with `every` (--rag-tags) every row."""
    labels = shown_labels(config, runs)
    since = judge.since()
    deltas = since is not None and since.comparable and not since.questions.changed
    rows: list[list[str]] = []
    count = compared = 0
    for spec in config.retrievers:
        run = runs.get(spec.name)
        if run is None or run.result is None:
            continue
        recorded = judge.recorded(spec.name) if deltas else None
        for tag, values in run.result.tags.items():
            count += 1
            old = recorded.tags.get(tag, {}) if recorded else {}
            compared += bool(old)
            if every or any(moved(values[label] - old[label]) for label in values if label in old):
                rows.append([spec.name, tag] + [cell(values.get(label), old.get(label)) for label in labels])
    if not count:
        return []
    if every:
        title = "per tag:" if deltas or since is None or not since.comparable else \
            "per tag (no deltas: the questions changed):"
    elif rows:
        title = f"per tag, where a value moved ({len(rows)} of {count} rows; --rag-tags shows every row):"
    else:
        why = "no value moved since the baseline" if compared else "no baseline values to compare with" \
            if deltas or since is None else "no deltas: the questions or the yardstick changed"
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


def _table(config: Config, runs: Mapping[str, Run], judge: Judge, labels: Sequence[str]) -> _Table:
    """One row per retriever that ran, in the config's order; one that could not run is a note instead."""
    answerable = None
    rows: list[list[str]] = []
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
        if result.no_answer_total:
            no_answer.append(f"{spec.name} {result.no_answer_empty}/{result.no_answer_total}")
        if result.answerable_empty:
            ids = f" ({listed(result.wrongly_empty)})" if result.wrongly_empty else ""
            wrongly_empty.append(f"{spec.name} {result.answerable_empty}/{answerable}{ids}")
        diagnostics.extend(f"{spec.name} {label} {fmt(value)}" for label, value in sorted(run.diagnostics.items()))
        notes.extend(f"{spec.name}: {note}" for note in run.notes)
        summary = latency_summary(result)
        latency.append(f"{spec.name} {summary['p50']:.1f}/{summary['p95']:.1f}")
    return _Table(answerable, rows, partial, notes, no_answer, wrongly_empty, latency, diagnostics)


def _footer_lines(table: _Table) -> list[str]:
    """The lines under the tables: empty results, latency and diagnostics, each present only when it says something."""
    lines: list[str] = []
    if table.no_answer:
        lines.append("no-answer questions that got an empty result: " + ", ".join(table.no_answer))
    if table.wrongly_empty:
        lines.append("answerable questions that wrongly got an empty result: " + ", ".join(table.wrongly_empty))
    if table.latency:
        lines.append("latency per question p50/p95 ms: " + ", ".join(table.latency))
    if table.diagnostics:
        lines.append(
            "diagnostics (ann_recall: the ANN index against exact search, _worst its worst question; "
            "pool_recall: the ceiling of a reranker): "
            + ", ".join(table.diagnostics)
        )
    return lines


def summary_lines(config: Config, runs: Mapping[str, Run], judge: Judge, every_tag: bool = False,
                  columns: int | None = None) -> list[str]:
    """The changes since the baseline, the summary table (split to fit `columns`), the per-tag table,
    the comparisons, and the no-answer and latency lines; judged@k is shown even when not listed."""
    labels = shown_labels(config, runs)
    since = judge.since()
    comparable = since is not None and since.comparable
    table = _table(config, runs, judge, labels)
    answerable = table.answerable
    lines = [f"k={config.k}" + (f", {answerable} answerable questions" if answerable is not None else "")]
    lines.extend(since.lines() if since is not None else [])
    if table.rows:
        lines.extend(fitted(["retriever", *labels], table.rows, 1, columns))
    if table.partial:
        lines.append("deltas over the comparable questions both the baseline and this run scored; "
                     "values over this run's whole eval set")
    if table.rows:
        lines.extend(significance_lines(config, runs, judge, columns))
    lines.extend(tag_lines(config, runs, judge, every_tag, columns))
    notes = list(table.notes)
    pairs: Pairs | None = judge.pairs() if runs else None
    if pairs is not None:
        lines.extend(comparison_lines(pairs, columns))
        notes.extend(pairs.notes)
    lines.extend(notes)
    lines.extend(_footer_lines(table))
    if since is not None and not comparable:
        lines.append("deltas not shown: the baseline's yardstick differs from this run's")
    return lines


def delta_cell(value: float, comparison: Comparison | None) -> str:
    """Today's value with its change against the baseline over the comparable questions."""
    if comparison is None or not moved(comparison.delta):
        return fmt(value)
    return f"{fmt(value)} ({signed(comparison.delta)})"
