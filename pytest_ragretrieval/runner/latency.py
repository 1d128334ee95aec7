"""Latency accounting for nested retriever calls: a query's latency is the time the retriever itself
took plus the latency recorded for every source ranking it read, whether computed just then or
read from the store, where it costs no time but stands for the time it once took."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class Latency:
    """One per store of rankings; a frame per call in progress holds what its source calls took."""

    def __init__(self) -> None:
        self._frames: list[list[float]] = []

    def timed(self, compute: Callable[[], T]) -> tuple[T, float]:
        """Run `compute`; its result and latency in ms: its own time plus its sources' latency.

        The caller's frame (if any) is charged with both, so latency adds up through any depth of
        hybrids and reranks. A call that raises charges nothing.
        """
        self._frames.append([0.0, 0.0])
        started = time.perf_counter()
        try:
            found = compute()
        finally:
            wall = (time.perf_counter() - started) * 1000.0
            inner_wall, inner_latency = self._frames.pop()
        latency = wall - inner_wall + inner_latency
        self._charge(wall, latency)
        return found, latency

    def served(self, latency_ms: float) -> None:
        """A ranking read from the store: no time now, but the caller's query stands on its recorded latency."""
        self._charge(0.0, latency_ms)

    def _charge(self, wall_ms: float, latency_ms: float) -> None:
        if self._frames:
            self._frames[-1][0] += wall_ms
            self._frames[-1][1] += latency_ms
