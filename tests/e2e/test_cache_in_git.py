"""The run's cache in a team's git repository: what a run writes is never something a branch may commit.

Issue 52: `.rag-cache/` was partly committed (the sample's embedding and token packs) and the run wrote
new `.rag-cache/tokens/*.pack` files beside them, untracked on one branch and committed on another, which
blocked `git checkout`. The committed packs live in `.rag-cache/seed/` now, read and never written, and the
cache folder's `.gitignore` ignores everything else."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from sample_project import gate, outcome, sample


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=folder, capture_output=True, text=True, timeout=60, check=True).stdout


def test_the_gate_on_a_checkout_leaves_nothing_a_branch_could_commit(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("needs git")
    folder = tmp_path / "kb"
    folder.mkdir()
    sample(folder)
    git(folder, "init", "-q", "-b", "main")
    git(folder, "add", "-A")
    git(folder, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "sample")
    evalset = folder / "fixtures" / "evalset.jsonl"
    added = {"id": "q-new", "query": "分期付款要多少钱包邮吗", "relevant": []}
    evalset.write_text(evalset.read_text(encoding="utf-8") + json.dumps(added, ensure_ascii=False) + "\n",
                       encoding="utf-8")
    done = gate(folder, "--rag-eval", "-k", "bm25")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "passed" in outcome(done)
    written = sorted((folder / ".rag-cache" / "tokens").rglob("*.pack"))
    assert written, "the new question's tokens are a miss: the run writes a pack"
    assert git(folder, "status", "--porcelain", "-uall").splitlines() == [" M fixtures/evalset.jsonl"]
    committed = git(folder, "ls-files", ".rag-cache").splitlines()
    assert committed and all(path == ".rag-cache/.gitignore" or path.startswith(".rag-cache/seed/")
                             for path in committed), committed
    # the seed is never written: every pack the run wrote is outside it, and ignored
    assert not [path for path in (folder / ".rag-cache" / "seed").rglob("*") if path.relative_to(folder).as_posix()
                not in committed and path.is_file()]
    assert git(folder, "check-ignore", *(str(path.relative_to(folder)) for path in written)).split()
