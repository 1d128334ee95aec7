"""The segment values' comparisons as every report shows them (docs/verdicts.md, "Segments"): one compact
table per segment key, a row per retriever x value x metric, with its outcome. Pure: the record's view in,
rows of plain values out; each renderer formats and escapes them."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..core.values import fmt, p_value, signed
from ..record.report import ReportInput
from ..record.types import Comparison, Finding
from .wording import OUTCOME_WORDS, say

HEADERS = ("retriever", "segment", "metric", "outcome", "n", "base", "value", "delta", "p")
"""The columns of each key's table: three keys, the outcome, then `NUMBERS` numbers (n: the questions compared,
base: the baseline's mean over them, p: adjusted in the value's family)."""
NUMBERS = 5
HINT = ("每个分段取值自成一族，p 值在族内做 max-T 校正；题数少于 min_questions 的取值只展示、不判定",
        "each segment value is a family of its own, its p adjusted within it; a value with fewer compared questions "
        "than min_questions is shown, not judged")
SHOWN = ("展示，不判定", "shown, not judged")
"""A value with fewer compared questions than `min_questions`: its items are shown, not judged."""
NOT_SELECTED = ("本次未判定", "not judged in this run")
WORDS = {Finding.REGRESSION: ("退化", "regression"), **OUTCOME_WORDS}


@dataclass(frozen=True)
class SegmentRow:
    """One segment value's comparison of one metric of one retriever, under today's exam."""

    retriever: str
    segment: str
    metric: str
    comparison: Comparison
    outcome: tuple[str, str]
    """(Chinese, English): what the item's verdict says, or why it has none."""

    def cells(self, language: str) -> list[str]:
        """The row's texts, unescaped, in `HEADERS` order."""
        c = self.comparison
        return [self.retriever, self.segment, self.metric, say(language, self.outcome), str(c.questions),
                fmt(c.baseline), fmt(c.value), signed(c.delta) or "—", p_value(c.p_value) if c.p_value is not None
                else "—"]


def _outcome(data: ReportInput, retriever: str, segment: str, label: str, comparison: Comparison) -> tuple[str, str]:
    """The item's outcome (a segment item names its metric `KEY:VALUE::LABEL`); an item without one was shown,
    not judged (fewer questions than `min_questions`), or not judged in this run (not selected, an update)."""
    if comparison.questions < data.min_questions:
        return SHOWN
    for item in data.outcomes:
        if (item.retriever, item.metric) == (retriever, f"{segment}::{label}"):
            return WORDS[item.outcome]
    return NOT_SELECTED


def segment_tables(data: ReportInput) -> list[tuple[str, list[SegmentRow]]]:
    """(segment key, its rows) per key, in the record's order of values, retrievers in the config's and metrics
    in the report's; empty without `segments` or a baseline to compare with."""
    tables: dict[str, list[SegmentRow]] = {}
    for view in data.retrievers:
        found = view.entry.segments if view.entry is not None else None
        if not isinstance(found, Mapping):
            continue
        for segment, comparisons in found.items():
            for label in data.metrics:
                if label in comparisons:
                    row = SegmentRow(view.name, segment, label, comparisons[label],
                                     _outcome(data, view.name, segment, label, comparisons[label]))
                    tables.setdefault(segment.partition(":")[0], []).append(row)
    return [(key, sorted(rows, key=lambda row: row.segment)) for key, rows in tables.items()]
