"""The HTML page's comparisons (between configurations, with the baseline's set-up), conclusions and next steps.

Kept apart from html.py (which holds the rest of the page) so each stays small; same markup
conventions: escaped once, stable ids and data- attributes for tests and scripts.
"""
from __future__ import annotations

from collections.abc import Sequence

from ..core.values import EPSILON, p_value, signed
from ..record.report import ReportInput
from .conclusions import conclusion_lines, next_steps
from .markup import e, el, number
from .wording import PAIRS_HEADERS, format_ci, heading, pairs_hint


def _section(data: ReportInput, key: str, body: Sequence[str]) -> list[str]:
    return [f'<section id="{key}-section">', el("h2", e(heading(data.language, key))), *body, "</section>"]


def _num(text: str, **values: object) -> str:
    return el("td", e(text), cls="num", **values)


def pairs(data: ReportInput) -> list[str]:
    """One row per pair and metric; nothing when no pair was compared."""
    if not data.pairs:
        return []
    rows = []
    for c in data.pairs:
        kind = "negative" if c.delta < -EPSILON else "positive" if c.delta > EPSILON else "zero"
        cells = (el("td", e(f"{c.a} vs {c.b}")) + el("td", e(c.metric))
                 + el("td", el("span", e(signed(c.delta)), cls=f"delta {kind}"), cls="num",
                      data_value=number(c.delta))
                 + _num(p_value(c.p_value), data_value=number(c.p_value)) + _num(format_ci(c.ci95))
                 + _num(f"{c.wins} / {c.ties} / {c.losses}"))
        rows.append(el("tr", cells, data_a=c.a, data_b=c.b, data_metric=c.metric,
                       data_significant="true" if c.significant(data.alpha) else "false"))
    head = "".join(el("th", e(h)) for h in PAIRS_HEADERS)
    table = ['<table id="pairs">', f"<thead><tr>{head}</tr></thead>", "<tbody>", *rows, "</tbody>", "</table>"]
    return _section(data, "pairs", [el("p", e(pairs_hint(data.pair_method, data.language))), *table])


def conclusions(data: ReportInput) -> list[str]:
    items = "".join(el("li", e(line)) for line in conclusion_lines(data))
    return _section(data, "conclusions", [el("ul", items, id="conclusions")])


def next_section(data: ReportInput) -> list[str]:
    items = "".join(el("li", e(line)) for line in next_steps(data))
    return _section(data, "next", [el("ul", items, id="next-steps")])


def since(data: ReportInput) -> list[str]:
    """What changed since the baseline (the yardstick, the system under test, the questions), one item each."""
    items = "".join(el("li", e(line)) for line in data.since)
    return [el("h3", e(heading(data.language, "since"))), el("ul", items, id="since")] if items else []
