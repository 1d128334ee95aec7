"""A warm no-change run of the sample as a user's repository, against a reference run: the floor.

The sample's files (fixtures, baseline, the committed cache without its kept database) and its
`[tool.ragretrieval]` table are copied into a temporary folder without this repository's tests.
After one untimed run (it writes the rankings' entries, as a first run in a clone does), rounds
alternate: the gate, every input unchanged, and `pytest --collect-only` of the same folder (the
reference: interpreter, pytest and the plugin's import, nothing run). Printed: pytest's own
reported time, the process's wall time and CPU time (user + system), the gate's phases (its "rag:
time" total) and whether it started the database, as medians, with the machine and its load
average before and after. Since a fully reused run starts no database, `keep_database` no longer
changes it (issue 40: the sample's reranker built hybrid, bm25's index and the database).

Only pytest and this plugin are loaded (PYTEST_DISABLE_PLUGIN_AUTOLOAD, `-p`): a user's
environment has no hypothesis or xdist, which this repository's dev environment adds to every run;
bytecode is written, as a user's Python does (PYTHONDONTWRITEBYTECODE is dropped).
With `--old DIR` (a checkout of an earlier commit) that commit's gate runs in each round too, on its
own copy of the sample.
Usage: python benchmarks/warm.py [--rounds N] [--all-plugins] [--old DIR]
"""
from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPORTED = re.compile(r" in ([0-9.]+)s(?: \([0-9:]+\))?(?: =+)?$")
DATABASE = re.compile(r"^rag: database .* in ([0-9.]+)s$")
PHASES = re.compile(r"^rag: time: .*; total ([0-9.]+)s$")


def user_repository(folder: Path, *extra: str) -> None:
    """The sample's files and its settings table, as a user's repository would hold them."""
    for name in ("fixtures", "baselines"):
        shutil.copytree(ROOT / name, folder / name)
    shutil.copytree(ROOT / ".rag-cache", folder / ".rag-cache", ignore=shutil.ignore_patterns("databases"))
    lines = (ROOT / "pyproject.toml").read_text(encoding="utf-8").splitlines()
    first = lines.index("[tool.ragretrieval]")
    table = [lines[first], *extra]
    for line in lines[first + 1:]:
        if line.startswith("[") and not line.startswith("[tool.ragretrieval"):
            break
        table.append(line)
    (folder / "pyproject.toml").write_text("\n".join(table).rstrip() + "\n", encoding="utf-8")


def run(folder: Path, args: list[str], env: dict[str, str]) -> dict[str, float]:
    started, before = time.perf_counter(), os.times()
    done = subprocess.run([sys.executable, "-m", "pytest", *args], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=600)
    wall, after = time.perf_counter() - started, os.times()
    lines = done.stdout.splitlines()
    found = {"wall": wall, "cpu": (after.children_user - before.children_user)
             + (after.children_system - before.children_system)}
    for name, pattern in (("reported", REPORTED), ("database", DATABASE), ("phases", PHASES)):
        for line in lines:
            match = pattern.search(line)
            if match:
                found[name] = float(match.group(1))
    if done.returncode not in (0, 5) or "reported" not in found:
        raise SystemExit(f"pytest {' '.join(args)} failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-2000:]}")
    return found


def machine() -> str:
    model = "?"
    with open("/proc/cpuinfo", encoding="utf-8") as info:
        for line in info:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{os.cpu_count()} cores ({model}), {platform.system()} {platform.release()}, Python {platform.python_version()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--all-plugins", action="store_true", help="load every installed pytest plugin")
    parser.add_argument("--old", type=Path, help="a checkout of an earlier commit, timed the same way beside this one")
    args = parser.parse_args()
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env.update(HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))  # the reference imports this checkout's plugin
    plugins = [] if args.all_plugins else ["-p", "pytest_ragretrieval.plugin"]
    if not args.all_plugins:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    common = ["-p", "no:cacheprovider", *plugins]
    gate = ["--rag-eval", "--rag-db=embedded", *common]
    load_before = os.getloadavg()
    sides = {"gate": ROOT, **({"old": args.old.resolve()} if args.old else {})}
    with tempfile.TemporaryDirectory(prefix="rag-warm-") as name:
        folders = {side: Path(name) / side for side in sides}
        for folder in folders.values():
            user_repository(folder)
        first = {side: run(folders[side], gate, dict(env, PYTHONPATH=str(code))) for side, code in sides.items()}
        results: dict[str, list[dict[str, float]]] = {side: [] for side in [*sides, "reference"]}
        for _ in range(args.rounds):
            for side, code in sides.items():
                results[side].append(run(folders[side], gate, dict(env, PYTHONPATH=str(code))))
            results["reference"].append(run(folders["gate"], ["--collect-only", "-q", *common], env))
    load_after = os.getloadavg()

    def median(which: str, field: str) -> str:
        values = [row[field] for row in results[which] if field in row]
        return f"{statistics.median(values):.2f}" if values else "-"

    print(f"machine: {machine()}")
    print(f"load average before {load_before[0]:.2f}/{load_before[1]:.2f}/{load_before[2]:.2f}, "
          f"after {load_after[0]:.2f}/{load_after[1]:.2f}/{load_after[2]:.2f}")
    print(f"plugins: {'all installed' if args.all_plugins else 'pytest and pytest-ragretrieval only'}; "
          f"first run (writes the rankings' entries): pytest {first['gate']['reported']:.2f} s, "
          f"wall {first['gate']['wall']:.2f} s")
    for side in sides:
        started = sum("database" in row for row in results[side])
        print(f"{side}: the database started in {started} of {args.rounds} rounds")
    print(f"median of {args.rounds} alternating rounds, seconds:")
    print("run                                   pytest  wall   cpu  gate phases")
    for which, label in (("gate", "warm, every input unchanged"), ("old", f"the same, {args.old}"),
                         ("reference", "pytest --collect-only (reference)")):
        if which not in results:
            continue
        print(f"{label:<36}  {median(which, 'reported'):>6}  {median(which, 'wall'):>4}  {median(which, 'cpu'):>4}  "
              f"{median(which, 'phases'):>11}")
    print(f"each round, wall ({', '.join(results)}): " + "; ".join(
        ", ".join(f"{row['wall']:.2f}" for row in rows) for rows in zip(*results.values(), strict=True)))
    ratio = statistics.median(row["wall"] for row in results["gate"]) / statistics.median(
        row["wall"] for row in results["reference"])
    print(f"wall ratio gate / reference {ratio:.2f}")


if __name__ == "__main__":
    main()
