"""The tutorial's evaluation report (its step 5, the evaluation report) as Markdown, written by `--rag-report`."""
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
from .segments import HEADERS as SEGMENT_HEADERS
from .segments import HINT as SEGMENTS_HINT
from .segments import NUMBERS, segment_tables
from .wording import (
    DEFINITIONS,
    DELTA_HINT,
    EMPTY,
    NO_ANSWER_HINT,
    NONE,
    NOTES,
    PAIRS_HEADERS,
    RESULT,
    SIGNIFICANCE_HEADERS,
    TITLE,
    WARNINGS,
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
    pairs_hint,
    ran,
    say,
    significance_hint,
    status_text,
    tag_cell,
    verdict,
    width,
    with_delta,
)

ZERO_WIDTH = "&#8203;"
"""Put after `@` or `#` (and inside `://`, `www.`), it keeps GitHub from reading a mention, an issue
reference or a bare link in the text, and shows nothing."""
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_MARKUP = re.compile(
    r"(?P<entity>[&<]|^>)"  # `>` elsewhere ends nothing once `<` is escaped
    r"|(?P<escaped>[\\`*|~$#]|\](?=\())"  # emphasis, code, table cells, strikethrough, math, headings; `](`:
    # a link or an image (a bare `[x]` links nowhere: no reference is ever defined)
    r"|(?P<underscore>(?<![0-9A-Za-z])_|_(?![0-9A-Za-z]))"  # `_` inside a word is emphasis nowhere
    r"|(?P<line>\r\n|\r|\n)"
)
_LINKED = re.compile(
    r"(?<=(?<![0-9A-Za-z_])@)(?=[0-9A-Za-z])"  # @mentions (`ndcg@5` is none)
    r"|(?<=[0-9A-Za-z_]@)(?=[\w-]+\.[\w-])"  # e-mail addresses
    r"|(?<=#)(?=[0-9A-Za-z])"  # #123, owner/repo#123
    r"|(?<=\bGH)(?=-[0-9])"  # GH-123
    r"|(?<=:)(?=//)"  # https://...
    r"|(?<=\bwww)(?=\.)",  # www.example.com
    re.IGNORECASE,
)


def _escaped(match: re.Match[str]) -> str:
    if match["entity"]:
        return _ENTITIES[match["entity"]]
    if match["line"]:
        return "<br>"
    return "\\" + match.group()


def esc(text: str) -> str:
    """Text from the user's files (ids, queries, names, tags, messages) as literal Markdown, in a table
    cell too: no link, image, mention, issue reference, emphasis, code, raw HTML or table break comes
    out of it, newlines become <br>. The one escape of the Markdown report, the job summary and the
    pull-request comment."""
    escaped = _MARKUP.sub(_escaped, text)
    return _LINKED.sub(ZERO_WIDTH, escaped) if _LINKED.search(escaped) else escaped


def code(text: str) -> str:
    """A name as code: a code span shows everything but a backtick, a pipe or a line break literally;
    text holding one is escaped (`esc`) inside <code> instead."""
    plain = text and not re.search(r"[`|\r\n]", text) and text.strip(" ") == text
    return f"`{text}`" if plain else f"<code>{esc(text)}</code>"


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


def ranking_text(question: QuestionView, ranking: Sequence[str], language: str) -> str:
    """Chunk ids in rank order, gold ones bold with ✓ and their grade."""
    if not ranking:
        return empty(language)
    parts = []
    for cid in ranking:
        grade = question.relevance.get(cid, 0)
        parts.append(f"**{esc(cid)}** ✓{grade}" if grade >= 1 else esc(cid))
    return ", ".join(parts)


def gold_text(question: QuestionView, language: str) -> str:
    return ", ".join(f"{esc(cid)} ✓{grade}" for cid, grade in gold(question)) or empty(language)


def definition_text(data: ReportInput, label: str) -> str:
    definition = data.definitions.get(label, "")
    return f"{esc(label)}{colon(data.language)}{esc(definition)}" if definition else esc(label)


def configuration_section(data: ReportInput) -> list[str]:
    language = data.language
    lines = [f"## {heading(language, 'configuration')}", ""]
    lines += [f"- {label}{colon(language)}{esc(value)}" for _, label, value in config_items(data)]
    lines.append(f"- {say(language, DEFINITIONS)}{colon(language).rstrip()}")
    lines += [f"  - {definition_text(data, label)}" for label in data.metrics]
    if data.notes:
        lines += ["", f"**⚠️ {say(language, WARNINGS)}**", ""]
        lines += [f"- ⚠️ {esc(note)}" for note in data.notes]
    if data.info:
        lines += ["", f"**ℹ️ {say(language, NOTES)}**", ""]
        lines += [f"- ℹ️ {esc(note)}" for note in data.info]
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
    return ["", f"### {heading(data.language, 'since')}", "", *(f"- {esc(line)}" for line in data.since)]


def metrics_section(data: ReportInput) -> list[str]:
    language = data.language
    lines = [f"## {heading(language, 'metrics')}", *since_section(data), "", *metrics_table(data)]
    reasons = [f"- {esc(view.name)}: {esc(status_text(view))}" for view in data.retrievers if view.status != "ran"]
    if reasons:
        lines += ["", *reasons]
    loads = loads_line(data.retrievers, language)
    if loads:
        lines += ["", esc(loads)]
    if any(metric_cell(view, label)[1] is not None for view in ran(data) for label in data.metrics):
        lines += ["", say(language, DELTA_HINT)]
    if has_significance(data):
        lines += ["", f"### {heading(language, 'significance')}", "", significance_hint(data), "",
                  *significance_table(data)]
    lines += segments_section(data)
    if data.pairs:
        lines += ["", f"### {heading(language, 'pairs')}", "", pairs_hint(data.pair_method, language), "",
                  *pairs_table(data)]
    return lines


def segments_section(data: ReportInput) -> list[str]:
    """Each segment key's table (`report/segments.py`); nothing without segments compared."""
    tables = segment_tables(data)
    if not tables:
        return []
    lines = ["", f"### {heading(data.language, 'segments')}", "", esc(say(data.language, SEGMENTS_HINT))]
    for key, rows in tables:
        lines += ["", f"#### {esc(key)}", "",
                  *table(SEGMENT_HEADERS, [list(map(esc, row.cells(data.language))) for row in rows], numeric=NUMBERS)]
    return lines


def pairs_table(data: ReportInput) -> list[str]:
    rows = [[esc(f"{c.a} vs {c.b}"), esc(c.metric), signed(c.delta), p_value(c.p_value), format_ci(c.ci95),
             f"{c.wins} / {c.ties} / {c.losses}"] for c in data.pairs]
    return table(list(PAIRS_HEADERS), rows, numeric=4)


def conclusions_section(data: ReportInput) -> list[str]:
    return [f"## {heading(data.language, 'conclusions')}", "", *(f"- {esc(line)}" for line in conclusion_lines(data))]


def next_section(data: ReportInput) -> list[str]:
    return [f"## {heading(data.language, 'next')}", "", *(f"- {esc(line)}" for line in next_steps(data))]


def tags_section(data: ReportInput) -> list[str]:
    lines = [f"## {heading(data.language, 'tags')}"]
    views = [view for view in ran(data) if view.tags]
    if not views:
        return lines + ["", say(data.language, NONE)]
    counts = data.tag_counts
    headers = ["tag", "questions", *map(esc, data.metrics)]
    for view in views:
        rows = [[esc(tag), str(counts.get(tag, 0)),
                 *(with_delta(*tag_cell(view, tag, label)) for label in data.metrics)]
                for tag in sorted(view.tags)]
        lines += ["", f"### {esc(view.name)}", "", *table(headers, rows, numeric=len(data.metrics) + 1)]
    return lines


def diagnostics_section(data: ReportInput) -> list[str]:
    lines = [f"## {heading(data.language, 'diagnostics')}", ""]
    rows = [[esc(view.name), esc(label), fmt(value), esc(diagnostic_meaning(label, data.language))]
            for view in ran(data) for label, value in sorted(view.diagnostics.items())]
    if not rows:
        return lines + [say(data.language, ("无", "none reported"))]
    return lines + table(["retriever", "diagnostic", "value", "meaning"], rows)


def change_rows(changes: Sequence[QuestionChange], language: str) -> list[list[str]]:
    return [[esc(c.question.id), esc(c.question.query), fmt(c.before), fmt(c.after),
             signed(c.delta), gold_text(c.question, language),
             ranking_text(c.question, c.ranking_before, language), ranking_text(c.question, c.ranking_after, language)]
            for c in changes]


def change_block(title: str, changes: Sequence[QuestionChange], limit: int | None, language: str) -> list[str]:
    headers = ["question", "query", "before", "after", "delta", "gold", "ranking before", "ranking after"]
    shown = list(changes if limit is None else changes[:limit])
    lines = ["", f"**{title}**{aside(language, str(len(changes)))}", "", *table(headers, change_rows(shown, language))]
    if len(shown) < len(changes):
        rest = len(changes) - len(shown)
        lines += ["", "…" + say(language, (f"另有 {rest} 题", f"{rest} more in the full report"))]
    return lines


def changes_section(data: ReportInput, limit: int | None = None) -> list[str]:
    """Per retriever, the questions whose primary metric fell or rose against the baseline, with both rankings."""
    language = data.language
    lines = [f"## {heading(language, 'changes')}"]
    views = [view for view in ran(data) if view.baseline_values]
    if not views:
        return lines + ["", say(language, ("无逐题基线，无法对比", "no per-question baseline to compare with"))]
    for view in views:
        regressed, improved = question_changes(data, view)
        lines += ["", f"### {esc(view.name)} — {esc(data.primary)}"]
        if not regressed and not improved:
            lines += ["", say(language, ("无变化", "no question changed"))]
        if regressed:
            lines += change_block(say(language, ("退步", "regressed")), regressed, limit, language)
        if improved:
            lines += change_block(say(language, ("进步", "improved")), improved, limit, language)
    return lines


def no_answer_cell(ranking: Sequence[str], language: str) -> str:
    return "✓ " + empty(language) if not ranking else "✗ " + ", ".join(esc(cid) for cid in ranking)


def no_answer_section(data: ReportInput) -> list[str]:
    language = data.language
    lines = [f"## {heading(language, 'no-answer')}", ""]
    views = ran(data)
    questions = [q for q in data.questions if not q.answerable]
    if not questions or not views:
        return lines + [say(language, NONE)]
    columns = [{q.id: ranking for q, ranking in no_answer_rows(data, view)} for view in views]
    rows = [[esc(q.id), esc(q.query), *(no_answer_cell(col[q.id], language) for col in columns)] for q in questions]
    totals = [f"{sum(1 for q in questions if not col[q.id])}/{len(questions)}" for col in columns]
    rows.append([say(language, ("空返回", EMPTY[1])), "", *totals])
    headers = ["question", "query", *(esc(v.name) for v in views)]
    return lines + [say(language, NO_ANSWER_HINT), "", *table(headers, rows)]


def fenced(text: str) -> list[str]:
    """A code block whose fence is longer than any backtick run in the text."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}text", *text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), fence]


def failures_section(data: ReportInput) -> list[str]:
    lines = [f"## {heading(data.language, 'failures')}", ""]
    if not data.failures:
        return lines + [say(data.language, NONE)]
    for failure in data.failures:
        subject = " · ".join(esc(part) for part in (failure.retriever, failure.metric) if part)
        lines.append(f"- ❌ **{subject or esc(failure.nodeid)}** — {esc(failure.nodeid)}")
        lines += ["", *("  " + line if line else "" for line in fenced(failure.message)), ""]
    return lines[:-1]


def render(data: ReportInput) -> str:
    """The full report: the same input always gives the same bytes (no dates, no dict-order surprises)."""
    sections = [
        [f"# {say(data.language, TITLE)}", "", f"{say(data.language, RESULT)}{colon(data.language)}{verdict(data)}"],
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
