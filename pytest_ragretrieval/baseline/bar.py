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

from ..core.values import EPSILON, fmt
from ..scoring.metrics import metric_order
from .format import Recorded


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
            return (f"the {count} edited question{plural} ({_listed(self.left)}): bar {fmt(self.before)}, "
                    f"their new values {fmt(self.after)}")
        others = (f"the {len(self.joined)} added question{'s' if len(self.joined) != 1 else ''}"
                  if self.joined else "the bar of the questions kept")
        return (f"the {count} removed question{plural} ({_listed(self.left)}): bar {fmt(self.before)}, "
                f"{others} {fmt(self.after)}")


def _listed(ids: tuple[str, ...], shown: int = 5) -> str:
    return ", ".join(ids[:shown]) + (f", ... and {len(ids) - shown} more" if len(ids) > shown else "")


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


def replaced_bars(old: Recorded, new: Recorded, comparable: Collection[str]) -> list[tuple[str, Replacement]]:
    """(metric, what lowers its bar) for each metric both entries hold whose question changes lower it."""
    found = ((label, replacement(old.bar_values(label), new.bar_values(label), comparable))
             for label in sorted(set(old.metrics) & set(new.metrics), key=metric_order))
    return [(label, lowered) for label, lowered in found if lowered is not None]
