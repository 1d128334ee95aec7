"""docs/tuning.md's worked example on the bundled sample: after one gate run, a sweep of 24 fusion settings
embeds nothing, starts no database, and prints the page's table; the gate never records a tune question."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CONFIG = "fixtures/tuning.toml"


def _page_block() -> list[str]:
    page = (ROOT / "docs" / "tuning.md").read_text(encoding="utf-8")
    block = page.split("<!-- tune-table:start -->", 1)[1].split("<!-- tune-table:end -->", 1)[0]
    return block.strip().removeprefix("```text").removesuffix("```").strip().splitlines()


def test_the_sample_sweep_reuses_rankings_and_prints_the_documented_table(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "fixtures", tmp_path / "fixtures")
    shutil.copytree(ROOT / ".rag-cache" / "seed", tmp_path / ".rag-cache" / "seed")
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    gate = subprocess.run(
        [sys.executable, "-m", "pytest", "-m", "rag_eval", "--rag-db=embedded", "-p", "no:cacheprovider",
         "--rag-config", CONFIG, "--rag-update-baseline", "--rag-json", "out.json"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert gate.returncode == 0, gate.stdout[-3000:]
    assert "rag: tune split: 37 questions scored apart, never judged nor recorded" in gate.stdout
    results = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    tune = set(results["tune"]["questions"])
    recorded = (tmp_path / "baselines" / "tuning.json").read_text(encoding="utf-8")
    assert len(tune) == 37 and not [qid for qid in tune if f'"{qid}"' in recorded]
    cached = sorted((tmp_path / ".rag-cache").rglob("*"))
    sweep = subprocess.run(
        [sys.executable, "-c", "import sys; from pytest_ragretrieval.cli import main; sys.exit(main())",
         "tune", "hybrid", "--config", CONFIG, "--db", "embedded"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert sweep.returncode == 0, sweep.stderr[-3000:]
    assert sweep.stdout.strip().splitlines() == _page_block()
    phases = next(line for line in sweep.stderr.splitlines() if line.startswith("rag: time:"))
    assert "reused rankings" in phases
    assert not [word for word in ("database start", "seeding", "embedding", "build vector", "build bm25")
                if word in phases]
    assert sorted((tmp_path / ".rag-cache").rglob("*")) == cached  # the sweep leaves the cache as it found it
