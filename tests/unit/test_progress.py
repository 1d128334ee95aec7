"""Progress: a bar redrawn in place on a terminal, one final line per step otherwise."""
from __future__ import annotations

import pytest

from pytest_ragretrieval.progress import PlainOutput, Progress


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
