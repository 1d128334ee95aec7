"""How values are rounded, compared and shown, decided once for files, verdicts and reports."""
from __future__ import annotations

DIGITS = 6
"""Values are rounded to 6 decimals once, when scored, so files and comparisons agree exactly."""

EPSILON = 1e-9
"""Values are rounded to 6 decimals; this only absorbs the float error of sums such as `baseline - tolerance`."""


def fmt(value: float) -> str:
    return f"{value:.4f}"


def signed(value: float) -> str:
    return f"{value:+.4f}"
