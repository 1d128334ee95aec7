"""The bar: per retriever x metric, the per-question values the team last approved.

A baseline records the values of its last update; its bar is what a run is judged against. The
two differ only where an update kept the bar: its values passed the gate without raising the
bar by more than the tolerance, so the approved values stay and drops the gate accepted do not
accumulate. The rule, written once for the gate, the update and the pull-request check (the
Verdicts page, "The bar"):

- an update moves the bar only where its values pass against it: a passing item keeps it, an
  item whose mean over the bar's questions rose by more than the tolerance replaces it, and an
  item that fails needs `--rag-allow-regression`, which lowers it to the new values;
- an added question joins the bar with its first values; a removed or edited question leaves it,
  which lowers the bar unless what replaces it scores at least as well (`replacement`).

Pure: per-question values in, per-question values out.
"""
from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Literal

from ..baseline.format import Recorded
from ..core.values import DIGITS, EPSILON, fmt, listed
from ..scoring.metrics import metric_order


def _mean(values: Collection[float]) -> float:
    return math.fsum(values) / len(values) if values else 0.0


@dataclass(frozen=True)
class Replacement:
    """Bar values that leave (`left`: edited or removed questions) and what takes their place, as means."""

    kind: Literal["edited", "removed"]
    """`edited`: the edited questions' new values; `removed`: the added questions' values, or the
    kept questions' bar when none was added."""
    left: tuple[str, ...]
    joined: tuple[str, ...]
    before: float
    after: float

    @property
    def lowers(self) -> bool:
        return self.after < self.before - EPSILON

    def text(self) -> str:
        """`the 12 edited questions: bar 0.8123, their new values 0.6000`."""
        count = len(self.left)
        plural = "s" if count != 1 else ""
        if self.kind == "edited":
            return (f"the {count} edited question{plural} ({listed(self.left, limit=5)}): bar {fmt(self.before)}, "
                    f"their new values {fmt(self.after)}")
        others = (f"the {len(self.joined)} added question{'s' if len(self.joined) != 1 else ''}"
                  if self.joined else "the bar of the questions kept")
        return (f"the {count} removed question{plural} ({listed(self.left, limit=5)}): bar {fmt(self.before)}, "
                f"{others} {fmt(self.after)}")


def replacement(old: Mapping[str, float], new: Mapping[str, float], comparable: Collection[str],
                added: Collection[str] | None = None) -> Replacement | None:
    """The first of the bar's question changes that lowers it, else None.

    `old` is the bar of one metric (question id -> value), `new` the values that replace it (the
    next bar, or the values to be recorded), `comparable` the questions whose id, query and gold
    both sides share. An edited question (held by both, not comparable) lowers the bar when the
    edited questions' mean in `new` is below their mean in `old` by more than EPSILON; removed ones
    (in `old` only) when their mean is above that of the added ones (in `new` only; `added`, when
    given, names them), or of the kept questions' bar when none was added, or 0 when none is kept.
    """
    edited = tuple(sorted(q for q in old if q in new and q not in comparable))
    if edited:
        found = Replacement("edited", edited, edited, _mean([old[q] for q in edited]), _mean([new[q] for q in edited]))
        if found.lowers:
            return found
    removed = tuple(sorted(q for q in old if q not in new))
    if not removed:
        return None
    joined = tuple(sorted(q for q in new if q not in old and (added is None or q in added)))
    kept = [old[q] for q in old if q in new and q in comparable]
    after = _mean([new[q] for q in joined]) if joined else _mean(kept)
    found = Replacement("removed", removed, joined, _mean([old[q] for q in removed]), after)
    return found if found.lowers else None


def kept_bar(old: Mapping[str, float], new: Mapping[str, float], comparable: Collection[str]) -> dict[str, float]:
    """The bar an update keeps, where it differs from `new` (the values recorded): the old bar's value
    of every comparable question both hold; edited and added questions take their new values."""
    return {q: old[q] for q in sorted(new) if q in comparable and q in old and old[q] != new[q]}


def bar_means(
    old: Recorded, new: Recorded, shared: Collection[str] | None
) -> tuple[dict[str, float], dict[str, float]]:
    """Each side's bar, as a mean per metric both hold, at the stored precision: the mean of its stored
    6-digit per-question values on both sides, over the `shared` questions both hold (None: each side
    over all its own, as after a yardstick change). A recorded mean comes from unrounded values and a
    kept bar's from rounded ones, so comparing the two would see a re-record that keeps the bar as a
    1e-6 lowering. Entries that hold no per-question values for a metric are compared by their
    recorded means."""
    before: dict[str, float] = {}
    after: dict[str, float] = {}
    for label in set(old.metrics) & set(new.metrics):
        old_bar, new_bar = old.bar_values(label), new.bar_values(label)
        if shared is None or not (old_bar or new_bar):
            before[label] = _stored_mean(old_bar.values()) if old_bar else old.metrics[label]
            after[label] = _stored_mean(new_bar.values()) if new_bar else new.metrics[label]
            continue
        ids = [q for q in shared if q in old_bar and q in new_bar]
        if ids:
            before[label] = _stored_mean([old_bar[q] for q in ids])
            after[label] = _stored_mean([new_bar[q] for q in ids])
    return before, after


def _stored_mean(values: Collection[float]) -> float:
    """A mean as a file stores one: of the stored values given, rounded to DIGITS."""
    return round(_mean(values), DIGITS)


def replaced_bars(old: Recorded, new: Recorded, comparable: Collection[str]) -> list[tuple[str, Replacement]]:
    """(metric, what lowers its bar) for each metric both entries hold whose question changes lower it."""
    found = ((label, replacement(old.bar_values(label), new.bar_values(label), comparable))
             for label in sorted(set(old.metrics) & set(new.metrics), key=metric_order))
    return [(label, lowered) for label, lowered in found if lowered is not None]
