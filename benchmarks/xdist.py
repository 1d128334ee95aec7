"""The gate under pytest-xdist: `-n 2` against `-n 0`, alternating, on one project.

Each run is `pytest --rag-eval -m rag_eval -n N` in its own process, on a warm cache; prints
every wall time and the median of each. With the plugin's grouping the gate runs on one
worker, so `-n 2` costs the gate what `-n 0` does plus starting the workers.
Usage: python benchmarks/xdist.py [PROJECT_FOLDER (default: this repository)] [--rounds 3] [--args=--rag-db=embedded]
"""
from __future__ import annotations

import argparse
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path


def once(folder: Path, workers: str, extra: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rag-eval", "-m", "rag_eval",
         "-n", workers, *extra],
        cwd=folder, capture_output=True, text=True, check=False,
    )
    took = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"-n {workers} exited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("project", type=Path, nargs="?", default=Path(__file__).resolve().parents[1])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--args", default="", help="more pytest arguments, as one string")
    args = parser.parse_args()
    args.extra = shlex.split(args.args)
    once(args.project, "0", args.extra)  # warm the cache and the page cache
    times: dict[str, list[float]] = {"0": [], "2": []}
    for round_ in range(args.rounds):
        for workers in times:
            times[workers].append(once(args.project, workers, args.extra))
            print(f"round {round_ + 1}: -n {workers}: {times[workers][-1]:.1f}s", flush=True)
    a, b = statistics.median(times["0"]), statistics.median(times["2"])
    print(f"median -n 0 {a:.1f}s, -n 2 {b:.1f}s, ratio -n 2 / -n 0 = {b / a:.2f}")


if __name__ == "__main__":
    main()
