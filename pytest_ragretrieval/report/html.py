"""The evaluation report as one self-contained HTML page, written by `--rag-html`.

Same content as the Markdown report plus a bar chart (inline SVG) and a per-question table whose
rows expand (<details>, no JS needed) to the retrieved chunks' texts. No external asset and no URL
anywhere, so the page opens offline and as a CI artifact. Every element a test or a script needs
carries a stable id, class or data- attribute.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

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
from .html_explain import EXPLAIN_STYLE, explanation
from .html_pairs import conclusions, next_section, pairs, since
from .markup import attrs, e, el, number
from .segments import HEADERS as SEGMENT_HEADERS
from .segments import HINT as SEGMENTS_HINT
from .segments import NUMBERS, segment_tables
from .wording import (
    DEFINITIONS,
    DELTA_HINT,
    EMPTY,
    MARKED,
    NO_ANSWER_HINT,
    NONE,
    NOTES,
    RESULT,
    SIGNIFICANCE_HEADERS,
    TITLE,
    WARNINGS,
    ZH_CLOSE,
    ZH_OPEN,
    aside,
    colon,
    config_items,
    diagnostic_meaning,
    empty,
    format_ci,
    gold,
    has_significance,
    heading,
    loads_line,
    metric_cell,
    question_cell,
    ran,
    say,
    significance_hint,
    status_text,
    tag_cell,
    unmarked,
    verdict,
)

STYLE = """
body { font-family: system-ui, "Noto Sans CJK SC", "Source Han Sans SC", "PingFang SC", "Hiragino Sans GB",
  "Microsoft YaHei", "WenQuanYi Micro Hei", "Droid Sans Fallback", sans-serif; margin: 2rem; color: #222; }
.no-cjk .zh { display: none; }
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


CJK_CHECK = """<script>
(function () {
  var canvas = document.createElement("canvas"), pen = canvas.getContext && canvas.getContext("2d");
  if (!pen) { return; }
  canvas.width = 48; canvas.height = 24;
  function drawn(text) {
    pen.clearRect(0, 0, 48, 24);
    pen.font = "20px " + getComputedStyle(document.body).fontFamily;
    pen.fillText(text, 2, 20);
    return Array.prototype.join.call(pen.getImageData(0, 0, 48, 24).data);
  }
  if (drawn("\u4e2d") === drawn("\u6587")) { document.documentElement.classList.add("no-cjk"); }
})();
</script>"""
"""Where no font draws CJK, two different characters come out as the same missing-glyph box: the page
then hides the Chinese half of its bilingual words (`.no-cjk .zh`), leaving the English, never boxes.
Without JavaScript the font stack above, with its CJK fallbacks, is all there is."""
MARKS = re.compile(f"{ZH_OPEN}([^{ZH_OPEN}{ZH_CLOSE}<>]*){ZH_CLOSE}")


def section(data: ReportInput, key: str, body: Sequence[str]) -> list[str]:
    return [f'<section id="{key}-section">', el("h2", e(heading(data.language, key))), *body, "</section>"]


def configuration(data: ReportInput) -> list[str]:
    language = data.language
    items = [el("div", el("dt", e(label)) + el("dd", e(value)), data_key=key)
             for key, label, value in config_items(data)]
    definitions = [el("li", el("code", e(label)) + e(colon(language)) + e(data.definitions.get(label, "")),
                      data_metric=label)
                   for label in data.metrics]
    body = ['<dl id="config">', *items, "</dl>", el("h3", e(say(language, DEFINITIONS))),
            '<ul id="definitions">', *definitions, "</ul>"]
    if data.notes:
        notes = [el("li", "⚠️ " + e(note), cls="note") for note in data.notes]
        body += [el("h3", "⚠️ " + e(say(language, WARNINGS))), '<ul id="notes" class="notes">', *notes, "</ul>"]
    if data.info:
        info = [el("li", "ℹ️ " + e(note), cls="info") for note in data.info]
        body += [el("h3", "ℹ️ " + e(say(language, NOTES))), '<ul id="info">', *info, "</ul>"]
    return section(data, "configuration", body)


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
    return [el("h3", e(heading(data.language, "significance"))), el("p", e(significance_hint(data))),
            *html_table(list(SIGNIFICANCE_HEADERS), rows, id="significance")]


def metrics(data: ReportInput) -> list[str]:
    headers = ["retriever", "type", "status", *data.metrics, "no-answer empty", "latency p50/p95 ms"]
    body = since(data) + html_table(headers, [metrics_row(data, view) for view in data.retrievers], id="metrics")
    reasons = [el("li", e(f"{view.name}: {status_text(view)}"), data_retriever=view.name)
               for view in data.retrievers if view.status != "ran"]
    if reasons:
        body.append(el("ul", "".join(reasons), cls="reasons"))
    loads = loads_line(data.retrievers, data.language)
    if loads:
        body.append(el("p", e(loads), cls="loads"))
    if any(metric_cell(view, label)[1] is not None for view in ran(data) for label in data.metrics):
        body.append(el("p", e(say(data.language, DELTA_HINT))))
    body += chart(data)
    if has_significance(data):
        body += significance(data)
    body += segments(data)
    return section(data, "metrics", body)


def segments(data: ReportInput) -> list[str]:
    """Each segment key's table (`report/segments.py`); nothing without segments compared."""
    tables = segment_tables(data)
    if not tables:
        return []
    body = [el("h3", e(heading(data.language, "segments"))), el("p", e(say(data.language, SEGMENTS_HINT)))]
    for key, found in tables:
        rows = []
        for row in found:
            cells = row.cells(data.language)
            tds = "".join(el("td", e(cell)) for cell in cells[:-NUMBERS]) + "".join(map(num_td, cells[-NUMBERS:]))
            rows.append(el("tr", tds, data_retriever=row.retriever, data_segment=row.segment, data_metric=row.metric,
                           data_p=number(row.comparison.p_value), data_outcome=row.outcome[1]))
        body += [el("h4", e(key)), *html_table(list(SEGMENT_HEADERS), rows, cls="segments", data_key=key)]
    return body


def tags(data: ReportInput) -> list[str]:
    views = [view for view in ran(data) if view.tags]
    if not views:
        return section(data, "tags", [el("p", e(say(data.language, NONE)))])
    counts = data.tag_counts
    body = []
    for view in views:
        rows = [el("tr", el("td", e(tag)) + num_td(str(counts.get(tag, 0)))
                   + "".join(value_td(*tag_cell(view, tag, label), data_metric=label) for label in data.metrics),
                   data_tag=tag)
                for tag in sorted(view.tags)]
        body += [el("h3", e(view.name)),
                 *html_table(["tag", "questions", *data.metrics], rows, cls="tags", data_retriever=view.name)]
    return section(data, "tags", body)


def diagnostics(data: ReportInput) -> list[str]:
    rows = [el("tr", el("td", e(view.name)) + el("td", e(label))
               + el("td", e(fmt(value)), cls="num", data_value=number(value))
               + el("td", e(diagnostic_meaning(label, data.language))),
               data_retriever=view.name, data_diagnostic=label)
            for view in ran(data) for label, value in sorted(view.diagnostics.items())]
    if not rows:
        return section(data, "diagnostics", [el("p", e(say(data.language, ("无", "none reported"))))])
    headers = ["retriever", "diagnostic", "value", "meaning"]
    return section(data, "diagnostics", html_table(headers, rows, id="diagnostics"))


def grade_of(question: QuestionView, chunk: str) -> int | None:
    """The chunk's grade when it is gold for the question, else None."""
    grade = question.relevance.get(chunk, 0)
    return grade if grade >= 1 else None


def ref_list(question: QuestionView, ranking: Sequence[str], cls: str, language: str) -> str:
    """Chunk ids in rank order; gold ones get class "gold", their grade and a ✓."""
    if not ranking:
        return el("span", e(empty(language)), cls="empty")
    items = []
    for cid in ranking:
        grade = grade_of(question, cid)
        mark = "" if grade is None else " " + el("span", f"✓{grade}", cls="mark")
        kind = "ref" if grade is None else "ref gold"
        items.append(el("li", e(cid) + mark, cls=kind, data_chunk=cid, data_grade=grade))
    return el("ol", "".join(items), cls=f"ranking {cls}")


def gold_refs(question: QuestionView, language: str) -> str:
    return ", ".join(e(f"{cid} ✓{grade}") for cid, grade in gold(question)) or e(empty(language))


def change_row(c: QuestionChange, language: str) -> str:
    cells = [el("td", e(c.question.id)), el("td", e(c.question.query)), num_td(fmt(c.before)),
             num_td(fmt(c.after)), el("td", delta_span(c.delta), cls="num"), el("td", gold_refs(c.question, language)),
             el("td", ref_list(c.question, c.ranking_before, "before", language)),
             el("td", ref_list(c.question, c.ranking_after, "after", language))]
    return el("tr", "".join(cells), cls="change", data_question=c.question.id)


def change_table(view: RetrieverView, kind: str, title: str, changes: Sequence[QuestionChange],
                 language: str) -> list[str]:
    headers = ["question", "query", "before", "after", "delta", "gold", "ranking before", "ranking after"]
    rows = [change_row(c, language) for c in changes]
    return [el("h4", e(title + aside(language, str(len(changes))))),
            *html_table(headers, rows, cls="changes", data_retriever=view.name, data_kind=kind)]


def changes(data: ReportInput) -> list[str]:
    language = data.language
    views = [view for view in ran(data) if view.baseline_values]
    if not views:
        none = say(language, ("无逐题基线，无法对比", "no per-question baseline to compare with"))
        return section(data, "changes", [el("p", e(none))])
    body = []
    for view in views:
        regressed, improved = question_changes(data, view)
        body.append(el("h3", e(f"{view.name} — {data.primary}")))
        if not regressed and not improved:
            body.append(el("p", e(say(language, ("无变化", "no question changed")))))
        if regressed:
            body += change_table(view, "regressed", say(language, ("退步", "regressed")), regressed, language)
        if improved:
            body += change_table(view, "improved", say(language, ("进步", "improved")), improved, language)
    return section(data, "changes", body)


def no_answer_td(view: RetrieverView, ranking: Sequence[str], language: str) -> str:
    content = e(f"✗ {', '.join(ranking)}") if ranking else e(f"✓ {empty(language)}")
    return el("td", content, data_retriever=view.name, data_empty="false" if ranking else "true")


def no_answer(data: ReportInput) -> list[str]:
    views = ran(data)
    questions = [q for q in data.questions if not q.answerable]
    if not questions or not views:
        return section(data, "no-answer", [el("p", e(say(data.language, NONE)))])
    columns = [{q.id: ranking for q, ranking in no_answer_rows(data, view)} for view in views]
    rows = [el("tr", el("td", e(q.id)) + el("td", e(q.query))
               + "".join(no_answer_td(view, col[q.id], data.language)
                         for view, col in zip(views, columns, strict=True)),
               data_question=q.id)
            for q in questions]
    totals = "".join(num_td(f"{sum(1 for q in questions if not col[q.id])}/{len(questions)}") for col in columns)
    rows.append(el("tr", el("td", e(say(data.language, ("空返回", EMPTY[1])))) + el("td") + totals, cls="total"))
    headers = ["question", "query", *(v.name for v in views)]
    hint = el("p", e(say(data.language, NO_ANSWER_HINT)))
    return section(data, "no-answer", [hint, *html_table(headers, rows, id="no-answer")])


def chunk_item(data: ReportInput, question: QuestionView, rank: int, cid: str) -> str:
    grade = grade_of(question, cid)
    chunk = data.chunks.get(cid)
    mark = "" if grade is None else el("span", f"✓ gold {grade}", cls="mark") + " "
    doc = " " + el("span", e(chunk.doc), cls="doc") if chunk is not None and chunk.doc else ""
    missing = aside(data.language, say(data.language, ("文本缺失", "text unavailable"))).strip()
    text = e(chunk.text if chunk is not None else missing)
    content = mark + el("span", e(cid), cls="chunk-id") + doc + el("p", text, cls="text")
    return el("li", content, cls="chunk" if grade is None else "chunk gold", data_chunk=cid, data_rank=rank,
              data_grade=grade)


def chunk_list(data: ReportInput, question: QuestionView, ranking: Sequence[str], cls: str) -> str:
    """The retrieved chunks with their texts in rank order; gold ones get class "gold", the grade and a ✓."""
    if not ranking:
        right = " ✓ " + say(data.language, ("正确", "correct")) if not question.answerable else ""
        return el("p", e(empty(data.language) + right), cls="empty")
    items = "".join(chunk_item(data, question, rank, cid) for rank, cid in enumerate(ranking, start=1))
    return el("ol", items, cls=f"chunks {cls}")


def ranking_block(data: ReportInput, question: QuestionView, view: RetrieverView) -> str:
    """One retriever's ranking for the question, and the baseline's when it differs."""
    ranking = view.rankings.get(question.id, ())
    value = view.values.get(question.id, {}).get(data.primary)
    parts = [el("h4", e(f"{view.name} — {data.primary} {fmt(value)}")),
             chunk_list(data, question, ranking, "current"), explanation(data, question.id, view.name)]
    before = view.baseline_rankings.get(question.id)
    if before is not None and before != ranking:
        title = el("h5", e(say(data.language, ("基线排名", "baseline ranking"))))
        parts.append(el("div", title + chunk_list(data, question, before, "baseline"), cls="baseline-ranking"))
    return el("div", "".join(parts), cls="ranking-block", data_retriever=view.name)


def question_details(data: ReportInput, question: QuestionView, views: Sequence[RetrieverView]) -> str:
    language = data.language
    summary = el("summary", e(f"{question.id} " + say(language, ("排名与原文", "rankings and chunk texts"))))
    blocks = el("p", e(say(language, ("金标准", "gold")) + colon(language)) + gold_refs(question, language),
                cls="gold-set")
    blocks += "".join(ranking_block(data, question, view) for view in views)
    return el("details", summary + blocks, cls="question-details", data_question=question.id)


def question_rows(data: ReportInput, question: QuestionView, views: Sequence[RetrieverView], columns: int) -> str:
    """The question's row with each retriever's primary metric, and the expandable row under it."""
    cells = [el("td", e(question.id)), el("td", e(question.query)), el("td", e(", ".join(question.tags))),
             el("td", gold_refs(question, data.language)),
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
    return section(data, "questions", ['<table id="questions">', head, *rows, "</table>"])


def failures(data: ReportInput) -> list[str]:
    if not data.failures:
        return section(data, "failures", [el("p", e(say(data.language, NONE)))])
    items = []
    for f in data.failures:
        subject = " · ".join(part for part in (f.retriever, f.metric) if part) or f.nodeid
        content = f"❌ {el('strong', e(subject))} — {el('code', e(f.nodeid))}{el('pre', e(f.message))}"
        items.append(el("li", content, cls="failure", data_retriever=f.retriever, data_metric=f.metric,
                        data_nodeid=f.nodeid))
    return section(data, "failures", ['<ul id="failures">', *items, "</ul>"])


def render(data: ReportInput) -> str:
    """The whole page; deterministic (same input, same bytes) and free of any URL or external asset. In
    "both" the Chinese of each phrase is a `span.zh`, which CJK_CHECK hides where no font draws it."""
    english = data.language == "en"
    if not english:
        data = replace(data, language=MARKED)
    page = _page(data, english)
    return page if english else MARKS.sub(lambda m: el("span", m.group(1), cls="zh", lang="zh-CN"), page)


def _page(data: ReportInput, english: bool) -> str:
    body = [
        el("h1", e(say(data.language, TITLE))),
        el("p", e(say(data.language, RESULT) + colon(data.language) + verdict(data)), id="verdict",
           data_failures=len(data.failures)),
        *configuration(data), *metrics(data), *pairs(data), *conclusions(data), *next_section(data),
        *tags(data), *diagnostics(data),
        *changes(data), *no_answer(data), *questions(data), *failures(data),
    ]
    head = ['<meta charset="utf-8">', '<meta name="viewport" content="width=device-width, initial-scale=1">',
            el("title", e(say(unmarked(data.language), TITLE))),
            f"<style>\n{STYLE}{EXPLAIN_STYLE if data.explanations else ''}\n</style>"]
    check = [] if english else [CJK_CHECK]
    return "\n".join(["<!DOCTYPE html>", f'<html lang="{"en" if english else "zh-CN"}">', "<head>", *head,
                      "</head>", "<body>", *body, *check, "</body>", "</html>"]) + "\n"

