"""A change of the fusion alone against no change, in a fresh clone with the committed cache (issue 40, item 13).

The project is the speed bar's (`bar.py`: 20,000 chunks x 500 questions, the shared char-bigram embedder
of `../shared/bench/seed_style.py`, vector, bm25 and hybrid with RRF depth 10, rrf_k 60, k = 5). One
cold run fills its cache; that cache without its kept database (`.rag-cache/databases`), which no clone
holds, is the committed cache (as a CI cache restores it: rankings, vectors, tokens). Then, in
alternating rounds, each in a fresh copy of the project with that cache: the gate with nothing changed,
and the gate with hybrid's `rrf_k` changed to 61 (the fusion alone). Each run is a whole pytest process
(`--rag-eval --rag-update-baseline --rag-allow-regression --rag-json out.json`, pytest and this plugin
only, under `nice`, bytecode written as in a user's environment). With `--old DIR` (a checkout of an
earlier commit) the same two runs of that commit's gate alternate beside them, on its own cache.

Printed: each run's wall time and whether it started the database, the medians, and the ratio
fusion-only / no-change (the issue's goal: at most 1.5), with the machine and its load average.
Usage: python benchmarks/fusion.py [--rounds 5] [--work DIR] [--bench ../shared/bench] [--old DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from bar import PYPROJECT, corpus, project, timed  # noqa: E402
from warm import machine  # noqa: E402

CHANGED = PYPROJECT.replace("rrf_k = 60", "rrf_k = 61")
assert CHANGED != PYPROJECT


def committed(side: Path, data: Path, bench: Path, gate: list[str], env: dict[str, str], logs: Path) -> Path:
    """The project after one cold run, its cache without the kept database: what a fresh clone holds."""
    folder = project(side / "cold", data, bench)
    shutil.rmtree(folder / ".rag-cache", ignore_errors=True)
    timed(gate, folder, env, logs / f"{side.name}-cold.log")
    template = side / "template"
    shutil.rmtree(template, ignore_errors=True)
    shutil.copytree(folder, template, ignore=shutil.ignore_patterns("databases", "out.json"))
    return template


def clone(template: Path, folder: Path, settings: str) -> Path:
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(template, folder)
    (folder / "pyproject.toml").write_text(settings, encoding="utf-8")
    return folder


def started_database(folder: Path) -> bool:
    phases = json.loads((folder / "out.json").read_text(encoding="utf-8")).get("phases", {})
    return "database start" in phases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--work", type=Path, default=HERE / ".work" / "fusion")
    parser.add_argument("--bench", type=Path, default=next(
        (up / "shared" / "bench" for up in (ROOT.parent, ROOT.parent.parent) if (up / "shared" / "bench").is_dir()),
        ROOT.parent / "shared" / "bench"), help="the folder of seed_style.py (default: ../shared/bench)")
    parser.add_argument("--old", type=Path, help="a checkout of an earlier commit, timed the same way beside this one")
    args = parser.parse_args()
    work, bench = args.work.resolve(), args.bench.resolve()
    data = work / "data"
    if not (data / "evalset.jsonl").exists():
        corpus(data)
    base = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    base.update(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", HF_HUB_OFFLINE="1")
    sides = {"new": ROOT, **({"old": args.old.resolve()} if args.old else {})}
    gate = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "pytest_ragretrieval.plugin",
            "--rag-eval", "--rag-update-baseline", "--rag-allow-regression", "--rag-json", "out.json"]
    logs = work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    print(f"machine: {machine()}", flush=True)
    templates = {side: committed(work / side, data, bench, gate, dict(base, PYTHONPATH=str(code)), logs)
                 for side, code in sides.items()}
    runs = [(side, change) for side in sides for change in ("no change", "fusion only")]
    times: dict[str, list[float]] = {f"{side}, {change}": [] for side, change in runs}
    database: dict[str, list[bool]] = {name: [] for name in times}
    loads = []
    for round_ in range(args.rounds):
        loads.append(os.getloadavg())
        for side, change in runs:
            name = f"{side}, {change}"
            folder = clone(templates[side], work / side / "run", CHANGED if change == "fusion only" else PYPROJECT)
            took = timed(gate, folder, dict(base, PYTHONPATH=str(sides[side])), logs / f"{side}-{change[0]}-{round_}.log")
            times[name].append(took)
            database[name].append(started_database(folder))
            print(f"round {round_ + 1}: {name:<18} {took:6.2f} s  database started: {database[name][-1]}  "
                  f"(load {os.getloadavg()[0]:.2f})", flush=True)
    loads.append(os.getloadavg())
    print("load average (1/5/15 min) before each round and at the end: "
          + "; ".join(f"{a:.2f}/{b:.2f}/{c:.2f}" for a, b, c in loads))
    median = {name: statistics.median(values) for name, values in times.items()}
    for name, value in median.items():
        print(f"median {name:<18} {value:6.2f} s  (runs: {', '.join(f'{t:.2f}' for t in times[name])})")
    for side in sides:
        ratio = median[f"{side}, fusion only"] / median[f"{side}, no change"]
        print(f"{side}: fusion only / no change = {ratio:.2f} (goal: at most 1.5)")
    (logs / "summary.json").write_text(json.dumps({
        "seconds": times, "median": median, "database_started": database, "load": loads,
        "machine": machine(), "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
