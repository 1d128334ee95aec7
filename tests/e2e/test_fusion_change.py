"""Issue 40, item 13, on the bundled sample: a change of the fusion alone, in a clone with the cache, runs
the fusion alone from its sources' cached rankings and starts no database."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from sample_project import gate, sample

pytestmark = pytest.mark.slow


def test_a_fusion_only_change_starts_no_database(tmp_path: Path) -> None:
    """On 571473c, changing hybrid's `rrf_k` alone ran vector and bm25 again and, in a clone with the
    committed cache (rankings and vectors, no kept database), started and seeded the database: 8-10 s
    against 1.3-1.6 s for no change at 20,000 chunks."""
    folder = sample(tmp_path)
    first = gate(folder, "--rag-eval")  # writes the rankings' entries, as a first run in a clone does
    assert first.returncode == 0, first.stdout[-3000:]
    shutil.rmtree(folder / ".rag-cache" / "databases", ignore_errors=True)
    settings = folder / "pyproject.toml"
    text = settings.read_text(encoding="utf-8")
    assert "rrf_k = 60" in text
    settings.write_text(text.replace("rrf_k = 60", "rrf_k = 61"), encoding="utf-8")
    changed = gate(folder, "--rag-eval", "--rag-json", "changed.json")
    assert changed.returncode == 0, changed.stdout[-3000:]
    assert "rag: vector: rankings reused for hybrid, every input of vector unchanged since its cached run" in (
        changed.stdout.splitlines())
    results = json.loads((folder / "changed.json").read_text(encoding="utf-8"))
    assert "run hybrid" in results["phases"]
    assert not {"database start", "seeding", "build vector", "build bm25", "embedding corpus"} & set(results["phases"])
    measured = gate(folder, "--rag-eval", "--rag-no-reuse", "--rag-json", "measured.json")
    assert measured.returncode == 0, measured.stdout[-3000:]
    again = json.loads((folder / "measured.json").read_text(encoding="utf-8"))
    assert "database start" in again["phases"]
    assert results["retrievers"]["hybrid"]["questions"] == again["retrievers"]["hybrid"]["questions"]
