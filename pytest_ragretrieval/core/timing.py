"""Where a run's time goes: named phases, each timed without the phases nested inside it.

The database starts inside the first vector retriever's build, and a source may run inside a
hybrid's; counting a nested phase only once keeps the phases summing to the time they cover.
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


class Phases:
    """`with phases.phase("seeding"): ...`; `seconds` holds each phase's own time, in order of first start."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._nested: list[float] = []

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        self._nested.append(0.0)
        self.seconds.setdefault(name, 0.0)
        try:
            yield
        finally:
            elapsed = time.perf_counter() - started
            inner = self._nested.pop()
            self.seconds[name] += elapsed - inner
            if self._nested:
                self._nested[-1] += elapsed

    def rounded(self) -> dict[str, float]:
        """Seconds per phase to the millisecond, as reports carry them."""
        return {name: round(seconds, 3) for name, seconds in self.seconds.items()}

    def line(self) -> str:
        parts = [f"{name} {seconds:.2f}s" for name, seconds in self.seconds.items()]
        return f"rag: time: {', '.join(parts)}; total {sum(self.seconds.values()):.2f}s"
