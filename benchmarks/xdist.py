"""The gate under pytest-xdist: `-n 2` against `-n 0`, alternating, three ways.

- `gate`: the gate alone (`pytest --rag-eval -m rag_eval`) in the project.
- `empty`: 15 empty tests and no gate: what pytest-xdist itself costs (starting and stopping
  workers), the floor under any `-n 2` run.
- `gate+suite`: the gate beside a suite of `--suite` CPU-bound tests of 0.25 s each (a copy of
  the project's config, its data linked), as in a real repository: the controller runs and
  judges the gate, the workers run the suite.

Each run is its own process on a warm cache; prints every wall time, the medians and the ratio.
Runs write bytecode, as Python does by default, whatever PYTHONDONTWRITEBYTECODE says here:
without it pytest compiles every module it rewrites (this plugin's, hypothesis's) again in every
process, which charges each extra worker for compiling, not for anything it runs.
Usage: python benchmarks/xdist.py [PROJECT (default: this repository)] [--rounds 3] [--suite 40]
       [--args=--rag-db=embedded]
"""
from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUSY_TEST = """import time


def spin(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


{tests}
"""


def once(folder: Path, workers: str, args: list[str]) -> float:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", workers, *args],
        cwd=folder, env=env, capture_output=True, text=True, check=False,
    )
    took = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"-n {workers} in {folder} exited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return took


def suite_project(project: Path, work: Path, tests: int, seconds: float) -> Path:
    """The project's config beside a test file of `tests` busy tests; everything else linked."""
    folder = work / "gate-and-suite"
    folder.mkdir()
    for entry in project.iterdir():
        if entry.name not in ("tests", "pyproject.toml") and (entry.name == ".rag-cache" or entry.name[0] != "."):
            (folder / entry.name).symlink_to(entry)
    text = (project / "pyproject.toml").read_text(encoding="utf-8")
    if "[tool.pytest.ini_options]" not in text:
        text = "[tool.pytest.ini_options]\n\n" + text
    (folder / "pyproject.toml").write_text(text, encoding="utf-8")
    body = "\n\n".join(f"def test_busy_{i}():\n    spin({seconds})" for i in range(tests))
    (folder / "test_suite.py").write_text(BUSY_TEST.format(tests=body), encoding="utf-8")
    return folder


def empty_project(work: Path) -> Path:
    folder = work / "empty"
    folder.mkdir()
    (folder / "pyproject.toml").write_text("[tool.pytest.ini_options]\n", encoding="utf-8")
    (folder / "test_empty.py").write_text("".join(f"def test_{i}():\n    pass\n\n\n" for i in range(15)), encoding="utf-8")
    return folder


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("project", type=Path, nargs="?", default=Path(__file__).resolve().parents[1])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--suite", type=int, default=40, help="busy tests of 0.25 s beside the gate")
    parser.add_argument("--args", default="", help="more pytest arguments for the gate, as one string")
    args = parser.parse_args()
    gate = ["--rag-eval", *shlex.split(args.args)]
    work = Path(tempfile.mkdtemp(prefix="rag-xdist-"))
    try:
        cases = {
            "gate": (args.project.resolve(), [*gate, "-m", "rag_eval"]),
            "empty": (empty_project(work), []),
            "gate+suite": (suite_project(args.project.resolve(), work, args.suite, 0.25), gate),
        }
        for folder, extra in cases.values():  # warm the caches: the gate's, the page cache, bytecode
            once(folder, "2", extra)
        times: dict[tuple[str, str], list[float]] = {(case, n): [] for case in cases for n in ("0", "2")}
        for round_ in range(args.rounds):
            for case, (folder, extra) in cases.items():
                for n in ("0", "2"):
                    times[case, n].append(once(folder, n, extra))
                    print(f"round {round_ + 1}: {case:<10} -n {n}: {times[case, n][-1]:.1f}s", flush=True)
        print(f"\nmedians of {args.rounds} ({args.suite} busy tests of 0.25 s in gate+suite):")
        for case in cases:
            a, b = statistics.median(times[case, "0"]), statistics.median(times[case, "2"])
            print(f"{case:<10} -n 0 {a:5.1f}s  -n 2 {b:5.1f}s  -n 2 / -n 0 = {b / a:.2f}  (-n 2 - -n 0 = {b - a:+.1f}s)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
