"""The speed bar: the gate against `../shared/bench/seed_style.py`, at 20,000 chunks x 500 questions.

The corpus is the bar's (its README): 20,000 chunks of jieba-dictionary words drawn by frequency
(random.Random(42), 15-40 words each, an `ERR-nnnnn` code in every 50th), 500 questions cut as
12-character spans of random chunks, each with its chunk as gold. The gate project uses the
script's own embedder (`embedding = "python:bench_embed:embed"`), vector, bm25 and hybrid (RRF,
depth 10, rrf_k 60), k = 5, metrics P/R/F1/nDCG.

In alternating rounds, each a whole child process of this one: the script; the gate cold
(`.rag-cache` removed); the gate warm; and, when `--old` names a checkout of an earlier commit,
that commit's gate warm on its own copy of the project (its own cache, so neither side reads the
other's). Each gate run is `pytest --rag-eval --rag-update-baseline --rag-allow-regression
--rag-json out.json`, with pytest and this plugin only (PYTEST_DISABLE_PLUGIN_AUTOLOAD), under
`nice` as the script is. Printed: each run's wall time, medians, the ratios script / gate and
warm / old warm, the load average before each round.

Usage: python benchmarks/bar.py [--rounds 2] [--work DIR] [--bench ../shared/bench] [--old DIR]
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CHUNKS, QUESTIONS = 20_000, 500
PYPROJECT = """[tool.pytest.ini_options]

[tool.ragretrieval]
chunks = "fixtures/chunks.jsonl"
evalset = "fixtures/evalset.jsonl"
baseline = "baselines/retrieval.json"
k = 5
metrics = ["precision", "recall", "f1", "ndcg"]
tokenizer = "jieba"
embedding = "python:bench_embed:embed"
embedding_id = "bench-char-bigram-256"
cache = ".rag-cache"
db = "embedded"
min_questions = 1

[tool.ragretrieval.retrievers.vector]
type = "vector"

[tool.ragretrieval.retrievers.bm25]
type = "bm25"

[tool.ragretrieval.retrievers.hybrid]
type = "hybrid"
sources = ["vector", "bm25"]
depth = 10
rrf_k = 60
"""


def corpus(folder: Path) -> None:
    """The bar's chunks and questions, written once; the same bytes on every machine."""
    import jieba

    words: list[str] = []
    counts: list[int] = []
    with (Path(jieba.__file__).parent / "dict.txt").open(encoding="utf-8") as stream:
        for line in stream:
            word, count, *_ = line.split()
            words.append(word)
            counts.append(int(count))
    rng = random.Random(42)
    cumulative = list(itertools.accumulate(counts))  # what choices(weights=) computes on every call
    rows = []
    for number in range(CHUNKS):
        text = "".join(rng.choices(words, cum_weights=cumulative, k=rng.randint(15, 40)))
        if number % 50 == 0:
            text += f"ERR-{number:05d}"
        rows.append({"id": f"c{number:05d}", "text": text})
    questions = []
    for number, chunk in enumerate(rng.sample(rows, QUESTIONS)):
        text = str(chunk["text"])
        start = rng.randrange(max(1, len(text) - 12))
        questions.append({"id": f"q{number:03d}", "query": text[start:start + 12], "relevant": [chunk["id"]]})
    folder.mkdir(parents=True, exist_ok=True)
    for name, lines in (("chunks.jsonl", rows), ("evalset.jsonl", questions)):
        (folder / name).write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in lines),
                                   encoding="utf-8")


def project(folder: Path, data: Path, bench: Path) -> Path:
    """A gate project over the shared corpus files (copied, so each project is its own user repository)."""
    (folder / "fixtures").mkdir(parents=True, exist_ok=True)
    (folder / "baselines").mkdir(exist_ok=True)
    for name in ("chunks.jsonl", "evalset.jsonl"):
        shutil.copyfile(data / name, folder / "fixtures" / name)
    shutil.copyfile(bench / "bench_embed.py", folder / "bench_embed.py")
    (folder / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    return folder


def timed(command: list[str], cwd: Path, env: dict[str, str], log: Path) -> float:
    started = time.perf_counter()
    with log.open("w", encoding="utf-8") as out:
        code = subprocess.run(["nice", *command], cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                              timeout=900).returncode
    took = time.perf_counter() - started
    if code != 0:
        raise SystemExit(f"{' '.join(command)} in {cwd} exited {code}; see {log}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--work", type=Path, default=HERE / ".work" / "bar")
    parser.add_argument("--bench", type=Path, default=next(
        (up / "shared" / "bench" for up in (ROOT.parent, ROOT.parent.parent) if (up / "shared" / "bench").is_dir()),
        ROOT.parent / "shared" / "bench"), help="the folder of seed_style.py (default: ../shared/bench)")
    parser.add_argument("--old", type=Path, help="a checkout of an earlier commit, timed warm beside this one")
    parser.add_argument("--only", default="script,cold,warm,old")
    args = parser.parse_args()
    work, bench = args.work.resolve(), args.bench.resolve()
    data = work / "data"
    if not (data / "evalset.jsonl").exists():
        corpus(data)
    which = [name for name in args.only.split(",") if name != "old" or args.old]
    folders = {"new": project(work / "gate", data, bench)}
    if args.old:
        folders["old"] = project(work / "gate-old", data, bench)
    base = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", HF_HUB_OFFLINE="1")
    envs = {"new": dict(base, PYTHONPATH=str(ROOT)),
            "old": dict(base, PYTHONPATH=str(args.old.resolve()) if args.old else "")}
    gate = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "pytest_ragretrieval.plugin",
            "--rag-eval", "--rag-update-baseline", "--rag-allow-regression", "--rag-json", "out.json"]
    logs = work / "logs"
    logs.mkdir(exist_ok=True)
    print(f"{CHUNKS} chunks x {QUESTIONS} questions; {platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}", flush=True)
    for side in folders:  # a first warm-up run each, untimed: the cache and the kept database exist after it
        timed(gate, folders[side], envs[side], logs / f"prepare-{side}.log")
    times: dict[str, list[float]] = {name: [] for name in which}
    loads: list[tuple[float, float, float]] = []
    for round_ in range(args.rounds):
        loads.append(os.getloadavg())
        for name in which:
            log = logs / f"{name}-{round_}.log"
            if name == "script":
                took = timed([sys.executable, str(bench / "seed_style.py"), str(work / "gate"), str(bench)],
                             work, dict(os.environ), log)
            else:
                side = "old" if name == "old" else "new"
                if name == "cold":
                    shutil.rmtree(folders[side] / ".rag-cache", ignore_errors=True)
                took = timed(gate, folders[side], envs[side], log)
            times[name].append(took)
            print(f"round {round_ + 1}: {name:<6} {took:6.2f} s  (load {os.getloadavg()[0]:.2f})", flush=True)
    loads.append(os.getloadavg())
    print("load average (1/5/15 min) before each round and at the end: "
          + "; ".join(f"{a:.2f}/{b:.2f}/{c:.2f}" for a, b, c in loads))
    median = {name: statistics.median(values) for name, values in times.items() if values}
    for name, value in median.items():
        print(f"median {name:<6} {value:6.2f} s  (runs: {', '.join(f'{t:.2f}' for t in times[name])})")
    if "script" in median:
        for name in ("cold", "warm", "old"):
            if name in median:
                print(f"script / gate {name}: {median['script'] / median[name]:.1f}x")
    if "warm" in median and "old" in median:
        print(f"warm / old warm: {median['warm'] / median['old']:.2f}")
    (logs / "summary.json").write_text(json.dumps({"seconds": times, "median": median, "load": loads}, indent=1),
                                       encoding="utf-8")


if __name__ == "__main__":
    main()
