"""The whole test suite's time, this commit against an earlier one, alternating, on one machine.

Each side runs in a fresh clone of its commit (no `.rag-cache`, no kept database: what CI starts
from), with this repository's `.venv` and the clone on PYTHONPATH (ahead of the editable install),
its own README's test command (the `pytest` line of the README's first block). Rounds alternate
old, new; printed: each run's wall time, the pytest summary line, the load average before each run,
and the medians and their ratio. Nothing is asserted: a suite's time is a measurement, not a test.

Usage: python benchmarks/suite_time.py --old COMMIT [--new COMMIT] [--rounds 3] [--work DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def clone(commit: str, folder: Path) -> Path:
    shutil.rmtree(folder, ignore_errors=True)
    subprocess.run(["git", "clone", "-q", str(ROOT), str(folder)], check=True)
    subprocess.run(["git", "-C", str(folder), "checkout", "-q", commit], check=True)
    return folder


def test_command(folder: Path) -> list[str]:
    """The README's test command: the second command line of its first code block, from `pytest` on."""
    readme = (folder / "README.md").read_text(encoding="utf-8")
    block = readme.split("```", 2)[1].splitlines()[1:]
    line = [text for text in block if text.strip()][1]
    words = shlex.split(line.split("&&")[-1])
    if not words or not words[0].endswith("pytest"):
        raise SystemExit(f"{folder / 'README.md'}: no pytest command in {line!r}")
    return [sys.executable, "-m", "pytest", *words[1:]]


def run(folder: Path, log: Path) -> tuple[float, str]:
    env = dict(os.environ, PYTHONPATH=str(folder))
    started = time.perf_counter()
    with log.open("w", encoding="utf-8") as out:
        subprocess.run(test_command(folder), cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=3600)
    took = time.perf_counter() - started
    lines = [line for line in log.read_text(encoding="utf-8").splitlines() if re.search(r"\d+ (passed|failed)", line)]
    return took, lines[-1].strip("= ") if lines else "(no summary line)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True, help="the earlier commit")
    parser.add_argument("--new", default="HEAD")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path("/tmp/suite-time"))
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    times: dict[str, list[float]] = {"old": [], "new": []}
    for round_ in range(args.rounds):
        for side, commit in (("old", args.old), ("new", args.new)):
            folder = clone(commit, args.work / side)
            load = os.getloadavg()
            took, summary = run(folder, args.work / f"{side}-{round_}.log")
            times[side].append(took)
            print(f"round {round_ + 1}: {side} {commit} {took:7.1f} s  load before {load[0]:.2f}/{load[1]:.2f}  "
                  f"{summary}", flush=True)
    median = {side: statistics.median(values) for side, values in times.items()}
    print(f"median old {median['old']:.1f} s, new {median['new']:.1f} s, new / old {median['new'] / median['old']:.3f}")
    (args.work / "summary.json").write_text(json.dumps({"seconds": times, "median": median}, indent=1))


if __name__ == "__main__":
    main()
