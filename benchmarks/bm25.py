"""The sparse BM25 index against rank-bm25 on a corpus: equal scores, equal rankings, and speed.

Tokenizes the corpus once through the plugin's token cache (kept in WORK, so a second run reads
it), builds both indexes, and for each of the first N questions compares rank-bm25's
`get_scores` with the sparse index's scores (bit for bit) and the top 10 (ties by position).
Usage: python benchmarks/bm25.py DATA_FOLDER [--queries 100] [--work DIR]
       (DATA_FOLDER holds chunks.jsonl and evalset.jsonl, as benchmarks/scale.py writes them)
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
from rank_bm25 import BM25Okapi

from pytest_ragretrieval.cache.store import Cache
from pytest_ragretrieval.config.settings import cores
from pytest_ragretrieval.retrievers.bm25_index import BM25Index
from pytest_ragretrieval.retrievers.corpus_tokens import cached_tokens, tokenizer_id
from pytest_ragretrieval.retrievers.tokens import tokenizer

K = 10


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("data", type=Path)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--work", type=Path, default=Path(__file__).resolve().parent / ".work" / "bm25-cache")
    args = parser.parse_args()
    rows = sorted((json.loads(line) for line in (args.data / "chunks.jsonl").open(encoding="utf-8")), key=lambda r: r["id"])
    questions = [json.loads(line)["query"] for line in (args.data / "evalset.jsonl").open(encoding="utf-8")]
    namespace = Cache(args.work).namespace("tokens", tokenizer_id("jieba"), dtype="<i4")
    vocabulary, ids = cached_tokens([row["text"] for row in rows], "jieba", namespace, cores())
    corpus = [[vocabulary[i] for i in row.tolist()] for row in ids]
    tokenize = tokenizer("jieba")
    queries = [tokenize(q) for q in questions[: args.queries]]
    started = time.perf_counter()
    index = BM25Index(ids, vocabulary)
    print(f"{len(corpus)} chunks; sparse index built in {time.perf_counter() - started:.2f}s")
    started = time.perf_counter()
    ours = [index.top(q, K) for q in queries]
    per_query = (time.perf_counter() - started) / len(queries)
    started = time.perf_counter()
    okapi = BM25Okapi(corpus)
    print(f"rank-bm25 built in {time.perf_counter() - started:.2f}s")
    took, same_scores, same_top = [], 0, 0
    for query, top in zip(queries, ours, strict=True):
        started = time.perf_counter()
        raw = okapi.get_scores(query)
        ranked = sorted(((i, float(s)) for i, s in enumerate(raw) if s > 0), key=lambda item: (-item[1], item[0]))
        took.append(time.perf_counter() - started)
        same_scores += bool(np.array_equal(index.scores(query), raw))
        same_top += ranked[:K] == top
    reference = statistics.mean(took)
    print(f"per query: sparse top-{K} {per_query * 1000:.2f} ms, rank-bm25 get_scores + sort {reference * 1000:.1f} ms "
          f"(x{reference / per_query:.0f})")
    print(f"scores bit-identical for {same_scores}/{len(queries)} queries, top-{K} identical for {same_top}/{len(queries)}")


if __name__ == "__main__":
    main()
