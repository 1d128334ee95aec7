"""Progress: a bar redrawn in place on a terminal; otherwise a line every few seconds and one at the end."""
from __future__ import annotations

import pytest

from pytest_ragretrieval.core.progress import PlainOutput, Progress


class Terminal(PlainOutput):
    def __init__(self) -> None:
        super().__init__(isatty=True)
        self.redraws: list[str] = []

    def rewrite(self, text: str) -> None:
        self.redraws.append(text)


def test_off_a_terminal_each_step_is_one_line() -> None:
    out = PlainOutput()
    with Progress(out, "embedding corpus", 4) as bar:
        bar.note = "2 cached"
        bar.advance(2)
        bar.advance(2)
    assert len(out.lines) == 1
    assert out.lines[0].startswith("rag: embedding corpus: 4/4 (2 cached) in ") and out.lines[0].endswith("s")


def test_on_a_terminal_the_bar_is_redrawn_then_cleared() -> None:
    out = Terminal()
    with Progress(out, "bm25 over 4 questions", 4) as bar:
        for _ in range(4):
            bar.advance()
    assert out.redraws[0] == "rag: bm25 over 4 questions [######..................] 1/4"
    assert out.redraws[3] == "rag: bm25 over 4 questions [########################] 4/4"
    assert out.redraws[-1] == ""
    assert len(out.lines) == 1


def test_a_failing_step_says_where_it_stopped() -> None:
    out = PlainOutput()
    with pytest.raises(RuntimeError):
        with Progress(out, "rerank over 9 questions", 9) as bar:
            bar.advance(3)
            raise RuntimeError("model gone")
    assert out.lines[0].startswith("rag: rerank over 9 questions: 3/9 stopped after ")


def test_off_a_terminal_a_long_step_writes_a_line_every_few_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([0.0, 1.0, 6.0, 7.0, 13.0, 14.0])  # the start, four advances, the end
    monkeypatch.setattr("pytest_ragretrieval.core.progress.time.perf_counter", lambda: next(clock))
    out = PlainOutput()
    with Progress(out, "embedding corpus", 5) as bar:  # starts at 0
        bar.advance()  # 1 s: too soon
        bar.advance()  # 6 s: a line (5 s since the start)
        bar.advance()  # 7 s: too soon after the last line
        bar.advance()  # 13 s: a line
        bar.advance()  # done: no line while running; the final line at 14 s
    assert out.lines == [
        "rag: embedding corpus: 2/5 after 6s",
        "rag: embedding corpus: 4/5 after 13s",
        "rag: embedding corpus: 5/5 in 14.00s",
    ]
