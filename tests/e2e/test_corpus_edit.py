"""A corpus edit through the gate: the exact vector search ranks from its cached rankings and the changed
chunks, and the results are a `--rag-no-reuse` run's, byte for byte but the timings."""
from __future__ import annotations

import json
import random
from typing import Any

import pytest
from projects import RUN, jsonl, retriever, toml_string, without_timings, write_project

EMBEDDER = '''
import hashlib

import numpy as np


def embed(texts):
    """Character bigrams hashed into 16 signed buckets: few directions, so many exact and near ties."""
    out = np.zeros((len(texts), 16), dtype=np.float32)
    for row, text in enumerate(texts):
        for pair in zip(text, text[1:] + " "):
            digest = int.from_bytes(hashlib.md5("".join(pair).encode()).digest()[:4], "little")
            out[row, digest % 16] += 1.0 if digest >> 31 else -1.0
    return out
'''
WORDS = "退款 审核 发票 报销 差旅 住宿 出租车 笔记本 电脑 密码 账号 权限 合同 付款 预算 会议".split()
RETRIEVERS = (retriever("vector", "vector") + retriever("bm25", "bm25")
              + retriever("hybrid", "hybrid", sources=["vector", "bm25"], depth=10))


def corpus() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rng = random.Random(52)
    chunks: list[dict[str, Any]] = [{"id": f"c{i:03d}", "text": "".join(rng.choices(WORDS, k=rng.randint(3, 8)))} for i in range(80)]
    chunks += [{"id": "c080", "text": chunks[5]["text"]}, {"id": "c081", "text": chunks[5]["text"]}]  # exact ties
    questions: list[dict[str, Any]] = []
    for number, chunk in enumerate(rng.sample(chunks, 24)):
        text = str(chunk["text"])
        start = rng.randrange(max(1, len(text) - 4))
        questions.append({"id": f"q{number:02d}", "query": text[start:start + 4], "relevant": [chunk["id"]]})
    return chunks, questions


def test_an_edited_corpus_ranks_as_a_full_search(pytester: pytest.Pytester) -> None:
    chunks, questions = corpus()
    settings = "\n".join(['db = "embedded"', 'cache = "cache"', 'embedding = "python:embedder:embed"',
                          f"embedding_id = {toml_string('bigrams-16')}", "keep_database = false"])
    (pytester.path / "embedder.py").write_text(EMBEDDER, encoding="utf-8")
    write_project(pytester.path, retrievers=RETRIEVERS, settings=settings, chunks=chunks, questions=questions)
    first = pytester.runpytest("--rag-update-baseline", "--rag-json", "first.json", *RUN)
    assert first.ret == 0, first.stdout.str()[-3000:]
    before = json.loads((pytester.path / "first.json").read_text(encoding="utf-8"))
    cached = {qid: q["ranking"] for qid, q in before["retrievers"]["vector"]["questions"].items()}
    top = cached["q00"]
    edited = [dict(chunk) for chunk in chunks if chunk["id"] != top[1]]  # a removed chunk of q00's top k
    by_id = {chunk["id"]: chunk for chunk in edited}
    by_id[top[0]]["text"] = "会议会议会议"  # out of q00's top k
    outside = next(chunk for chunk in edited if chunk["id"] not in top)
    outside["text"] = questions[0]["query"]  # into it: the query itself
    by_id["c010"]["text"] = str(by_id["c010"]["text"]) + "（已修订）"
    edited.append({"id": "c999", "text": by_id["c020"]["text"]})  # added: a tie with an unedited chunk
    (pytester.path / "fixtures" / "chunks.jsonl").write_text(jsonl(edited), encoding="utf-8")

    narrowed = pytester.runpytest("--rag-eval", "--rag-json", "narrowed.json", *RUN)
    assert narrowed.ret == 1, narrowed.stdout.str()[-3000:]  # the edit lowers the metrics: the gate fails
    narrowed.stdout.fnmatch_lines(["rag: vector: * of 24 questions ranked from their cached rankings and the chunks "
                                   "changed since (exact search: the same rankings as a full search; --rag-no-reuse "
                                   "searches in full)"])
    full = pytester.runpytest("--rag-eval", "--rag-no-reuse", "--rag-json", "full.json", *RUN)
    assert full.ret == 1, full.stdout.str()[-3000:]
    full.stdout.no_fnmatch_line("rag: vector: * ranked from their cached rankings*")
    found, expected = without_timings(pytester.path / "narrowed.json"), without_timings(pytester.path / "full.json")
    assert found == expected
    after = {qid: q["ranking"] for qid, q in found["retrievers"]["vector"]["questions"].items()}
    assert top[1] not in after["q00"] and top[0] not in after["q00"] and outside["id"] in after["q00"]
    assert after != cached
