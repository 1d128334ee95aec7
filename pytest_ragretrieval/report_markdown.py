"""The tutorial's evaluation report (第 5 步：写评估报告) as Markdown, written by `--rag-report`.

The wording and the small cell helpers live here and are shared with the HTML page and the
GitHub step summary, so the three documents always say the same thing.
"""
from __future__ import annotations

import re
from typing import Sequence

from .report import width
from .reportdata import (
    QuestionChange,
    QuestionView,
    ReportInput,
    RetrieverView,
    format_delta,
    format_value,
    no_answer_rows,
    question_changes,
)

TITLE = "RAG 检索层评估报告 / RAG retrieval evaluation report"
HEADINGS = {
    "configuration": "评估配置 / Configuration",
    "metrics": "指标结果 / Metrics",
    "significance": "显著性 / Significance",
    "tags": "分标签 / Per tag",
    "diagnostics": "诊断 / Diagnostics",
    "changes": "逐题升降 / Questions that changed",
    "no-answer": "无答案题 / No-answer questions",
    "questions": "逐题明细 / Per question",
    "failures": "失败项 / Failures",
}
EMPTY = "（空 / empty）"
NO_ANSWER_HINT = "无答案题的正确结果是空列表 / for a no-answer question the right result is an empty list."
DELTA_HINT = "括号内为相对基线的差值 / in brackets: the change against the baseline."
MEANINGS = {
    "ann_recall": (
        "ANN 索引前 {depth} 条与精确检索的重合率，低于 1 说明近似索引漏了结果 / "
        "share of the exact top {depth} that the ANN index returned"
    ),
    "pool_recall": (
        "重排候选池（前 {depth} 条）的召回，任何重排都无法超过这个上限 / "
        "recall of the top-{depth} candidate pool: the ceiling no reranker can pass"
    ),
}


def ran(data: ReportInput) -> list[RetrieverView]:
    return [view for view in data.retrievers if view.status == "ran"]


def status_text(view: RetrieverView) -> str:
    return f"{view.status}: {view.reason}" if view.reason else view.status


def verdict(data: ReportInput) -> str:
    count = len(data.failures)
    return f"❌ {count} 项未通过 / {count} failed" if count else "✅ 无失败项 / no failures"


def with_delta(value: float | None, delta: float | None) -> str:
    text = format_value(value)
    return text if delta is None else f"{text} ({format_delta(delta)})"


def difference(value: float | None, before: float | None) -> float | None:
    return None if value is None or before is None else value - before


def metric_cell(view: RetrieverView, label: str) -> tuple[float | None, float | None]:
    """(value, delta against the baseline) of one retriever x metric."""
    comparison = view.comparisons.get(label)
    value = view.metrics.get(label, comparison.value if comparison else None)
    return value, comparison.delta if comparison else None


def tag_cell(view: RetrieverView, tag: str, label: str) -> tuple[float | None, float | None]:
    value = view.tags.get(tag, {}).get(label)
    return value, difference(value, view.baseline_tags.get(tag, {}).get(label))


def question_cell(view: RetrieverView, question: str, label: str) -> tuple[float | None, float | None]:
    value = view.values.get(question, {}).get(label)
    return value, difference(value, view.baseline_values.get(question, {}).get(label))


def has_significance(data: ReportInput) -> bool:
    return any(c.p_value is not None for view in ran(data) for c in view.comparisons.values())


def format_p(p: float | None) -> str:
    if p is None:
        return "—"
    return "<0.0001" if p < 0.0001 else f"{p:.4f}"


def format_ci(ci: tuple[float, float] | None) -> str:
    return "—" if ci is None else f"[{format_delta(ci[0])}, {format_delta(ci[1])}]"


def diagnostic_meaning(label: str) -> str:
    name, _, depth = label.partition("@")
    template = MEANINGS.get(name)
    return template.format(depth=depth) if template else ""


def gold(question: QuestionView) -> list[tuple[str, int]]:
    """The question's relevant chunks, best grade first, then by id."""
    return sorted(((cid, g) for cid, g in question.relevance.items() if g >= 1), key=lambda item: (-item[1], item[0]))


def baseline_text(data: ReportInput) -> str:
    if data.comparable:
        return f"{data.baseline_path}（可比 / comparable）"
    reason = "不可比或不存在，不显示差值 / missing or recorded under another configuration: no deltas"
    return f"{data.baseline_path}（{reason}）" if data.baseline_path else f"无 / none（{reason}）"


def config_items(data: ReportInput) -> list[tuple[str, str, str]]:
    """(key, label, value) of the configuration, in report order; the metric definitions come apart."""
    counts = data.tag_counts
    per_tag = " / ".join(f"{tag} {n}" for tag, n in counts.items())
    answerable = sum(1 for q in data.questions if q.answerable)
    return [
        ("evalset", "评估集 / eval set", f"{len(data.questions)} 题 / questions" + (f"（{per_tag}）" if per_tag else "")),
        ("answerable", "可回答 / answerable", str(answerable)),
        ("no-answer", "无答案 / no-answer", str(len(data.questions) - answerable)),
        ("gold", "金标准相关块 / gold chunks", str(data.gold_count)),
        ("k", "k", str(data.k)),
        ("embedder", "embedding", data.embedder),
        ("rerankers", "重排模型 / rerankers", ", ".join(data.rerankers) or "无 / none"),
        ("chunks", "切块数 / chunks", str(len(data.chunks))),
        ("database", "数据库 / database", data.database),
        ("baseline", "基线 / baseline", baseline_text(data)),
    ]


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
                rows.append([esc(view.name), esc(label), format_value(c.baseline), format_value(c.value),
                             format_delta(c.delta) or "—", format_p(c.p_value), format_ci(c.ci95)])
    return table(["retriever", "metric", "baseline", "value", "delta", "p", "95% CI"], rows, numeric=5)


def metrics_section(data: ReportInput) -> list[str]:
    lines = [f"## {HEADINGS['metrics']}", "", *metrics_table(data)]
    reasons = [f"- {esc(view.name)}: {esc(status_text(view))}" for view in data.retrievers if view.status != "ran"]
    if reasons:
        lines += ["", *reasons]
    if any(metric_cell(view, label)[1] is not None for view in ran(data) for label in data.metrics):
        lines += ["", DELTA_HINT]
    if has_significance(data):
        lines += ["", f"### {HEADINGS['significance']}", "", *significance_table(data)]
    return lines


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
    rows = [[esc(view.name), esc(label), format_value(value), esc(diagnostic_meaning(label))]
            for view in ran(data) for label, value in sorted(view.diagnostics.items())]
    if not rows:
        return lines + ["无 / none reported"]
    return lines + table(["retriever", "diagnostic", "value", "meaning"], rows)


def change_rows(changes: Sequence[QuestionChange]) -> list[list[str]]:
    return [[esc(c.question.id), esc(c.question.query), format_value(c.before), format_value(c.after),
             format_delta(c.delta), gold_text(c.question),
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
    columns = [dict((q.id, ranking) for q, ranking in no_answer_rows(data, view)) for view in views]
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


def render_markdown(data: ReportInput) -> str:
    """The full report: the same input always gives the same bytes (no dates, no dict-order surprises)."""
    sections = [
        [f"# {TITLE}", "", f"结果 / result：{verdict(data)}"],
        configuration_section(data),
        metrics_section(data),
        tags_section(data),
        diagnostics_section(data),
        changes_section(data),
        no_answer_section(data),
        failures_section(data),
    ]
    return "\n\n".join("\n".join(section) for section in sections) + "\n"
