"""The old texts of edited documents are read with one git call each, under one total budget: past it, none
are read and their places are lost, as without git (docs/verdicts.md, "A chunker change")."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_ragretrieval.glue import trust


def _repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not on PATH")
    kb = tmp_path / "kb"
    kb.mkdir()
    for name in ("a.md", "b.md"):
        (kb / name).write_text(f"Text of {name}.\n", encoding="utf-8")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.email=t@example.com", "-c", "user.name=t",
                                                  "commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)
    return kb


def test_the_old_texts_are_read_within_the_budget(tmp_path: Path) -> None:
    kb = _repo(tmp_path)
    assert trust._documents_at(kb, "HEAD") == {"a.md": "Text of a.md.\n", "b.md": "Text of b.md.\n"}


def test_past_the_budget_none_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kb = _repo(tmp_path)
    monkeypatch.setattr(trust, "OLD_TEXTS_BUDGET", 0.0)
    assert trust._documents_at(kb, "HEAD") == {}
