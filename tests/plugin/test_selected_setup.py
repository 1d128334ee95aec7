"""Only what runs is set up, built or imported: `-k bm25` contacts no embedder, a change of the fusion
alone runs the fusion alone, and a fully reused run imports no scipy."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from projects import RUN, retriever, write_project

COUNTING_EMBEDDER = '''
from pathlib import Path


def embed(texts):
    with (Path(__file__).parent / "embedded.txt").open("a", encoding="utf-8") as calls:
        calls.write(f"{len(texts)}\\n")
    return [[1.0, float(len(text))] for text in texts]
'''
PYTHON_EMBEDDER = 'embedding = "python:embedder:embed"\nembedding_id = "lengths"'
FUSION = (retriever("bm25", "bm25") + retriever("bm25_b", "bm25", k1=0.9, b=0.4)
          + retriever("hybrid", "hybrid", sources=["bm25", "bm25_b"], depth=4, rrf_k=60))
READER = '''
def make(ctx):
    hybrid = ctx.retriever("hybrid")
    return lambda question, k: list(hybrid.ask(question, k))[::-1]
'''
IMPORTS = '''
import json
import sys
from pathlib import Path


def pytest_unconfigure(config):
    wanted = ("scipy", "pytest_ragretrieval.retrievers.bm25_index")
    Path("imported.json").write_text(json.dumps([name for name in wanted if name in sys.modules]))
'''


def results(folder: Path, name: str = "out.json") -> dict[str, Any]:
    found: dict[str, Any] = json.loads((folder / name).read_text(encoding="utf-8"))
    return found


@pytest.mark.parametrize("embedding", [PYTHON_EMBEDDER, 'embedding = "openai:text-embedding-3-small"\n'
                                       'embedding_base_url = "http://127.0.0.1:9/v1"'])
def test_a_run_of_bm25_alone_contacts_no_embedder(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                                  embedding: str) -> None:
    """On 571473c, `-k bm25` on a cold cache built every configured retriever's fingerprint for the reuse
    key and the judge: the vector retriever's embedded a chunk to learn the dimension, calling the user's
    function (or an `openai:` server, here a closed port, waited for up to its timeout)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    write_project(pytester.path, retrievers=retriever("vector", "vector") + retriever("bm25", "bm25"),
                  settings=embedding)
    (pytester.path / "embedder.py").write_text(COUNTING_EMBEDDER, encoding="utf-8")
    done = pytester.runpytest("--rag-update-baseline", "-k", "bm25", "--rag-json", "out.json", *RUN)
    assert done.ret == 0, done.stdout.str()
    assert not (pytester.path / "embedded.txt").exists()
    assert "embedding" not in " ".join(results(pytester.path)["phases"])
    assert set(results(pytester.path)["fingerprint"]["retrievers"]) == {"bm25"}
    again = pytester.runpytest("--rag-eval", "-k", "bm25", *RUN)  # reused, and judged against that baseline
    assert again.ret == 0 and not (pytester.path / "embedded.txt").exists()


def test_a_fusion_only_change_runs_the_fusion_alone(pytester: pytest.Pytester) -> None:
    """On 571473c, changing hybrid's `rrf_k` alone ran both its sources again (building their indexes,
    and for a vector source starting and seeding the database) though their cached runs were unchanged:
    only the top `depth` of their rankings were kept, too shallow for the fusion's depth."""
    write_project(pytester.path, retrievers=FUSION)
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    write_project(pytester.path, retrievers=FUSION.replace("rrf_k = 60", "rrf_k = 1"))
    changed = pytester.runpytest("--rag-update-baseline", "--rag-allow-regression", "--rag-json", "out.json", *RUN)
    assert changed.ret == 0, changed.stdout.str()
    changed.stdout.fnmatch_lines(["rag: bm25: rankings reused for hybrid, every input of bm25 unchanged*"])
    phases = results(pytester.path)["phases"]
    assert "run hybrid" in phases and not any(name.endswith(("bm25", "bm25_b")) for name in phases)
    measured = pytester.runpytest("--rag-eval", "--rag-no-reuse", "--rag-json",
                                  "measured.json", *RUN)
    assert measured.ret == 0
    fused, again = results(pytester.path)["retrievers"]["hybrid"], results(pytester.path, "measured.json")
    assert fused["questions"] == again["retrievers"]["hybrid"]["questions"]  # rankings and values alike


def test_a_reused_run_imports_no_index(pytester: pytest.Pytester) -> None:
    """On 571473c, a run whose every input was unchanged still built what a non-reusable retriever read
    (the sample's reranker reads hybrid, which reads bm25): the BM25 index and scipy.sparse were imported
    (0.45 s of a 1.33 s run), and a vector source started the database. Checked in a fresh interpreter."""
    reader = retriever("reader", "python", factory="reader:make", signature="question", sources=["hybrid"])
    write_project(pytester.path, retrievers=FUSION + reader)
    (pytester.path / "reader.py").write_text(READER, encoding="utf-8")
    assert pytester.runpytest_subprocess("--rag-update-baseline", *RUN).ret == 0
    (pytester.path / "conftest.py").write_text(IMPORTS, encoding="utf-8")
    done = pytester.runpytest_subprocess("--rag-eval", *RUN)
    assert done.ret == 0, done.stdout.str()
    assert json.loads((pytester.path / "imported.json").read_text(encoding="utf-8")) == []
    done.stdout.fnmatch_lines(["rag: hybrid: rankings reused for reader, every input of hybrid unchanged*"])
