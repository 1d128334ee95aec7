"""The README's adoption example, pasted verbatim, runs: its config and the `mine` factory on the sample."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def block(lang: str, holding: str) -> str:
    (found,) = [b for b in re.findall(rf"^```{lang}\n(.*?)^```$", README, re.S | re.M) if holding in b]
    return found


@pytest.mark.slow
def test_the_readme_config_and_its_factory_run_on_the_sample(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "fixtures", tmp_path / "fixtures")
    shutil.copytree(ROOT / ".rag-cache", tmp_path / ".rag-cache")
    (tmp_path / "pyproject.toml").write_text(block("toml", "[tool.ragretrieval]"), encoding="utf-8")
    (tmp_path / "myapp").mkdir()
    (tmp_path / "myapp" / "eval.py").write_text(block("python", "def make_retriever"), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--rag-update-baseline", "-m", "rag_eval", "--rag-db=embedded",
         "-p", "no:cacheprovider", "-p", "no:randomly"],
        cwd=tmp_path, env=dict(os.environ, HF_HUB_OFFLINE="1"), capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    recorded = json.loads((tmp_path / "baselines" / "retrieval.json").read_text(encoding="utf-8"))
    assert set(recorded["retrievers"]) == {"bm25", "vector", "hybrid", "mine"}
    mine = recorded["retrievers"]["mine"]
    # The router sends questions with digits to bm25 and the rest to vector search in SQL.
    digits = [q for q, entry in mine["questions"].items() if entry["ranking"] == recorded["retrievers"]["bm25"]["questions"][q]["ranking"]]
    assert digits and mine["metrics"]["recall@5"] > recorded["retrievers"]["bm25"]["metrics"]["recall@5"]
    assert recorded["fingerprint"]["retrievers"]["mine"]["reads"]["bm25"]["type"] == "bm25"
