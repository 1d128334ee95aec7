"""The judge's note on drops older than this change: entries whose last update was already below the bar."""
from __future__ import annotations

from typing import Protocol

from ..config.settings import Config
from ..core.values import fmt, signed
from ..record.types import Comparison
from .checks import older_text


class Comparing(Protocol):
    """What the note reads of the judge (`gate/judge.py`, which imports this module)."""

    config: Config

    def comparison(self, name: str, label: str) -> Comparison | None: ...


def older_notes(judge: Comparing) -> list[str]:
    """One line per retriever whose last update was already below its bar (accepted within the tolerance),
    from what the file holds: a drop there is older than this change (today's exam)."""
    found = []
    for spec in judge.config.retrievers:
        held = [f"{metric.label} recorded {fmt(c.last_update or 0.0)}, approved {fmt(c.baseline or 0.0)}, this "
                f"change moved it by {signed(c.value - (c.last_update or 0.0))}"
                for metric in judge.config.metrics
                if (c := judge.comparison(spec.name, metric.label)) is not None and older_text(c)]
        if held:
            found.append(f"{spec.name} was already below the bar at the last update: " + "; ".join(held))
    return found
