"""Chunkings side by side on the embedded database: a vector retriever on each chunking, each chunking
seeded once; a second run reuses every ranking, so it embeds nothing and starts no database."""
from __future__ import annotations

import json

import pytest
from projects import RUN

DOCUMENTS = {
    "laptop.txt": "A lost laptop must be reported to IT within two hours. IT then locks the device remotely. "
                  "Cloud desktop login failures are fixed by restarting the client.",
    "refunds.txt": "Refunds are paid back within three working days after approval. Rejected claims can be "
                   "appealed once.",
}
QUESTIONS = [
    {"id": "laptop", "query": "lost laptop reported IT hours", "relevant_text": ["reported to IT within two hours"]},
    {"id": "refund", "query": "refunds paid back working days", "relevant_text": ["three working days"]},
]
HASH_EMBEDDER = '''
import hashlib


def embed(texts):
    return [[b / 255.0 + 0.01 for b in hashlib.sha256(t.encode("utf-8")).digest()[:8]] for t in texts]
'''
CONFIG = """
[tool.ragretrieval]
documents = "docs.jsonl"
evalset = "evalset.jsonl"
k = 2
db = "embedded"
cache = "cache"
embedding = "python:hash_embedder:embed"
embedding_id = "test:hash"
metrics = ["recall", "char_recall"]

[tool.ragretrieval.chunker]
type = "sentences"
size = 1

[tool.ragretrieval.chunkings.big]
type = "sentences"
size = 3

[tool.ragretrieval.retrievers.vector_small]
type = "vector"

[tool.ragretrieval.retrievers.vector_big]
type = "vector"
chunking = "big"
"""


@pytest.mark.slow
def test_each_chunking_seeded_once_and_a_second_run_reuses_all(pytester: pytest.Pytester) -> None:
    """Before `Runner.keep_again`, the big chunking's embedding added a pack to the embedding cache that
    vector_small's cached key did not name, so the second run ran vector_small again."""
    (pytester.path / "docs.jsonl").write_text(
        "\n".join(json.dumps({"id": doc, "text": text}) for doc, text in DOCUMENTS.items()), encoding="utf-8")
    (pytester.path / "evalset.jsonl").write_text("\n".join(json.dumps(q) for q in QUESTIONS), encoding="utf-8")
    (pytester.path / "hash_embedder.py").write_text(HASH_EMBEDDER, encoding="utf-8")
    (pytester.path / "pyproject.toml").write_text(CONFIG, encoding="utf-8")
    first = pytester.runpytest("--rag-update-baseline", *RUN)
    assert first.ret == 0, first.stdout.str()
    first.stdout.fnmatch_lines(["rag: seeded 5 chunks (8 dimensions, *", "rag: seeded 2 chunks (8 dimensions, *"],
                               consecutive=False)
    second = pytester.runpytest("--rag-eval", *RUN)
    assert second.ret == 0, second.stdout.str()
    second.stdout.fnmatch_lines(["rag: vector_small: rankings reused*", "rag: vector_big: rankings reused*"])
    started = [line for line in second.stdout.lines
               if line.startswith(("rag: embedding corpus", "rag: database embedded", "rag: seeded"))]
    assert started == []
