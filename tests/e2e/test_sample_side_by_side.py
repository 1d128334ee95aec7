"""The sample's documents version at two chunkings in one session (fixtures/documents/side_by_side.toml):
one A/B table, the pair compared on the span metrics with p-values, and a second run embeds nothing."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
NOTE = ("bm25_512 vs bm25: chunkings 't512' and 'default' differ, so they are compared on span metrics only; "
        "their chunk-id metrics are shown, never compared")
SPAN = ("char_recall@5", "char_precision@5", "char_iou@5", "answer_hit@5")


def gate(copy: Path, results: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "--rag-eval", "-m", "rag_eval",
         "--rag-db=embedded", "--rag-config", "fixtures/documents/side_by_side.toml", "--rag-json", str(results)],
        cwd=copy, env=dict(os.environ, HF_HUB_OFFLINE="1"), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    loaded: dict[str, Any] = json.loads(results.read_text(encoding="utf-8"))
    return done, loaded


def test_two_chunkings_of_the_sample_in_one_table_and_a_second_run_embeds_nothing(tmp_path: Path) -> None:
    """Run twice in a copy (the sample's documents and the committed embeddings; the repository's own cache
    and baseline are never written): the whole-chunk and 512/64-token bm25s share one table, are compared
    on the span metrics with p-values and never on chunk ids; the first run takes every embedding from the
    cache, the second reuses every ranking."""
    shutil.copytree(ROOT / "fixtures" / "documents", tmp_path / "fixtures" / "documents")
    shutil.copytree(ROOT / ".rag-cache" / "seed" / "embeddings", tmp_path / ".rag-cache" / "seed" / "embeddings")
    first, results = gate(tmp_path, tmp_path / "first.json")
    assert set(results["retrievers"]) == {"bm25", "bm25_512", "vector"}
    table = first.stdout[first.stdout.index("retriever  recall@5"):]
    assert [line.split()[0] for line in table.splitlines()[2:5]] == ["bm25", "bm25_512", "vector"]
    compared = {c["metric"]: c for c in results["comparisons"] if (c["a"], c["b"]) == ("bm25_512", "bm25")}
    assert set(compared) == set(SPAN), "chunk-id metrics across chunkings are never compared"
    assert all(0 < c["p_value"] <= 1 and c["wins"] + c["ties"] + c["losses"] == 53 for c in compared.values())
    assert results["pair_notes"] == [NOTE] and NOTE in first.stdout
    assert "215 embeddings from the cache, 0 computed" in first.stdout
    second, again = gate(tmp_path, tmp_path / "second.json")
    assert sorted(again["reused"]) == ["bm25", "bm25_512", "vector"]
    assert "computed" not in second.stdout and "seeded" not in second.stdout
    assert again["comparisons"] == results["comparisons"]
