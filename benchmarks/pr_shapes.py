"""Pull-request shapes that need the database, in a fresh clone with the CI cache restored (issue 52, item 5).

The project is the speed bar's (`bar.py`: 20,000 chunks x 500 questions, the shared char-bigram embedder
of `../shared/bench/seed_style.py`, vector, bm25 and hybrid with RRF depth 10, rrf_k 60, k = 5). One
cold run on the base branch fills its cache folder, the kept seeded database included
(`.rag-cache/databases`): that folder is what docs/ci.md's workflow restores from the CI cache
(actions/cache over the cache folder, restore-keys falling back to the base branch's entry). Then, in
alternating rounds, each in a fresh copy of the project with that folder: the reference script on the
pull request's corpus, the gate with 1% of the chunks edited (every 100th chunk's text changed), and
the gate with 5 questions added. Each gate run is a whole pytest process (`--rag-eval
--rag-update-baseline --rag-allow-regression --rag-json out.json`, pytest and this plugin only, under
`nice` as the script is), so the ratios (script / gate, of the medians) come from one process tree.

Printed: each run's wall time, whether the gate started a database and its database phases, the
medians and ratios, the machine and its load average before each round and at the end.
Usage: python benchmarks/pr_shapes.py [--rounds 3] [--work DIR] [--bench ../shared/bench]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from bar import corpus, project, timed  # noqa: E402
from warm import machine  # noqa: E402

SHAPES = ("1% of chunks edited", "5 questions added")


def edit_chunks(folder: Path) -> None:
    """Every 100th chunk's text changed: 200 of 20,000."""
    path = folder / "fixtures" / "chunks.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for row in rows[::100]:
        row["text"] += "（已修订）"
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")


def add_questions(folder: Path) -> None:
    """Five questions cut as the bar's are: 12-character spans of random chunks, each with its chunk as gold."""
    chunks = [json.loads(line) for line in (folder / "fixtures" / "chunks.jsonl").read_text(encoding="utf-8").splitlines()]
    rng = random.Random(52)
    with (folder / "fixtures" / "evalset.jsonl").open("a", encoding="utf-8") as evalset:
        for number, chunk in enumerate(rng.sample(chunks, 5)):
            start = rng.randrange(max(1, len(chunk["text"]) - 12))
            row = {"id": f"added{number}", "query": chunk["text"][start:start + 12], "relevant": [chunk["id"]]}
            evalset.write(json.dumps(row, ensure_ascii=False) + "\n")


def clone(template: Path, folder: Path) -> Path:
    """A fresh clone of the pull request with the CI cache restored: the project and its cache folder."""
    shutil.rmtree(folder, ignore_errors=True)
    # `cp -a`, as actions/cache's tar restores it: owners kept (as root, the kept database's folder
    # belongs to pgserver's user, and a copy owned by root would not start).
    subprocess.run(["cp", "-a", str(template), str(folder)], check=True)
    (folder / "out.json").unlink(missing_ok=True)
    return folder


def database_phases(folder: Path) -> dict[str, float]:
    phases: dict[str, float] = json.loads((folder / "out.json").read_text(encoding="utf-8")).get("phases", {})
    return {name: seconds for name, seconds in phases.items() if name in ("database start", "seeding")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", type=Path, default=HERE / ".work" / "pr-shapes")
    parser.add_argument("--bench", type=Path, default=next(
        (up / "shared" / "bench" for up in (ROOT.parent, ROOT.parent.parent) if (up / "shared" / "bench").is_dir()),
        ROOT.parent / "shared" / "bench"), help="the folder of seed_style.py (default: ../shared/bench)")
    args = parser.parse_args()
    work, bench = args.work.resolve(), args.bench.resolve()
    data = work / "data"
    if not (data / "evalset.jsonl").exists():
        corpus(data)
    base = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env = dict(base, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    gate = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "pytest_ragretrieval.plugin",
            "--rag-eval", "--rag-update-baseline", "--rag-allow-regression", "--rag-json", "out.json"]
    logs = work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    print(f"machine: {machine()}", flush=True)
    template = project(work / "base", data, bench)
    shutil.rmtree(template / ".rag-cache", ignore_errors=True)
    timed(gate, template, env, logs / "base-cold.log")  # the base branch's run: the cache CI keeps
    shapes = {SHAPES[0]: edit_chunks, SHAPES[1]: add_questions}
    times: dict[str, list[float]] = {name: [] for name in ("script", *SHAPES)}
    phases: dict[str, list[dict[str, float]]] = {name: [] for name in SHAPES}
    loads = []
    for round_ in range(args.rounds):
        loads.append(os.getloadavg())
        for name in times:
            folder = clone(template, work / "run")
            if name == "script":
                edit_chunks(folder)
                took = timed([sys.executable, str(bench / "seed_style.py"), str(folder), str(bench)], work,
                             dict(os.environ), logs / f"script-{round_}.log")
                note = ""
            else:
                shapes[name](folder)
                took = timed(gate, folder, env, logs / f"{name.split()[0]}-{round_}.log")
                phases[name].append(database_phases(folder))
                note = f"  database: {phases[name][-1] or 'not started'}"
            times[name].append(took)
            print(f"round {round_ + 1}: {name:<20} {took:6.2f} s{note}  (load {os.getloadavg()[0]:.2f})", flush=True)
    loads.append(os.getloadavg())
    print("load average (1/5/15 min) before each round and at the end: "
          + "; ".join(f"{a:.2f}/{b:.2f}/{c:.2f}" for a, b, c in loads))
    median = {name: statistics.median(values) for name, values in times.items()}
    for name, value in median.items():
        print(f"median {name:<20} {value:6.2f} s  (runs: {', '.join(f'{t:.2f}' for t in times[name])})")
    for name in SHAPES:
        print(f"script / {name}: {median['script'] / median[name]:.1f}x (goal: at least 20x)")
    (logs / "summary.json").write_text(json.dumps({
        "seconds": times, "median": median, "database": phases, "load": loads,
        "machine": machine(), "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
