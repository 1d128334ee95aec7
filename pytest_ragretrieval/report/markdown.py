"""The tutorial's evaluation report (第 5 步：写评估报告) as Markdown, written by `--rag-report`."""
from __future__ import annotations

import re
from collections.abc import Sequence

from ..core.values import fmt, p_value, signed
from ..record.report import (
    QuestionChange,
    QuestionView,
    ReportInput,
    no_answer_rows,
    question_changes,
)
from .conclusions import conclusion_lines, next_steps
from .wording import (
    DELTA_HINT,
    EMPTY,
    HEADINGS,
    NO_ANSWER_HINT,
    PAIRS_HEADERS,
    SIGNIFICANCE_HEADERS,
    TITLE,
    config_items,
    diagnostic_meaning,
    format_ci,
    gold,
    has_significance,
    metric_cell,
    pairs_hint,
    ran,
    significance_hint,
    status_text,
    tag_cell,
    verdict,
    width,
    with_delta,
)


def esc(text: str) -> str:
    """Inline-safe text: no table breaks, no raw HTML, newlines as <br>."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.replace("|", "\\|").replace("<", "&lt;").replace("\n", "<br>")


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], numeric: int = 0) -> list[str]:
    """A pipe table of already escaped cells, padded for reading raw; the last `numeric` columns align right."""
    widths = [max(3, *(width(row[i]) for row in [headers, *rows])) for i in range(len(headers))]
    right = set(range(len(headers) - numeric, len(headers)))

    def pad(text: str, i: int) -> str:
        gap = " " * (widths[i] - width(text))
        return gap + text if i in right else text + gap

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(pad(c, i) for i, c in enumerate(cells)) + " |"

    rule = ["-" * (w - 1) + ":" if i in right else "-" * w for i, w in enumerate(widths)]
    return [line(headers), line(rule), *(line(row) for row in rows)]


def ranking_text(question: QuestionView, ranking: Sequence[str]) -> str:
    """Chunk ids in rank order, gold ones bold with ✓ and their grade."""
    if not ranking:
        return EMPTY
    parts = []
    for cid in ranking:
        grade = question.relevance.get(cid, 0)
        parts.append(f"**{esc(cid)}** ✓{grade}" if grade >= 1 else esc(cid))
    return ", ".join(parts)


def gold_text(question: QuestionView) -> str:
    return ", ".join(f"{esc(cid)} ✓{grade}" for cid, grade in gold(question)) or EMPTY


def definition_text(data: ReportInput, label: str) -> str:
    definition = data.definitions.get(label, "")
    return f"{esc(label)}：{esc(definition)}" if definition else esc(label)


def configuration_section(data: ReportInput) -> list[str]:
    lines = [f"## {HEADINGS['configuration']}", ""]
    lines += [f"- {label}：{esc(value)}" for _, label, value in config_items(data)]
    lines.append("- 指标口径 / metrics：")
    lines += [f"  - {definition_text(data, label)}" for label in data.metrics]
    if data.notes:
        lines += ["", "**⚠️ 注意 / Warnings**", ""]
        lines += [f"- ⚠️ {esc(note)}" for note in data.notes]
    return lines


def metrics_table(data: ReportInput) -> list[str]:
    headers = ["retriever", "type", "status", *map(esc, data.metrics), "no-answer empty", "latency p50/p95 ms"]
    rows = []
    for view in data.retrievers:
        if view.status != "ran":
            rows.append([esc(view.name), esc(view.type), esc(view.status), *["—"] * (len(data.metrics) + 2)])
            continue
        cells = [with_delta(*metric_cell(view, label)) for label in data.metrics]
        empty = f"{view.no_answer_empty}/{view.no_answer_total}" if view.no_answer_total else "—"
        latency = f"{view.latency_p50:.1f} / {view.latency_p95:.1f}"
        rows.append([esc(view.name), esc(view.type), "ran", *cells, empty, latency])
    return table(headers, rows, numeric=len(data.metrics) + 2)


def significance_table(data: ReportInput) -> list[str]:
    rows = []
    for view in ran(data):
        for label in data.metrics:
            c = view.comparisons.get(label)
            if c is not None and c.p_value is not None:
                adjusted = p_value(c.p_value) if c.family else "—"
                raw = p_value(c.p_unadjusted if c.p_unadjusted is not None else c.p_value)
                rows.append([esc(view.name), esc(label), fmt(c.baseline), fmt(c.value), signed(c.delta) or "—",
                             str(c.questions or "—"), adjusted, raw, format_ci(c.ci95), fmt(c.mde)])
    return table(list(SIGNIFICANCE_HEADERS), rows, numeric=8)


def since_section(data: ReportInput) -> list[str]:
    """What changed since the baseline, one bullet each; nothing when nothing changed."""
    if not data.since:
        return []
    return ["", f"### {HEADINGS['since']}", "", *(f"- {esc(line)}" for line in data.since)]


def metrics_section(data: ReportInput) -> list[str]:
    lines = [f"## {HEADINGS['metrics']}", *since_section(data), "", *metrics_table(data)]
    reasons = [f"- {esc(view.name)}: {esc(status_text(view))}" for view in data.retrievers if view.status != "ran"]
    if reasons:
        lines += ["", *reasons]
    if any(metric_cell(view, label)[1] is not None for view in ran(data) for label in data.metrics):
        lines += ["", DELTA_HINT]
    if has_significance(data):
        lines += ["", f"### {HEADINGS['significance']}", "", significance_hint(data), "", *significance_table(data)]
    if data.pairs:
        lines += ["", f"### {HEADINGS['pairs']}", "", pairs_hint(data.pair_method), "", *pairs_table(data)]
    return lines


def pairs_table(data: ReportInput) -> list[str]:
    rows = [[esc(f"{c.a} vs {c.b}"), esc(c.metric), signed(c.delta), p_value(c.p_value), format_ci(c.ci95),
             f"{c.wins} / {c.ties} / {c.losses}"] for c in data.pairs]
    return table(list(PAIRS_HEADERS), rows, numeric=4)


def conclusions_section(data: ReportInput) -> list[str]:
    return [f"## {HEADINGS['conclusions']}", "", *(f"- {esc(line)}" for line in conclusion_lines(data))]


def next_section(data: ReportInput) -> list[str]:
    return [f"## {HEADINGS['next']}", "", *(f"- {esc(line)}" for line in next_steps(data))]


def tags_section(data: ReportInput) -> list[str]:
    lines = [f"## {HEADINGS['tags']}"]
    views = [view for view in ran(data) if view.tags]
    if not views:
        return lines + ["", "无 / none"]
    counts = data.tag_counts
    headers = ["tag", "questions", *map(esc, data.metrics)]
    for view in views:
        rows = [[esc(tag), str(counts.get(tag, 0)),
                 *(with_delta(*tag_cell(view, tag, label)) for label in data.metrics)]
                for tag in sorted(view.tags)]
        lines += ["", f"### {esc(view.name)}", "", *table(headers, rows, numeric=len(data.metrics) + 1)]
    return lines


def diagnostics_section(data: ReportInput) -> list[str]:
    lines = [f"## {HEADINGS['diagnostics']}", ""]
    rows = [[esc(view.name), esc(label), fmt(value), esc(diagnostic_meaning(label))]
            for view in ran(data) for label, value in sorted(view.diagnostics.items())]
    if not rows:
        return lines + ["无 / none reported"]
    return lines + table(["retriever", "diagnostic", "value", "meaning"], rows)


def change_rows(changes: Sequence[QuestionChange]) -> list[list[str]]:
    return [[esc(c.question.id), esc(c.question.query), fmt(c.before), fmt(c.after),
             signed(c.delta), gold_text(c.question),
             ranking_text(c.question, c.ranking_before), ranking_text(c.question, c.ranking_after)]
            for c in changes]


def change_block(title: str, changes: Sequence[QuestionChange], limit: int | None) -> list[str]:
    headers = ["question", "query", "before", "after", "delta", "gold", "ranking before", "ranking after"]
    shown = list(changes if limit is None else changes[:limit])
    lines = ["", f"**{title}**（{len(changes)}）", "", *table(headers, change_rows(shown))]
    if len(shown) < len(changes):
        lines += ["", f"…另有 {len(changes) - len(shown)} 题 / {len(changes) - len(shown)} more in the full report"]
    return lines


def changes_section(data: ReportInput, limit: int | None = None) -> list[str]:
    """Per retriever, the questions whose primary metric fell or rose against the baseline, with both rankings."""
    lines = [f"## {HEADINGS['changes']}"]
    views = [view for view in ran(data) if view.baseline_values]
    if not views:
        return lines + ["", "无逐题基线，无法对比 / no per-question baseline to compare with"]
    for view in views:
        regressed, improved = question_changes(data, view)
        lines += ["", f"### {esc(view.name)} — {esc(data.primary)}"]
        if not regressed and not improved:
            lines += ["", "无变化 / no question changed"]
        if regressed:
            lines += change_block("退步 / regressed", regressed, limit)
        if improved:
            lines += change_block("进步 / improved", improved, limit)
    return lines


def no_answer_cell(ranking: Sequence[str]) -> str:
    return "✓ " + EMPTY if not ranking else "✗ " + ", ".join(esc(cid) for cid in ranking)


def no_answer_section(data: ReportInput) -> list[str]:
    lines = [f"## {HEADINGS['no-answer']}", ""]
    views = ran(data)
    questions = [q for q in data.questions if not q.answerable]
    if not questions or not views:
        return lines + ["无 / none"]
    columns = [{q.id: ranking for q, ranking in no_answer_rows(data, view)} for view in views]
    rows = [[esc(q.id), esc(q.query), *(no_answer_cell(col[q.id]) for col in columns)] for q in questions]
    totals = [f"{sum(1 for q in questions if not col[q.id])}/{len(questions)}" for col in columns]
    rows.append(["空返回 / empty", "", *totals])
    return lines + [NO_ANSWER_HINT, "", *table(["question", "query", *(esc(v.name) for v in views)], rows)]


def fenced(text: str) -> list[str]:
    """A code block whose fence is longer than any backtick run in the text."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}text", *text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), fence]


def failures_section(data: ReportInput) -> list[str]:
    lines = [f"## {HEADINGS['failures']}", ""]
    if not data.failures:
        return lines + ["无 / none"]
    for failure in data.failures:
        subject = " · ".join(esc(part) for part in (failure.retriever, failure.metric) if part)
        lines.append(f"- ❌ **{subject or esc(failure.nodeid)}** — {esc(failure.nodeid)}")
        lines += ["", *("  " + line if line else "" for line in fenced(failure.message)), ""]
    return lines[:-1]


def render(data: ReportInput) -> str:
    """The full report: the same input always gives the same bytes (no dates, no dict-order surprises)."""
    sections = [
        [f"# {TITLE}", "", f"结果 / result：{verdict(data)}"],
        configuration_section(data),
        metrics_section(data),
        conclusions_section(data),
        next_section(data),
        tags_section(data),
        diagnostics_section(data),
        changes_section(data),
        no_answer_section(data),
        failures_section(data),
    ]
    return "\n\n".join("\n".join(section) for section in sections) + "\n"
