"""The metrics bar chart as inline SVG: a group per metric, a bar per retriever, dashes at the baseline."""
from __future__ import annotations

from collections.abc import Sequence

from ..core.values import fmt
from ..record.report import ReportInput, RetrieverView
from .markup import attrs, e, el, fmt2, number, void
from .wording import heading, metric_cell, ran, unmarked, width

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac")
PLOT_HEIGHT = 200.0
BAR_WIDTH = 18.0
BAR_GAP = 4.0
GROUP_GAP = 28.0
LEFT, TOP = 44.0, 16.0
LEGEND_STEP = 18.0


def bars_width(count: int) -> float:
    return count * BAR_WIDTH + (count - 1) * BAR_GAP


def slot_width(data: ReportInput, count: int) -> float:
    """A group's width: its bars, or its metric label when that is wider."""
    return max(bars_width(count), 7.0 * max(width(label) for label in data.metrics))


def slot_x(slot: float, metric: int) -> float:
    return LEFT + GROUP_GAP + metric * (slot + GROUP_GAP)


def bar_x(slot: float, metric: int, series: int, count: int) -> float:
    return slot_x(slot, metric) + (slot - bars_width(count)) / 2 + series * (BAR_WIDTH + BAR_GAP)


def bar_y(value: float) -> float:
    """The y of a value on the fixed 0–1 axis; values outside it are clipped."""
    return TOP + PLOT_HEIGHT * (1.0 - min(1.0, max(0.0, value)))


def chart_axis(plot_width: float) -> list[str]:
    right, bottom = fmt2(LEFT + plot_width), fmt2(TOP + PLOT_HEIGHT)
    lines = []
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        y = fmt2(bar_y(tick))
        lines.append(void("line", cls="grid", x1=fmt2(LEFT), x2=right, y1=y, y2=y))
        lines.append(el("text", f"{tick:.2f}", cls="tick", x=fmt2(LEFT - 6), y=y,
                        text_anchor="end", dominant_baseline="middle"))
    lines.append(void("line", cls="axis", x1=fmt2(LEFT), x2=fmt2(LEFT), y1=fmt2(TOP), y2=bottom))
    lines.append(void("line", cls="axis", x1=fmt2(LEFT), x2=right, y1=bottom, y2=bottom))
    return lines


def chart_bar(view: RetrieverView, label: str, series: int, x: float) -> list[str]:
    """One bar with a tooltip and, when there is a baseline, a dashed mark at its value."""
    value = metric_cell(view, label)[0] or 0.0
    y = bar_y(value)
    tooltip = el("title", e(f"{view.name} {label} {fmt(value)}"))
    lines = [el("rect", tooltip, cls=f"bar series-{series}", data_retriever=view.name, data_metric=label,
                data_value=number(value), x=fmt2(x), y=fmt2(y), width=fmt2(BAR_WIDTH),
                height=fmt2(TOP + PLOT_HEIGHT - y), fill=PALETTE[series % len(PALETTE)])]
    comparison = view.comparisons.get(label)
    if comparison is not None and comparison.baseline is not None:
        mark = fmt2(bar_y(comparison.baseline))
        lines.append(void("line", cls="baseline-mark", data_retriever=view.name, data_metric=label,
                          data_value=number(comparison.baseline), x1=fmt2(x - 2), x2=fmt2(x + BAR_WIDTH + 2),
                          y1=mark, y2=mark))
    return lines


def chart_bars(data: ReportInput, views: Sequence[RetrieverView]) -> list[str]:
    slot = slot_width(data, len(views))
    lines = []
    for m, label in enumerate(data.metrics):
        for s, view in enumerate(views):
            lines += chart_bar(view, label, s, bar_x(slot, m, s, len(views)))
        lines.append(el("text", e(label), cls="metric-label", x=fmt2(slot_x(slot, m) + slot / 2),
                        y=fmt2(TOP + PLOT_HEIGHT + 16), text_anchor="middle"))
    return lines


def chart_legend(views: Sequence[RetrieverView], x: float) -> list[str]:
    lines = ['<g class="legend">']
    for s, view in enumerate(views):
        y = TOP + s * LEGEND_STEP
        lines.append(void("rect", cls="legend-swatch", data_retriever=view.name, x=fmt2(x), y=fmt2(y),
                          width="12", height="12", fill=PALETTE[s % len(PALETTE)]))
        lines.append(el("text", e(view.name), x=fmt2(x + 18), y=fmt2(y + 10)))
    return lines + ["</g>"]


def chart(data: ReportInput) -> list[str]:
    """Grouped bars: a group per metric, a bar per ran retriever, on a fixed 0–1 axis; dashes mark the baseline."""
    views = ran(data)
    if not views or not data.metrics:
        return []
    plot_width = len(data.metrics) * (slot_width(data, len(views)) + GROUP_GAP) + GROUP_GAP
    legend_x = LEFT + plot_width + 16
    total_width = fmt2(legend_x + 24 + 7 * max(width(view.name) for view in views))
    total_height = fmt2(max(TOP + PLOT_HEIGHT + 32, TOP + LEGEND_STEP * len(views) + 8))
    svg = (f"<svg{attrs(id='metrics-chart', role='img', aria_label=heading(unmarked(data.language), 'metrics'))}"
           f'{attrs(width=total_width, height=total_height, viewBox=f"0 0 {total_width} {total_height}")}'
           f"{attrs(data_plot_height=fmt2(PLOT_HEIGHT))}>")
    return [svg, *chart_axis(plot_width), *chart_bars(data, views), *chart_legend(views, legend_x), "</svg>"]
