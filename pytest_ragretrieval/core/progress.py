"""Progress for long steps: a bar redrawn in place on a terminal; otherwise (CI logs) a line
every `every` seconds while the step runs, and one when it ends."""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol


class Output(Protocol):
    isatty: bool

    def line(self, text: str) -> None: ...

    def rewrite(self, text: str) -> None: ...


@dataclass
class PlainOutput:
    """Collects lines; the default when nobody watches (unit tests, code run outside pytest)."""

    isatty: bool = False
    lines: list[str] = field(default_factory=list)

    def line(self, text: str) -> None:
        self.lines.append(text)

    def rewrite(self, text: str) -> None:
        pass


@dataclass
class CallbackOutput:
    """Adapts two callables, such as pytest's terminal reporter `write_line` and `rewrite`."""

    write: Callable[[str], None]
    redraw: Callable[[str], None]
    isatty: bool

    def line(self, text: str) -> None:
        self.write(text)

    def rewrite(self, text: str) -> None:
        self.redraw(text)


BAR = 24


class Progress:
    """`with Progress(out, "embedding corpus", 212) as bar: bar.advance(n)`; the final line gives the time."""

    every = 5.0
    """Seconds between the lines written while a step runs, when there is no terminal."""

    def __init__(self, out: Output, label: str, total: int, quiet: bool = False) -> None:
        self.out = out
        self.label = label
        self.total = total
        self.quiet = quiet
        """Only heartbeats (`waiting`): a step too short to report, which may still hang."""
        self.done = 0
        self.note = ""
        self.started = time.perf_counter()
        self.seconds = 0.0
        self._shown = self.started
        self._drawn = False

    def advance(self, count: int = 1) -> None:
        self.done += count
        if self.quiet:
            return
        if self.out.isatty and self.total:
            filled = BAR * min(self.done, self.total) // self.total
            self.out.rewrite(f"rag: {self.label} [{'#' * filled}{'.' * (BAR - filled)}] {self.done}/{self.total}")
        elif not self.out.isatty and self.done < self.total:
            now = time.perf_counter()
            if now - self._shown >= self.every:
                self._shown = now
                self.out.line(f"rag: {self.label}: {self.done}/{self.total} after {now - self.started:.0f}s")

    def waiting(self, text: str) -> None:
        """A heartbeat while nothing advances (a request that hangs): in the bar on a terminal,
        otherwise a line every `every` seconds, so a CI log never goes silent."""
        now = time.perf_counter()
        if self.out.isatty:
            self._drawn = True
            self.out.rewrite(f"rag: {self.label} {self.done}/{self.total} ({text})")
        elif now - self._shown >= self.every:
            self._shown = now
            self.out.line(f"rag: {self.label}: {self.done}/{self.total}, {text}")

    def line(self, text: str) -> None:
        """A line of its own while the step runs; on a terminal the bar is cleared first (the next advance draws it)."""
        if self.out.isatty:
            self.out.rewrite("")
        self.out.line(text)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.started
        if self.quiet:
            if self._drawn:
                self.out.rewrite("")
            return
        if self.out.isatty:
            self.out.rewrite("")
        note = f" ({self.note})" if self.note else ""
        status = "stopped after" if exc[0] is not None else "in"
        self.out.line(f"rag: {self.label}: {self.done}/{self.total}{note} {status} {self.seconds:.2f}s")
