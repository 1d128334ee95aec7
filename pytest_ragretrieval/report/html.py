"""The evaluation report as one self-contained HTML page, written by `--rag-html`.

Same content as the Markdown report plus a bar chart (inline SVG) and a per-question table whose
rows expand (<details>, no JS needed) to the retrieved chunks' texts. No external asset and no URL
anywhere, so the page opens offline and as a CI artifact. Every element a test or a script needs
carries a stable id, class or data- attribute.
"""
from __future__ import annotations

from collections.abc import Sequence

from ..core.values import fmt, moved, p_value, signed
from ..record.report import (
    QuestionChange,
    QuestionView,
    ReportInput,
    RetrieverView,
    no_answer_rows,
    question_changes,
)
from .chart import chart
from .html_pairs import conclusions, next_section, pairs, since
from .markup import attrs, e, el, number
from .wording import (
    DELTA_HINT,
    EMPTY,
    HEADINGS,
    NO_ANSWER_HINT,
    SIGNIFICANCE_HEADERS,
    TITLE,
    config_items,
    diagnostic_meaning,
    format_ci,
    gold,
    has_significance,
    metric_cell,
    question_cell,
    ran,
    significance_hint,
    status_text,
    tag_cell,
    verdict,
)

STYLE = """
body { font-family: system-ui, "PingFang SC", "Microsoft YaHei", sans-serif; margin: 2rem; color: #222; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: left; vertical-align: top; }
dl#config { display: grid; grid-template-columns: max-content auto; gap: 0.2rem 1rem; }
dl#config > div { display: contents; } dl#config dt { font-weight: bold; } dl#config dd { margin: 0; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.delta.negative { color: #b00020; } .delta.positive { color: #1b7f3b; } .delta.zero { color: #777; }
tr[data-status="unavailable"], tr[data-status="error"] { color: #777; font-style: italic; }
.notes li { color: #8a5a00; }
li.chunk { margin: 0.25rem 0; padding: 0.25rem 0.5rem; border-left: 4px solid transparent; }
li.chunk.gold { border-left-color: #1b7f3b; background: #eef7ee; }
.mark { font-weight: bold; color: #1b7f3b; }
.chunk-id { font-family: ui-monospace, monospace; } .doc { color: #666; }
.text { margin: 0.2rem 0 0; white-space: pre-wrap; }
ol.ranking { margin: 0; padding-left: 1.4rem; } li.ref.gold { font-weight: bold; }
.ranking-block { display: inline-block; vertical-align: top; margin: 0 1.5rem 0.5rem 0; min-width: 18rem; }
tr.question-detail > td { background: #fafafa; }
pre { background: #f5f5f5; padding: 0.5rem; white-space: pre-wrap; }
svg text { font-size: 11px; fill: #333; } svg .grid { stroke: #ddd; } svg .axis { stroke: #888; }
svg .baseline-mark { stroke: #000; stroke-width: 2; stroke-dasharray: 3 2; }
""".strip()


def delta_span(delta: float | None) -> str:
    if not moved(delta):
        return ""
    assert delta is not None
    kind = "negative" if delta < 0 else "positive"
    return el("span", e(f"({signed(delta)})"), cls=f"delta {kind}")


def value_td(value: float | None, delta: float | None, **extra: object) -> str:
    content = e(fmt(value)) + (" " + delta_span(delta) if moved(delta) else "")
    return el("td", content, cls="num", data_value=number(value), data_delta=number(delta), **extra)


def num_td(text: str) -> str:
    return el("td", e(text), cls="num")


def html_table(headers: Sequence[str], rows: Sequence[str], **values: object) -> list[str]:
    """A table from plain header texts and ready-made <tr> rows."""
    head = "".join(el("th", e(h)) for h in headers)
    return [f"<table{attrs(**values)}>", f"<thead><tr>{head}</tr></thead>", "<tbody>", *rows, "</tbody>", "</table>"]


def section(key: str, body: Sequence[str]) -> list[str]:
    return [f'<section id="{key}-section">', el("h2", e(HEADINGS[key])), *body, "</section>"]


def configuration(data: ReportInput) -> list[str]:
    items = [el("div", el("dt", e(label)) + el("dd", e(value)), data_key=key)
             for key, label, value in config_items(data)]
    definitions = [el("li", el("code", e(label)) + "：" + e(data.definitions.get(label, "")), data_metric=label)
                   for label in data.metrics]
    body = ['<dl id="config">', *items, "</dl>", el("h3", "指标口径 / metrics"),
            '<ul id="definitions">', *definitions, "</ul>"]
    if data.notes:
        notes = [el("li", "⚠️ " + e(note), cls="note") for note in data.notes]
        body += [el("h3", "⚠️ 注意 / Warnings"), '<ul id="notes" class="notes">', *notes, "</ul>"]
    return section("configuration", body)


def metrics_row(data: ReportInput, view: RetrieverView) -> str:
    status = el("td", e(view.status), cls="status", title=view.reason or None)
    head = el("td", e(view.name)) + el("td", e(view.type)) + status
    if view.status != "ran":
        cells = "".join(el("td", "—", cls="num", data_metric=label) for label in data.metrics)
        tail = num_td("—") + num_td("—")
    else:
        cells = "".join(value_td(*metric_cell(view, label), data_metric=label) for label in data.metrics)
        empty = f"{view.no_answer_empty}/{view.no_answer_total}" if view.no_answer_total else "—"
        latency = f"{view.latency_p50:.1f} / {view.latency_p95:.1f}"
        tail = el("td", e(empty), cls="num no-answer") + el("td", e(latency), cls="num latency")
    return el("tr", head + cells + tail, data_retriever=view.name, data_status=view.status)


def significance(data: ReportInput) -> list[str]:
    rows = []
    for view in ran(data):
        for label in data.metrics:
            c = view.comparisons.get(label)
            if c is None or c.p_value is None:
                continue
            raw = c.p_unadjusted if c.p_unadjusted is not None else c.p_value
            numbers = [fmt(c.baseline), fmt(c.value), signed(c.delta) or "—", str(c.questions or "—"),
                       p_value(c.p_value) if c.family else "—", p_value(raw), format_ci(c.ci95), fmt(c.mde)]
            cells = el("td", e(view.name)) + el("td", e(label)) + "".join(num_td(x) for x in numbers)
            rows.append(el("tr", cells, data_retriever=view.name, data_metric=label, data_p=number(c.p_value),
                           data_p_unadjusted=number(raw), data_mde=number(c.mde)))
    return [el("h3", e(HEADINGS["significance"])), el("p", e(significance_hint(data))),
            *html_table(list(SIGNIFICANCE_HEADERS), rows, id="significance")]


def metrics(data: ReportInput) -> list[str]:
    headers = ["retriever", "type", "status", *data.metrics, "no-answer empty", "latency p50/p95 ms"]
    body = since(data) + html_table(headers, [metrics_row(data, view) for view in data.retrievers], id="metrics")
    reasons = [el("li", e(f"{view.name}: {status_text(view)}"), data_retriever=view.name)
               for view in data.retrievers if view.status != "ran"]
    if reasons:
        body.append(el("ul", "".join(reasons), cls="reasons"))
    if any(metric_cell(view, label)[1] is not None for view in ran(data) for label in data.metrics):
        body.append(el("p", e(DELTA_HINT)))
    body += chart(data)
    if has_significance(data):
        body += significance(data)
    return section("metrics", body)


def tags(data: ReportInput) -> list[str]:
    views = [view for view in ran(data) if view.tags]
    if not views:
        return section("tags", [el("p", "无 / none")])
    counts = data.tag_counts
    body = []
    for view in views:
        rows = [el("tr", el("td", e(tag)) + num_td(str(counts.get(tag, 0)))
                   + "".join(value_td(*tag_cell(view, tag, label), data_metric=label) for label in data.metrics),
                   data_tag=tag)
                for tag in sorted(view.tags)]
        body += [el("h3", e(view.name)),
                 *html_table(["tag", "questions", *data.metrics], rows, cls="tags", data_retriever=view.name)]
    return section("tags", body)


def diagnostics(data: ReportInput) -> list[str]:
    rows = [el("tr", el("td", e(view.name)) + el("td", e(label))
               + el("td", e(fmt(value)), cls="num", data_value=number(value))
               + el("td", e(diagnostic_meaning(label))),
               data_retriever=view.name, data_diagnostic=label)
            for view in ran(data) for label, value in sorted(view.diagnostics.items())]
    if not rows:
        return section("diagnostics", [el("p", "无 / none reported")])
    return section("diagnostics", html_table(["retriever", "diagnostic", "value", "meaning"], rows, id="diagnostics"))


def grade_of(question: QuestionView, chunk: str) -> int | None:
    """The chunk's grade when it is gold for the question, else None."""
    grade = question.relevance.get(chunk, 0)
    return grade if grade >= 1 else None


def ref_list(question: QuestionView, ranking: Sequence[str], cls: str) -> str:
    """Chunk ids in rank order; gold ones get class "gold", their grade and a ✓."""
    if not ranking:
        return el("span", e(EMPTY), cls="empty")
    items = []
    for cid in ranking:
        grade = grade_of(question, cid)
        mark = "" if grade is None else " " + el("span", f"✓{grade}", cls="mark")
        kind = "ref" if grade is None else "ref gold"
        items.append(el("li", e(cid) + mark, cls=kind, data_chunk=cid, data_grade=grade))
    return el("ol", "".join(items), cls=f"ranking {cls}")


def gold_refs(question: QuestionView) -> str:
    return ", ".join(e(f"{cid} ✓{grade}") for cid, grade in gold(question)) or e(EMPTY)


def change_row(c: QuestionChange) -> str:
    cells = [el("td", e(c.question.id)), el("td", e(c.question.query)), num_td(fmt(c.before)),
             num_td(fmt(c.after)), el("td", delta_span(c.delta), cls="num"), el("td", gold_refs(c.question)),
             el("td", ref_list(c.question, c.ranking_before, "before")),
             el("td", ref_list(c.question, c.ranking_after, "after"))]
    return el("tr", "".join(cells), cls="change", data_question=c.question.id)


def change_table(view: RetrieverView, kind: str, title: str, changes: Sequence[QuestionChange]) -> list[str]:
    headers = ["question", "query", "before", "after", "delta", "gold", "ranking before", "ranking after"]
    rows = [change_row(c) for c in changes]
    return [el("h4", e(f"{title}（{len(changes)}）")),
            *html_table(headers, rows, cls="changes", data_retriever=view.name, data_kind=kind)]


def changes(data: ReportInput) -> list[str]:
    views = [view for view in ran(data) if view.baseline_values]
    if not views:
        return section("changes", [el("p", "无逐题基线，无法对比 / no per-question baseline to compare with")])
    body = []
    for view in views:
        regressed, improved = question_changes(data, view)
        body.append(el("h3", e(f"{view.name} — {data.primary}")))
        if not regressed and not improved:
            body.append(el("p", "无变化 / no question changed"))
        if regressed:
            body += change_table(view, "regressed", "退步 / regressed", regressed)
        if improved:
            body += change_table(view, "improved", "进步 / improved", improved)
    return section("changes", body)


def no_answer_td(view: RetrieverView, ranking: Sequence[str]) -> str:
    content = e(f"✗ {', '.join(ranking)}") if ranking else e(f"✓ {EMPTY}")
    return el("td", content, data_retriever=view.name, data_empty="false" if ranking else "true")


def no_answer(data: ReportInput) -> list[str]:
    views = ran(data)
    questions = [q for q in data.questions if not q.answerable]
    if not questions or not views:
        return section("no-answer", [el("p", "无 / none")])
    columns = [{q.id: ranking for q, ranking in no_answer_rows(data, view)} for view in views]
    rows = [el("tr", el("td", e(q.id)) + el("td", e(q.query))
               + "".join(no_answer_td(view, col[q.id]) for view, col in zip(views, columns, strict=True)),
               data_question=q.id)
            for q in questions]
    totals = "".join(num_td(f"{sum(1 for q in questions if not col[q.id])}/{len(questions)}") for col in columns)
    rows.append(el("tr", el("td", "空返回 / empty") + el("td") + totals, cls="total"))
    headers = ["question", "query", *(v.name for v in views)]
    return section("no-answer", [el("p", e(NO_ANSWER_HINT)), *html_table(headers, rows, id="no-answer")])


def chunk_item(data: ReportInput, question: QuestionView, rank: int, cid: str) -> str:
    grade = grade_of(question, cid)
    chunk = data.chunks.get(cid)
    mark = "" if grade is None else el("span", f"✓ gold {grade}", cls="mark") + " "
    doc = " " + el("span", e(chunk.doc), cls="doc") if chunk is not None and chunk.doc else ""
    text = e(chunk.text if chunk is not None else "（文本缺失 / text unavailable）")
    content = mark + el("span", e(cid), cls="chunk-id") + doc + el("p", text, cls="text")
    return el("li", content, cls="chunk" if grade is None else "chunk gold", data_chunk=cid, data_rank=rank,
              data_grade=grade)


def chunk_list(data: ReportInput, question: QuestionView, ranking: Sequence[str], cls: str) -> str:
    """The retrieved chunks with their texts in rank order; gold ones get class "gold", the grade and a ✓."""
    if not ranking:
        right = " ✓ 正确 / correct" if not question.answerable else ""
        return el("p", e(EMPTY + right), cls="empty")
    items = "".join(chunk_item(data, question, rank, cid) for rank, cid in enumerate(ranking, start=1))
    return el("ol", items, cls=f"chunks {cls}")


def ranking_block(data: ReportInput, question: QuestionView, view: RetrieverView) -> str:
    """One retriever's ranking for the question, and the baseline's when it differs."""
    ranking = view.rankings.get(question.id, ())
    value = view.values.get(question.id, {}).get(data.primary)
    parts = [el("h4", e(f"{view.name} — {data.primary} {fmt(value)}")),
             chunk_list(data, question, ranking, "current")]
    before = view.baseline_rankings.get(question.id)
    if before is not None and before != ranking:
        parts.append(el("div", el("h5", "基线排名 / baseline ranking") + chunk_list(data, question, before, "baseline"),
                        cls="baseline-ranking"))
    return el("div", "".join(parts), cls="ranking-block", data_retriever=view.name)


def question_details(data: ReportInput, question: QuestionView, views: Sequence[RetrieverView]) -> str:
    summary = el("summary", e(f"{question.id} 排名与原文 / rankings and chunk texts"))
    blocks = el("p", "金标准 / gold：" + gold_refs(question), cls="gold-set")
    blocks += "".join(ranking_block(data, question, view) for view in views)
    return el("details", summary + blocks, cls="question-details", data_question=question.id)


def question_rows(data: ReportInput, question: QuestionView, views: Sequence[RetrieverView], columns: int) -> str:
    """The question's row with each retriever's primary metric, and the expandable row under it."""
    cells = [el("td", e(question.id)), el("td", e(question.query)), el("td", e(", ".join(question.tags))),
             el("td", gold_refs(question)),
             *(value_td(*question_cell(view, question.id, data.primary), data_retriever=view.name) for view in views)]
    row = el("tr", "".join(cells), cls="question", data_question=question.id,
             data_answerable="true" if question.answerable else "false")
    detail = el("tr", el("td", question_details(data, question, views), colspan=columns),
                cls="question-detail", data_question=question.id)
    return el("tbody", row + detail, cls="question-group", data_question=question.id)


def questions(data: ReportInput) -> list[str]:
    views = ran(data)
    headers = ["question", "query", "tags", "gold", *(f"{v.name} {data.primary}" for v in views)]
    head = "<thead><tr>" + "".join(el("th", e(h)) for h in headers) + "</tr></thead>"
    rows = [question_rows(data, q, views, len(headers)) for q in data.questions]
    return section("questions", ['<table id="questions">', head, *rows, "</table>"])


def failures(data: ReportInput) -> list[str]:
    if not data.failures:
        return section("failures", [el("p", "无 / none")])
    items = []
    for f in data.failures:
        subject = " · ".join(part for part in (f.retriever, f.metric) if part) or f.nodeid
        content = f"❌ {el('strong', e(subject))} — {el('code', e(f.nodeid))}{el('pre', e(f.message))}"
        items.append(el("li", content, cls="failure", data_retriever=f.retriever, data_metric=f.metric,
                        data_nodeid=f.nodeid))
    return section("failures", ['<ul id="failures">', *items, "</ul>"])


def render(data: ReportInput) -> str:
    """The whole page; deterministic (same input, same bytes) and free of any URL or external asset."""
    body = [
        el("h1", e(TITLE)),
        el("p", e(f"结果 / result：{verdict(data)}"), id="verdict", data_failures=len(data.failures)),
        *configuration(data), *metrics(data), *pairs(data), *conclusions(data), *next_section(data),
        *tags(data), *diagnostics(data),
        *changes(data), *no_answer(data), *questions(data), *failures(data),
    ]
    head = ['<meta charset="utf-8">', '<meta name="viewport" content="width=device-width, initial-scale=1">',
            el("title", e(TITLE)), f"<style>\n{STYLE}\n</style>"]
    return "\n".join(["<!DOCTYPE html>", '<html lang="zh-CN">', "<head>", *head, "</head>", "<body>",
                      *body, "</body>", "</html>"]) + "\n"

