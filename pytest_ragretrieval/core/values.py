"""How values are rounded, compared and shown, decided once for files, verdicts and reports."""
from __future__ import annotations

from collections.abc import Iterable

DIGITS = 6
"""Values are rounded to 6 decimals once, when scored, so files and comparisons agree exactly."""

EPSILON = 1e-9
"""Values are rounded to 6 decimals; this only absorbs the float error of sums such as `baseline - tolerance`."""

SMALLEST_P = 0.0001
"""The smallest p-value four decimals show; below it every p reads `< 0.0001`, never `0.0000`."""

QUOTED = 80
"""Characters of an echoed value (an id a retriever returned) a message shows; the rest is counted."""


def quoted(value: object, limit: int = QUOTED) -> str:
    """`value` as repr quotes it, cut to its first `limit` characters with its length said, so a message
    that echoes a value it was handed (a 100-million-character id) stays one short line."""
    if isinstance(value, str):
        return repr(value) if len(value) <= limit else f"{value[:limit]!r}… ({len(value):,} characters)"
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"


LISTED = 20
"""Items a message lists; the rest is counted, so a message about 1,000 questions stays one short line."""


def listed(items: Iterable[object], separator: str = ", ", limit: int = LISTED) -> str:
    """The items joined, the first `limit` of them, then how many more: `q1, q2, ... and 412 more`; the one
    way a message lists ids, so none grows with the eval set (a "labels to review" line of 85 KB)."""
    shown: list[str] = []
    rest = 0
    for item in items:
        if len(shown) < limit:
            shown.append(str(item))
        else:
            rest += 1
    return separator.join([*shown, f"... and {rest:,} more"] if rest else shown)


def fmt(value: float | None) -> str:
    """A value as every line, table and report shows it: four decimals; "—" for no value."""
    return "—" if value is None else f"{value:.4f}"


def signed(value: float | None) -> str:
    """A difference, sign always shown; "" for none (the caller says what stands in its place)."""
    return "" if value is None else f"{value:+.4f}"


def moved(delta: float | None) -> bool:
    """Whether a difference shows at four decimals: a value that did not move is shown alone, never
    with `(+0.0000)` beside it (terminal, reports)."""
    return delta is not None and signed(delta) not in ("+0.0000", "-0.0000")


def p_value(p: float | None) -> str:
    """A p-value in a table cell: four decimals, `< 0.0001` below that; "—" where no test ran."""
    if p is None:
        return "—"
    return f"< {SMALLEST_P:.4f}" if p < SMALLEST_P else f"{p:.4f}"


def p_clause(p: float, relation: str = "=") -> str:
    """A p-value in a sentence: `p = 0.2700` (or `p ≤ ...` with `relation`), `p < 0.0001` below that."""
    shown = p_value(p)
    return f"p {shown}" if p < SMALLEST_P else f"p {relation} {shown}"
