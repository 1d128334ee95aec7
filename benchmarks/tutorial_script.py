"""The tutorial's eval_retrieval.py as written, on a synthetic corpus and an embedded pgserver.

Plainly, like the tutorial: the corpus goes in with one INSERT per row, every vector query
opens its own connection, BM25 is rank-bm25's `get_scores` followed by a full sort, and hybrid
calls both retrievers again. Only what a benchmark needs differs from the tutorial's text: the
embedder is `corpus.embed` (the cheap deterministic one the gate uses too), the database is a
throwaway pgserver, the eval set is read from the corpus folder, and Hybrid+Rerank is left out
(no cross-encoder here; its model time would swamp everything else). `--configs` can add a
plain `bm25` row, which the tutorial does not have.

Usage: python tutorial_script.py DATA_FOLDER [--configs vector,hybrid] [--json OUT]
Prints the tutorial's table and, with --json, writes metrics and phase times.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import jieba  # noqa: E402
import pgserver  # noqa: E402
import psycopg  # noqa: E402
from rank_bm25 import BM25Okapi  # noqa: E402

from corpus import DIMENSIONS, embed  # noqa: E402

K = 5


def tokenize(text: str) -> list[str]:
    return [t.lower() for t in jieba.cut(text) if t.strip()]


def precision_at_k(retrieved: list[int], relevant: set[int], k: int) -> float:
    hits = sum(1 for cid in retrieved[:k] if cid in relevant)
    return hits / k


def recall_at_k(retrieved: list[int], relevant: set[int], k: int) -> float:
    hits = sum(1 for cid in retrieved[:k] if cid in relevant)
    return hits / len(relevant)


def f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


def ndcg_at_k(retrieved: list[int], relevant: set[int], k: int) -> float:
    dcg = sum(1 / math.log2(rank + 1) for rank, cid in enumerate(retrieved[:k], start=1) if cid in relevant)
    ideal = sum(1 / math.log2(rank + 1) for rank in range(1, min(len(relevant), k) + 1))
    return dcg / ideal if ideal else 0.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("data", type=Path)
    parser.add_argument("--configs", default="vector,hybrid")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    phases: dict[str, float] = {}
    started = time.perf_counter()

    def phase(name: str, since: float) -> float:
        now = time.perf_counter()
        phases[name] = round(now - since, 3)
        return now

    rows = [json.loads(line) for line in (args.data / "chunks.jsonl").open(encoding="utf-8")]
    questions = [json.loads(line) for line in (args.data / "evalset.jsonl").open(encoding="utf-8")]
    with tempfile.TemporaryDirectory(prefix="tutorial-pg-") as folder:
        server = pgserver.get_server(Path(folder) / "data", cleanup_mode="delete")
        CONN = server.get_uri()
        t = phase("database start", started)

        # Week 14's ingestion, plainly: embed, then one INSERT per chunk.
        vectors = embed([row["text"] for row in rows])
        t = phase("embedding corpus", t)
        with psycopg.connect(CONN) as conn, conn.cursor() as cur:
            cur.execute("CREATE EXTENSION IF NOT EXISTS vector")
            cur.execute(f"CREATE TABLE documents (id bigserial PRIMARY KEY, chunk text, embedding vector({DIMENSIONS}))")
            for row, vector in zip(rows, vectors):
                vec = "[" + ",".join(str(float(x)) for x in vector) + "]"
                cur.execute("INSERT INTO documents (chunk, embedding) VALUES (%s, %s::vector)", (row["text"], vec))
        t = phase("row INSERTs", t)

        # Step 1 of eval_retrieval.py.
        with psycopg.connect(CONN) as conn, conn.cursor() as cur:
            cur.execute("SELECT chunk FROM documents")
            chunks = [r[0] for r in cur.fetchall()]
        text_to_id = {c: i for i, c in enumerate(chunks)}
        bm25 = BM25Okapi([tokenize(c) for c in chunks])
        t = phase("load, tokenize, BM25 index", t)
        by_chunk_id = {row["id"]: text_to_id[row["text"]] for row in rows}
        EVAL = [{"query": q["query"], "relevant": {by_chunk_id[c] for c in q["relevant"]}} for q in questions]

        def embed_query(query: str) -> list[float]:
            return [float(x) for x in embed([query])[0]]

        def vector_ids(query: str, k: int = 5) -> list[int]:
            vec = "[" + ",".join(str(x) for x in embed_query(query)) + "]"
            sql = "SELECT chunk FROM documents ORDER BY embedding <=> %(vec)s::vector LIMIT %(k)s;"
            with psycopg.connect(CONN) as conn, conn.cursor() as cur:
                cur.execute(sql, {"vec": vec, "k": k})
                return [text_to_id[r[0]] for r in cur.fetchall()]

        def bm25_ids(query: str, k: int = 5) -> list[int]:
            scores = bm25.get_scores(tokenize(query))
            ranked = sorted(range(len(chunks)), key=lambda i: scores[i], reverse=True)
            return ranked[:k]

        def rrf_ids(rankings: list[list[int]], k: int = 60) -> list[int]:
            scores: dict[int, float] = {}
            for ranking in rankings:
                for rank, cid in enumerate(ranking, start=1):
                    scores[cid] = scores.get(cid, 0.0) + 1.0 / (k + rank)
            return [cid for cid, _ in sorted(scores.items(), key=lambda kv: kv[1], reverse=True)]

        def hybrid_ids(query: str, k: int = 5) -> list[int]:
            return rrf_ids([vector_ids(query, k=10), bm25_ids(query, k=10)])[:k]

        CONFIGS = {"vector": vector_ids, "bm25": bm25_ids, "hybrid": hybrid_ids}
        metrics: dict[str, dict[str, float]] = {}
        print(f"{'config':<16}{'P@5':>8}{'R@5':>8}{'F1':>8}{'nDCG@5':>10}")
        for name in args.configs.split(","):
            fn = CONFIGS[name]
            ps, rs, fs, ns = [], [], [], []
            for case in EVAL:
                got = fn(case["query"], k=5)
                p = precision_at_k(got, case["relevant"], 5)
                r = recall_at_k(got, case["relevant"], 5)
                ps.append(p); rs.append(r); fs.append(f1(p, r))
                ns.append(ndcg_at_k(got, case["relevant"], 5))
            avg = lambda xs: sum(xs) / len(xs)  # noqa: E731
            metrics[name] = {"precision@5": avg(ps), "recall@5": avg(rs), "f1@5": avg(fs), "ndcg@5": avg(ns)}
            print(f"{name:<16}{avg(ps):>8.2f}{avg(rs):>8.2f}{avg(fs):>8.2f}{avg(ns):>10.2f}")
            t = phase(f"run {name}", t)
        server.cleanup()
    phase("total", started)
    print("phases:", ", ".join(f"{k} {v:.2f}s" for k, v in phases.items()))
    if args.json:
        args.json.write_text(json.dumps({"metrics": metrics, "phases": phases}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
