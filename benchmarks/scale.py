"""The gate at scale against the tutorial's script, on a synthetic Chinese corpus.

Builds the corpus once (`corpus.py`, seeded: the same files on every machine) and a gate project
using the same cheap embedder as the script (`python:cheap:embed`, so model time is equal on
both sides), records the project's baseline once (untimed), then runs, in alternating rounds
and each in its own child process: the tutorial's script as written (`tutorial_script.py`),
the gate cold (cache folder deleted first) and the gate warm (the cache the cold run left).

Prints the wall time of each run, the ratios (script / gate, best of the rounds), the gate's
phase times (from its --rag-json), the script's own phase times, the peak RSS of each run's
main process (ru_maxrss from wait4: pytest for the gate; Postgres, started as a daemon, is
not counted on either side), the machine's load average, and whether the metrics agree.

Hybrid's ties: the script's RRF keeps the first source's order among equal sums (Python's
stable sort), the gate breaks them by chunk id (README: hybrid). The project asks for
`hit_rate@10`, so the gate records vector's and bm25's top 10; the check fuses those with the
script's rule and compares that with the script's own hybrid, which isolates the tie rule.

Usage: python benchmarks/scale.py --size 20k|100k [--rounds 2] [--work DIR] [--only script,cold,warm]
       [--script-configs vector,hybrid] [--all-plugins]
Writes WORK/gate-<size>/logs/summary.json as well.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpus import generate  # noqa: E402

SIZES = {"20k": (20_000, 500), "100k": (100_000, 2_000)}
METRICS = ("precision", "recall", "f1", "ndcg")
AGREE = 0.02
PYPROJECT = """# Its own pytest rootdir: without this table pytest would take an enclosing project's (this
# repository's, when the work folder lies inside it) and run that project's gate instead.
[tool.pytest.ini_options]

[tool.ragretrieval]
chunks = "data/chunks.jsonl"
evalset = "data/evalset.jsonl"
baseline = "baselines/retrieval.json"
k = 5
metrics = ["precision", "recall", "f1", "ndcg", "hit_rate@10"]
tokenizer = "jieba"
embedding = "python:cheap:embed"
embedding_id = "cheap-hashed-chars-256"
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
CHEAP = f"""import sys
sys.path.insert(0, {str(HERE)!r})
from corpus import embed  # noqa: E402,F401
"""


def project(work: Path, size: str) -> Path:
    """The gate project for one size; the corpus is generated once and kept."""
    chunks, questions = SIZES[size]
    folder = work / f"gate-{size}"
    data = folder / "data"
    if not (data / "evalset.jsonl").exists():
        generate(chunks, questions).write(data)
    (folder / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    (folder / "cheap.py").write_text(CHEAP, encoding="utf-8")
    return folder


def run(command: list[str], cwd: Path, log: Path, env: dict[str, str] | None = None) -> tuple[float, float, int]:
    """(wall seconds, peak RSS of the child in MiB, exit code)."""
    started = time.perf_counter()
    with log.open("w", encoding="utf-8") as out:
        child = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(child.pid, 0)
    return time.perf_counter() - started, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def gate_command(extra: list[str], all_plugins: bool) -> list[str]:
    """pytest with this plugin only (as a user's repository has it: PYTEST_DISABLE_PLUGIN_AUTOLOAD,
    see gate_env), or with every plugin of this environment (hypothesis, xdist: about 0.8 s a run here)."""
    plugins = [] if all_plugins else ["-p", "pytest_ragretrieval.plugin"]
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugins, *extra]


def gate_env(all_plugins: bool) -> dict[str, str]:
    return dict(os.environ) if all_plugins else dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")


def relevance(folder: Path) -> dict[str, set[str]]:
    rows = [json.loads(line) for line in (folder / "data" / "evalset.jsonl").open(encoding="utf-8")]
    return {row["id"]: set(row["relevant"]) for row in rows}


def scores(ranking: list[str], relevant: set[str], k: int = 5) -> dict[str, float]:
    """The script's four metrics, as it computes them, for one question."""
    hits = sum(1 for cid in ranking[:k] if cid in relevant)
    p, r = hits / k, hits / len(relevant)
    dcg = sum(1 / math.log2(rank + 1) for rank, cid in enumerate(ranking[:k], start=1) if cid in relevant)
    ideal = sum(1 / math.log2(rank + 1) for rank in range(1, min(len(relevant), k) + 1))
    return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0, "ndcg": dcg / ideal}


def fuse_like_the_script(rankings: list[list[str]], rrf_k: int = 60) -> list[str]:
    summed: dict[str, float] = {}
    for ranking in rankings:
        for rank, cid in enumerate(ranking, start=1):
            summed[cid] = summed.get(cid, 0.0) + 1.0 / (rrf_k + rank)
    return [cid for cid, _ in sorted(summed.items(), key=lambda kv: kv[1], reverse=True)]


def fuse_like_the_gate(rankings: list[list[str]], rrf_k: int = 60) -> list[str]:
    summed: dict[str, Fraction] = {}
    for ranking in rankings:
        for rank, cid in enumerate(ranking, start=1):
            summed[cid] = summed.get(cid, Fraction(0)) + Fraction(1, rrf_k + rank)
    return sorted(summed, key=lambda cid: (-summed[cid], cid))


def hybrid_check(results: dict[str, Any], judged: dict[str, set[str]]) -> dict[str, dict[str, float]]:
    """Hybrid's metrics from the gate's own vector and bm25 top 10, fused by each side's rule."""
    found: dict[str, dict[str, list[float]]] = {"script rule": {}, "gate rule": {}}
    questions = results["retrievers"]["vector"]["questions"]
    for qid, relevant in judged.items():
        sources = [questions[qid]["ranking"][:10], results["retrievers"]["bm25"]["questions"][qid]["ranking"][:10]]
        for rule, fuse in (("script rule", fuse_like_the_script), ("gate rule", fuse_like_the_gate)):
            for name, value in scores(fuse(sources)[:5], relevant).items():
                found[rule].setdefault(name, []).append(value)
    return {rule: {name: statistics.fmean(values) for name, values in by.items()} for rule, by in found.items()}


def gate_metrics(results: dict[str, Any]) -> dict[str, dict[str, float]]:
    return {
        name: {metric: entry["metrics"][f"{metric}@5"] for metric in METRICS}
        for name, entry in results["retrievers"].items()
    }


def differences(script: dict[str, dict[str, float]], gate: dict[str, dict[str, float]]) -> list[str]:
    lines = []
    for name, values in script.items():
        for metric in METRICS:
            theirs, ours = values[f"{metric}@5"], gate.get(name, {}).get(metric)
            if ours is None or abs(ours - theirs) > AGREE:
                lines.append(f"  {name} {metric}@5: script {theirs:.4f}, gate {ours}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", choices=sorted(SIZES), default="20k")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--work", type=Path, default=HERE / ".work")
    parser.add_argument("--only", default="script,cold,warm")
    parser.add_argument("--script-configs", default="vector,hybrid")
    parser.add_argument("--all-plugins", action="store_true", help="load every pytest plugin installed, not only this one")
    args = parser.parse_args()
    env = gate_env(args.all_plugins)
    which = args.only.split(",")
    folder = project(args.work.resolve(), args.size)
    logs = folder / "logs"
    logs.mkdir(exist_ok=True)
    chunks, questions = SIZES[args.size]
    print(f"{args.size}: {chunks} chunks, {questions} questions; {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the start; gate with "
          f"{'every installed pytest plugin' if args.all_plugins else 'pytest and this plugin only'}", flush=True)
    if not (folder / "baselines" / "retrieval.json").exists() and {"cold", "warm"} & set(which):
        took, rss, code = run(gate_command(["--rag-update-baseline"], args.all_plugins), folder, logs / "record.log", env)
        print(f"baseline recorded in {took:.1f}s (exit {code}, peak RSS {rss:.0f} MiB)", flush=True)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in which}
    loads = []
    for round_ in range(args.rounds):
        for name in which:
            loads.append(os.getloadavg()[0])
            out = logs / f"{name}-{round_}.json"
            if name == "script":
                command = [sys.executable, str(HERE / "tutorial_script.py"), str(folder / "data"),
                           "--configs", args.script_configs, "--json", str(out)]
            else:
                if name == "cold":
                    shutil.rmtree(folder / ".rag-cache", ignore_errors=True)
                command = gate_command(["--rag-eval", "--rag-json", str(out)], args.all_plugins)
            took, rss, code = run(command, folder, logs / f"{name}-{round_}.log", None if name == "script" else env)
            document = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
            ran = {len(entry["questions"]) for entry in document.get("retrievers", {}).values()}
            if name != "script" and ran != {questions}:
                raise SystemExit(f"{name}: the gate ran {sorted(ran)} questions, not {questions}; see {logs}")
            runs[name].append({"seconds": took, "rss_mib": rss, "exit": code, "document": document})
            print(f"round {round_ + 1}: {name:<6} {took:7.1f}s  exit {code}  peak RSS {rss:6.0f} MiB", flush=True)
    summary = report(runs, folder, loads)
    summary.update(size=args.size, chunks=chunks, questions=questions, cores=os.cpu_count())
    (logs / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True), encoding="utf-8")


def report(runs: dict[str, list[dict[str, Any]]], folder: Path, loads: list[float]) -> dict[str, Any]:
    """Print the comparison; return it for summary.json."""
    best = {name: min(r["seconds"] for r in done) for name, done in runs.items() if done}
    summary: dict[str, Any] = {"best_seconds": best, "load_average": [round(x, 2) for x in loads]}
    print(f"load average before each run: {', '.join(f'{x:.1f}' for x in loads)}")
    for name in ("cold", "warm"):
        if name in best and "script" in best:
            summary[f"script_over_{name}"] = best["script"] / best[name]
            print(f"gate {name}: {best[name]:.1f}s; script {best['script']:.1f}s; script / gate {name} = "
                  f"{best['script'] / best[name]:.2f}")
    for name, done in runs.items():
        phases = [r["document"].get("phases", {}) for r in done if r["document"]]
        if phases:
            median = {key: statistics.median(p.get(key, 0.0) for p in phases) for key in phases[0]}
            summary[f"{name}_phases"] = median
            print(f"{name} phases (median s): " + ", ".join(f"{key} {value:.2f}" for key, value in median.items()))
        summary[f"{name}_peak_rss_mib"] = max(r["rss_mib"] for r in done)
    gate = next((r["document"] for name in ("warm", "cold") for r in runs.get(name, []) if r["document"]), None)
    script = next((r["document"] for r in runs.get("script", []) if r["document"]), None)
    if gate is not None:
        summary["gate_metrics"] = gate_metrics(gate)
    if gate is not None and script is not None:
        problems = differences(script["metrics"], gate_metrics(gate))
        fused = hybrid_check(gate, relevance(folder))
        summary["hybrid_fused"] = fused
        print("metrics agree within 0.02" if not problems else "metrics differ:\n" + "\n".join(problems))
        if "hybrid" in script["metrics"]:
            theirs = script["metrics"]["hybrid"]
            rule = fused["script rule"]
            explained = all(abs(rule[m] - theirs[f"{m}@5"]) <= AGREE for m in METRICS)
            print("hybrid from the gate's vector and bm25 top 10, fused with the script's tie rule: "
                  + ", ".join(f"{m}@5 {rule[m]:.4f}" for m in METRICS)
                  + (" (agrees with the script's hybrid within 0.02: the difference is the tie rule)" if explained
                     else " (does NOT agree with the script's hybrid)"))
            summary["hybrid_difference_is_the_tie_rule"] = explained
    return summary


if __name__ == "__main__":
    main()
