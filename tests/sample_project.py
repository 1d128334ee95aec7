"""The bundled sample copied into a folder and gated there, in a subprocess as a user runs it: what the
end-to-end tests on the sample share (tests/e2e/test_sample_changes.py, test_sample_labels.py)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def sample(folder: Path) -> Path:
    """The sample as a fresh clone holds it: its cache's committed seed only, never what earlier runs in this
    checkout wrote beside it (reused rankings, kept databases), which would make a test depend on their order."""
    for name in ("pyproject.toml", "fixtures", "baselines", ".rag-cache/seed"):
        source = ROOT / name
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, folder / name)
    return folder


def gate(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-m", "rag_eval", "--rag-db=embedded", "-p", "no:cacheprovider", *args],
        cwd=folder, env=env, capture_output=True, text=True, timeout=300,
    )


def outcome(done: subprocess.CompletedProcess[str]) -> str:
    """pytest's last line, `24 passed, 6 skipped, 1 warning in 7.65s`, without its rule."""
    return done.stdout.strip().splitlines()[-1].strip("= ")


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def write_lines(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
