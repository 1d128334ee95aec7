"""The gate at a million chunks (HNSW) and at 200,000 chunks of 1,536 dimensions (exact search).

Sizes: `1m` is 1,000,000 chunks x 10,000 questions, 384-d (e5-small's size), `index = "hnsw"`;
`200k` is 200,000 x 1,000, 1,536-d (the most common hosted model's size), exact search; `20k`
(20,000 x 500, 384-d, hnsw) is the smoke run. The corpus has topics (`corpus.stream_topical`,
seeded, streamed to disk) and the embedder is a hashed bag of characters (`corpus.embed_384`,
`embed_1536`) behind the `python:` kind, so model time is small and the same on every machine.

Steps (`--only`, in this order, each merged into `results/million-<size>.json`):
- `cold`: the gate with no cache folder, recording the baseline (`--rag-update-baseline`);
- `warm`: the gate again on what the cold run left (`--rag-eval`);
- `exact`: for a sample of questions, the time of pgvector's full scan (`ORDER BY distance, id`,
  which no index serves), of the gate's exact path (numpy's candidates, then pgvector ranks
  those) and, with hnsw, of the index at several `ef_search`, with its recall against the
  full scan, on a copy of the gate's kept seeded database when there is one, else on a
  server this script seeds itself (the index build is then timed too).

Each gate run is its own child process. A sampler thread reads /proc every `--interval` seconds:
the RSS and PSS summed over the whole process tree, Postgres included (this script makes itself
the child subreaper, so the daemonised postmaster and its backends stay in its tree). The
pytest process's own peak RSS is ru_maxrss from wait4. Phase times come from --rag-json.

Usage: python benchmarks/million.py --size 20k|200k|1m [--only cold,warm,exact] [--work DIR]
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpus import hashed, stream_topical  # noqa: E402

SIZES: dict[str, tuple[int, int, int, str]] = {
    "20k": (20_000, 500, 384, "hnsw"),
    "200k": (200_000, 1_000, 1_536, "exact"),
    "1m": (1_000_000, 10_000, 384, "hnsw"),
}
K = 10
EF_SEARCH = (40, 100, 200, 400)
HNSW = {"m": 16, "ef_construction": 64, "ef_search": 40}
PYPROJECT = """# Its own pytest rootdir, so an enclosing project's settings are never taken.
[tool.pytest.ini_options]

[tool.ragretrieval]
chunks = "data/chunks.jsonl"
evalset = "data/evalset.jsonl"
baseline = "baselines/retrieval.json"
k = {k}
metrics = ["recall", "ndcg"]
tokenizer = "jieba"
embedding = "python:cheap:embed"
embedding_id = "cheap-hashed-chars-{dimensions}"
embedding_batch_size = 4096
cache = ".rag-cache"
db = "embedded"
min_questions = 1
index = "{index}"
{hnsw}
[tool.ragretrieval.retrievers.vector]
type = "vector"
"""
CHEAP = """import sys
sys.path.insert(0, {here!r})
from corpus import hashed  # noqa: E402


def embed(texts):
    return hashed(texts, {dimensions})
"""


def project(work: Path, size: str) -> Path:
    """The gate project for one size; the corpus is generated once and kept."""
    chunks, questions, dimensions, index = SIZES[size]
    folder = work / f"million-{size}"
    data = folder / "data"
    if not (data / "evalset.jsonl").exists():
        started = time.perf_counter()
        stream_topical(data, chunks, questions)
        print(f"corpus written in {time.perf_counter() - started:.0f}s", flush=True)
    hnsw = ""
    if index == "hnsw":
        hnsw = "hnsw = {" + ", ".join(f"{key} = {value}" for key, value in HNSW.items()) + "}\n"
    (folder / "pyproject.toml").write_text(
        PYPROJECT.format(k=K, dimensions=dimensions, index=index, hnsw=hnsw), encoding="utf-8")
    (folder / "cheap.py").write_text(CHEAP.format(here=str(HERE), dimensions=dimensions), encoding="utf-8")
    return folder


def machine() -> dict[str, Any]:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.machine())
    memory = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                  if line.startswith("MemTotal"))
    return {"nproc": os.cpu_count(), "cpu": model, "ram_gib": round(memory / 2**20, 1)}


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


class Sampler(threading.Thread):
    """Peak RSS and PSS summed over this process's descendants, read from /proc (smaps_rollup).

    As child subreaper this process inherits the daemonised postmaster, so it also reaps
    children that exit (except `keep`, which the main thread waits for)."""

    def __init__(self, interval: float) -> None:
        super().__init__(daemon=True)
        self.interval = interval
        self.keep = 0
        self.stop = threading.Event()
        self.peak_rss = 0
        self.peak_pss = 0
        self.peak_processes = 0

    def tree(self) -> list[int]:
        children: dict[int, list[int]] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    stat = Path(f"/proc/{entry}/stat").read_text()
                except OSError:
                    continue
                parent = int(stat.rpartition(")")[2].split()[1])
                children.setdefault(parent, []).append(int(entry))
        found, todo = [], [os.getpid()]
        while todo:
            for child in children.get(todo.pop(), []):
                found.append(child)
                todo.append(child)
        return found

    def reap(self) -> None:
        while True:
            try:
                info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return
            if info is None or info.si_pid == self.keep:
                return
            os.waitpid(info.si_pid, 0)

    def sample(self) -> None:
        rss = pss = 0
        pids = self.tree()
        for pid in pids:
            try:
                text = Path(f"/proc/{pid}/smaps_rollup").read_text()
            except OSError:
                continue
            for line in text.splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1])
        self.peak_rss, self.peak_pss = max(self.peak_rss, rss), max(self.peak_pss, pss)
        self.peak_processes = max(self.peak_processes, len(pids))

    def run(self) -> None:
        while not self.stop.wait(self.interval):
            self.reap()
            self.sample()


def subreaper() -> None:
    """PR_SET_CHILD_SUBREAPER: orphans below us (pg_ctl's postmaster) become our children."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(36, 1, 0, 0, 0) != 0:
        raise SystemExit("prctl(PR_SET_CHILD_SUBREAPER) failed; Postgres would not be counted")


def gate(folder: Path, name: str, interval: float) -> dict[str, Any]:
    """One gate run in a child process: wall time, peaks, phases, metrics and diagnostics."""
    logs = folder / "logs"
    logs.mkdir(exist_ok=True)
    out = logs / f"{name}.json"
    out.unlink(missing_ok=True)
    if name == "cold":
        shutil.rmtree(folder / ".rag-cache", ignore_errors=True)
        shutil.rmtree(folder / "baselines", ignore_errors=True)
    flag = "--rag-update-baseline" if name == "cold" else "--rag-eval"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", flag, f"--rag-json={out}"]
    before = load()
    sampler = Sampler(interval)
    started = time.perf_counter()
    with (logs / f"{name}.log").open("w", encoding="utf-8") as log:
        child = subprocess.Popen(command, cwd=folder, stdout=log, stderr=subprocess.STDOUT)
        sampler.keep = child.pid
        sampler.start()
        _, status, usage = os.wait4(child.pid, 0)
    took = time.perf_counter() - started
    sampler.stop.set()
    sampler.join()
    sampler.reap()
    document = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
    entry = document.get("retrievers", {}).get("vector", {})
    return {
        "exit": os.waitstatus_to_exitcode(status),
        "wall_s": round(took, 1),
        "pytest_peak_rss_mib": round(usage.ru_maxrss / 1024),
        "tree_peak_rss_mib": round(sampler.peak_rss / 1024),
        "tree_peak_pss_mib": round(sampler.peak_pss / 1024),
        "tree_peak_processes": sampler.peak_processes,
        "phases_s": {key: round(value, 1) for key, value in document.get("phases", {}).items()},
        "metrics": entry.get("metrics", {}),
        "diagnostics": entry.get("diagnostics", {}),
        "questions": len(entry.get("questions", {})),
        "load_before": before,
        "load_after": load(),
    }


def read_corpus(folder: Path, dimensions: int) -> tuple[list[str], np.ndarray]:
    """Ids and vectors, a batch of lines at a time (the texts are never all held)."""
    ids: list[str] = []
    vectors = []
    batch: list[str] = []
    with (folder / "data" / "chunks.jsonl").open(encoding="utf-8") as stream:
        for line in stream:
            row = json.loads(line)
            ids.append(row["id"])
            batch.append(row["text"])
            if len(batch) == 8192:
                vectors.append(hashed(batch, dimensions))
                batch = []
    if batch:
        vectors.append(hashed(batch, dimensions))
    return ids, np.concatenate(vectors)


def timed(conn: Any, statement: str, params: dict[str, Any]) -> tuple[list[str], float]:
    started = time.perf_counter()
    rows = conn.execute(statement, params).fetchall()
    return [row[0] for row in rows], (time.perf_counter() - started) * 1000.0


def exact_sample(folder: Path, size: str, sample: int) -> dict[str, Any]:
    """Full scan vs the gate's exact path (vs HNSW at several ef_search), per question, on our own server."""
    import pgserver
    from pgvector.psycopg import register_vector
    from psycopg import connect

    from pytest_ragretrieval.database.seed import index_memory_mb
    from pytest_ragretrieval.database.settings import IndexSettings
    from pytest_ragretrieval.retrievers.candidates import Candidates

    chunks, _, dimensions, index = SIZES[size]
    before = load()
    started = time.perf_counter()
    ids, matrix = read_corpus(folder, dimensions)
    embedded = time.perf_counter() - started
    questions = [json.loads(line) for line in (folder / "data" / "evalset.jsonl").open(encoding="utf-8")]
    picked = [questions[i] for i in np.linspace(0, len(questions) - 1, sample).astype(int)]
    queries = hashed([q["query"] for q in picked], dimensions)
    place = folder / "exactdb"
    shutil.rmtree(place, ignore_errors=True)
    kept = sorted((folder / ".rag-cache" / "databases").glob("*/seeded.json"), key=lambda p: p.stat().st_mtime)
    result: dict[str, Any] = {"sample": sample, "load_before": before, "embed_corpus_s": round(embedded, 1)}
    table = "chunks"
    if kept:  # a copy of the gate's own seeded table (and index): no second COPY, no second index build
        subprocess.run(["cp", "-a", str(kept[-1].parent / "data"), str(place)], check=True)
        (place / "postmaster.pid").unlink(missing_ok=True)
        table = '"{}".chunks'.format(json.loads(kept[-1].read_text(encoding="utf-8"))["schema"])
        result["table"] = "a copy of the gate's kept seeded database"
    server = pgserver.get_server(place, cleanup_mode="delete")
    try:
        with connect(server.get_uri(), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            register_vector(conn)
            if not kept:
                conn.execute(f"CREATE TABLE chunks (id text PRIMARY KEY, embedding vector({dimensions}))")
                started = time.perf_counter()
                with conn.cursor() as cursor, cursor.copy(
                        "COPY chunks (id, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
                    copy.set_types(["text", "vector"])
                    for cid, row in zip(ids, matrix, strict=True):
                        copy.write_row((cid, row))
                conn.execute("ANALYZE chunks")
                result["copy_s"] = round(time.perf_counter() - started, 1)
            full_sql = f"SELECT id, embedding <=> %(q)s AS d FROM {table} ORDER BY d, id LIMIT %(k)s"
            among_sql = (f"SELECT id, embedding <=> %(q)s AS d FROM {table} WHERE id = ANY(%(ids)s) "
                         "ORDER BY d, id LIMIT %(k)s")
            truth, full_ms = [], []
            timed(conn, full_sql, {"q": queries[0], "k": K})  # the table into the page cache
            for query in queries:
                found, ms = timed(conn, full_sql, {"q": query, "k": K})
                truth.append(found)
                full_ms.append(ms)
            started = time.perf_counter()
            candidates = Candidates(ids, matrix)
            prepare = time.perf_counter() - started
            started = time.perf_counter()
            among = candidates.find(queries, K)
            share = (time.perf_counter() - started) * 1000.0 / sample
            gate_ms, same = [], 0
            for query, pool, expected in zip(queries, among, truth, strict=True):
                found, ms = timed(conn, among_sql if pool is not None else full_sql,
                                  {"q": query, "k": K, "ids": pool})
                gate_ms.append(ms + share)
                same += found == expected
            gold = [next(iter(q["relevant"])) for q in picked]
            result["full_scan_recall@10"] = round(statistics.fmean(g in t for g, t in zip(gold, truth, strict=True)), 4)
            result.update(
                full_scan_ms=summary(full_ms), gate_exact_ms=summary(gate_ms),
                gate_candidates_prepare_s=round(prepare, 2), gate_same_rankings=f"{same}/{sample}",
                gate_candidates_mean=round(statistics.fmean(len(p) for p in among if p is not None), 1),
            )
            if index == "hnsw":
                if not kept:
                    memory = index_memory_mb(chunks, dimensions, IndexSettings("hnsw", **HNSW))
                    conn.execute(f"SET maintenance_work_mem = '{memory}MB'")
                    started = time.perf_counter()
                    conn.execute("CREATE INDEX ON chunks USING hnsw (embedding vector_cosine_ops) "
                                 f"WITH (m = {HNSW['m']}, ef_construction = {HNSW['ef_construction']})")
                    result["hnsw_build_s"] = round(time.perf_counter() - started, 1)
                ann_sql = f"SELECT id FROM {table} ORDER BY embedding <=> %(q)s LIMIT %(k)s"
                result["hnsw"] = {}
                for ef in EF_SEARCH:
                    conn.execute(f"SET hnsw.ef_search = {ef}")
                    timed(conn, ann_sql, {"q": queries[0], "k": K})
                    ms, recalls = [], []
                    for query, expected in zip(queries, truth, strict=True):
                        found, took = timed(conn, ann_sql, {"q": query, "k": K})
                        ms.append(took)
                        recalls.append(len(set(found) & set(expected)) / len(expected))
                    result["hnsw"][str(ef)] = {"ms": summary(ms), "recall_mean": round(statistics.fmean(recalls), 4),
                                               "recall_worst": round(min(recalls), 4)}
    finally:
        server.cleanup()
        shutil.rmtree(place, ignore_errors=True)
    result["load_after"] = load()
    return result


def summary(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 1), "max": round(max(values), 1)}


def table(results: dict[str, Any]) -> str:
    """The published rows, as Markdown, from a results file."""
    lines = ["| run | wall | pytest peak RSS | tree peak RSS / PSS | phases (s) | recall@10 | nDCG@10 | ann_recall@10 (worst) | load before / after |",
             "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- |"]
    for step in ("cold", "warm", "warm2"):
        run = results.get(step)
        if not run:
            continue
        metrics, diagnostics = run["metrics"], run["diagnostics"]
        ann = (f"{diagnostics[f'ann_recall@{K}']:.4f} ({diagnostics[f'ann_recall_worst@{K}']:.1f})"
               if f"ann_recall@{K}" in diagnostics else "—")
        phases = ", ".join(f"{name} {value}" for name, value in run["phases_s"].items() if value >= 0.5)
        lines.append(
            f"| {step} | {run['wall_s']:.0f} s | {run['pytest_peak_rss_mib'] / 1024:.2f} GiB | "
            f"{run['tree_peak_rss_mib'] / 1024:.2f} / {run['tree_peak_pss_mib'] / 1024:.2f} GiB | {phases} | "
            f"{metrics.get(f'recall@{K}', 0):.4f} | {metrics.get(f'ndcg@{K}', 0):.4f} | {ann} | "
            f"{run['load_before'][0]} / {run['load_after'][0]} |")
    exact = results.get("exact")
    if exact:
        lines += ["", f"Per question ({exact['sample']} questions, ms, median / max):", "",
                  "| search | median | max | recall against the full scan (mean / worst) |", "| --- | ---: | ---: | --- |",
                  f"| pgvector full scan (`ORDER BY distance, id`) | {exact['full_scan_ms']['median']} | "
                  f"{exact['full_scan_ms']['max']} | 1 (the reference) |",
                  f"| the gate's exact path (numpy candidates, then pgvector) | {exact['gate_exact_ms']['median']} | "
                  f"{exact['gate_exact_ms']['max']} | same rankings: {exact['gate_same_rankings']} |"]
        for ef, row in sorted(exact.get("hnsw", {}).items(), key=lambda item: int(item[0])):
            lines.append(f"| hnsw, ef_search = {ef} | {row['ms']['median']} | {row['ms']['max']} | "
                         f"{row['recall_mean']} / {row['recall_worst']} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", choices=sorted(SIZES), default="20k")
    parser.add_argument("--only", default="cold,warm,exact")
    parser.add_argument("--work", type=Path, default=HERE / ".work")
    parser.add_argument("--sample", type=int, default=20)
    parser.add_argument("--interval", type=float, default=0.5)
    parser.add_argument("--table", action="store_true", help="print the results file's rows as Markdown, run nothing")
    args = parser.parse_args()
    path = HERE / "results" / f"million-{args.size}.json"
    if args.table:
        print(table(json.loads(path.read_text(encoding="utf-8"))))
        return
    subreaper()
    chunks, questions, dimensions, index = SIZES[args.size]
    folder = project(args.work.resolve(), args.size)
    path.parent.mkdir(exist_ok=True)
    results = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    results.update(size=args.size, chunks=chunks, questions=questions, dimensions=dimensions, index=index,
                   hnsw=HNSW if index == "hnsw" else None, k=K, machine=machine())
    print(f"{args.size}: {chunks} chunks x {questions} questions, {dimensions}-d, {index}; {results['machine']}",
          flush=True)
    for step in args.only.split(","):
        results[step] = exact_sample(folder, args.size, args.sample) if step == "exact" else gate(
            folder, step, args.interval)
        print(f"{step}: {json.dumps(results[step], sort_keys=True)}", flush=True)
        path.write_text(json.dumps(results, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
