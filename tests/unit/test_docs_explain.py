"""The explanation the sample's page shows (docs/sample.md, "Why a question missed") is the one `ragretrieval
explain` prints for it today: the command is read from the page, run in the repository on the bundled
sample, and its output must be the page's block, line for line. After an intended change, rewrite the
block with `RAG_UPDATE_GOLDEN=1 pytest tests/unit/test_docs_explain.py` and review the diff."""
from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest

from pytest_ragretrieval.cli import main

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "sample.md"
START, END = "<!-- sample-explain:start -->", "<!-- sample-explain:end -->"
BLOCK = re.compile(r"\A\s*```bash\n(?P<command>[^\n]+)\n```\n+```text\n(?P<output>.*?)```\s*\Z", re.S)


def region() -> tuple[str, str, str]:
    """(the page before the region, the region, the page after it)."""
    text = PAGE.read_text(encoding="utf-8")
    assert text.count(START) == 1 and text.count(END) == 1, f"{PAGE.name} holds the explanation once, marked"
    start, end = text.index(START) + len(START), text.index(END)
    return text[:start], text[start:end], text[end:]


def test_the_sample_page_shows_what_explain_prints(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    before, inside, after = region()
    found = BLOCK.match(inside)
    assert found is not None, "the region is a bash block with one command, then a text block with its output"
    argv = shlex.split(found["command"])
    assert argv[:2] == ["ragretrieval", "explain"]
    monkeypatch.chdir(ROOT)
    assert main(argv[1:]) == 0
    printed = capsys.readouterr().out
    if os.environ.get("RAG_UPDATE_GOLDEN") == "1":
        block = f"\n```bash\n{found['command']}\n```\n\n```text\n{printed}```\n"
        PAGE.write_text(before + block + after, encoding="utf-8")
        return
    assert found["output"] == printed, "docs/sample.md's explanation is stale; rewrite it with RAG_UPDATE_GOLDEN=1"
