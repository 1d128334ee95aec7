"""Cold tokenizing with `workers = 1` against `workers = 2`, on the machine as it is and beside a CPU-bound load.

Each run is a fresh Python process (so jieba's dictionary is loaded in it, as in a cold gate run)
tokenizing a corpus into an empty cache folder through `cached_tokens`; it reports its own time
(from before the dictionary loads to the pack written), how many processes the rule chose, and
the pack's name (the sha256 of its bytes: equal names, byte-identical packs). Runs alternate
1, 2 / 2, 1 round by round. The load is BUSY processes spinning `while True: pass`, started by
this script for the loaded half and killed before it ends.

Corpora: benchmarks/corpus.py's synthetic Chinese chunks (100-300 characters) at the sizes asked,
and `cmrc`: 848 passages of about 640 characters (three synthetic chunks each), CMRC 2018's size.
Usage: python benchmarks/workers.py [--sizes cmrc,20000,100000] [--rounds 3] [--busy 2] [--no-forked]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import corpus

HERE = Path(__file__).resolve().parent
ONE_RUN = """
import json, resource, sys, time
from pathlib import Path
from pytest_ragretrieval.cache.store import Cache
from pytest_ragretrieval.retrievers import corpus_tokens

texts = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
chosen = []
rule = (lambda workers, measured: workers) if sys.argv[4] == "forced" else corpus_tokens.processes
corpus_tokens.processes = lambda workers, measured: chosen.append(rule(workers, measured)) or chosen[-1]
space = Cache(Path(sys.argv[3])).namespace("tokens", corpus_tokens.tokenizer_id("jieba"), dtype="<i4")
started = time.perf_counter()
corpus_tokens.cached_tokens(texts, "jieba", space, int(sys.argv[2]))
took = time.perf_counter() - started
cpu = sum(resource.getrusage(who).ru_utime + resource.getrusage(who).ru_stime
          for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
(pack,) = space.folder.glob("*.pack")
print(json.dumps({"seconds": took, "cpu": cpu, "processes": chosen[0] if chosen else 1, "pack": pack.name}))
"""


def texts_of(size: str) -> list[str]:
    if size == "cmrc":
        chunks = [str(row["text"]) for row in corpus.generate(848 * 3, 1).chunks]
        return ["".join(chunks[i:i + 3]) for i in range(0, len(chunks), 3)]
    return [str(row["text"]) for row in corpus.generate(int(size), 1).chunks]


VARIANTS = {"1": (1, "rule"), "2": (2, "rule"), "2 forked": (2, "forced")}
"""workers = 1; workers = 2 as the rule chooses; and, for comparison, 2 processes whatever the rule says."""


def run_once(texts: Path, variant: str, work: Path) -> dict[str, object]:
    workers, rule = VARIANTS[variant]
    with tempfile.TemporaryDirectory(dir=work) as cache:
        done = subprocess.run(
            [sys.executable, "-c", ONE_RUN, str(texts), str(workers), cache, rule],
            capture_output=True, text=True, timeout=1800, check=True,
        )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text(encoding="ascii").split()[:3])


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def measure(texts: Path, rounds: int, work: Path, order: list[str]) -> dict[str, list[dict[str, object]]]:
    """Each variant `rounds` times, the order rotated round by round."""
    runs: dict[str, list[dict[str, object]]] = {variant: [] for variant in VARIANTS}
    for number in range(rounds):
        for variant in order[number % len(order):] + order[:number % len(order)]:
            runs[variant].append(run_once(texts, variant, work))
    return runs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="cmrc,20000,100000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--busy", type=int, default=2, help="busy-loop processes beside the loaded runs")
    parser.add_argument("--forked", action=argparse.BooleanOptionalAction, default=True,
                        help="also run 2 processes whatever the rule says")
    args = parser.parse_args()
    order = list(VARIANTS) if args.forked else ["1", "2"]
    work = HERE / ".work" / "workers"
    work.mkdir(parents=True, exist_ok=True)
    print(f"machine: {os.cpu_count()} CPUs ({len(os.sched_getaffinity(0))} usable), {cpu_model()}, "
          f"Python {platform.python_version()}; load average at start {loadavg()}")
    print("| corpus | characters | beside | load avg (1/5/15 min) | workers=1 s | workers=2 s | ratio 2/1 "
          "| processes chosen | 2 forked s | ratio forked/1 | packs equal |")
    print("| --- | ---: | --- | --- | ---: | ---: | ---: | --- | ---: | ---: | --- |")
    details: list[str] = []
    for size in args.sizes.split(","):
        texts = texts_of(size)
        path = work / f"texts-{size}.json"
        path.write_text(json.dumps(texts, ensure_ascii=False), encoding="utf-8")
        for busy in (0, args.busy) if args.busy else (0,):
            spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
            try:
                seen = loadavg()
                runs = measure(path, args.rounds, work, order)
            finally:
                for spinner in spinners:
                    spinner.kill()
                    spinner.wait()
            one, two, forked = (statistics.median(float(str(run["seconds"])) for run in runs[v]) if runs[v] else math.nan
                                for v in VARIANTS)
            chosen = ",".join(str(run["processes"]) for run in runs["2"])
            equal = len({run["pack"] for variant in VARIANTS for run in runs[variant]}) == 1
            label = f"{busy} busy loops" if busy else "as it is"
            details.append(f"- {size}, {label}: " + ", ".join(
                f"{variant} {float(str(run['seconds'])):.1f}/{float(str(run['cpu'])):.1f}"
                for number in range(args.rounds) for variant in order if number < len(runs[variant])
                for run in [runs[variant][number]]))
            print(f"| {size} | {sum(map(len, texts)):,} | {label} | {seen} | {one:.2f} | {two:.2f} | {two / one:.2f} "
                  f"| {chosen} | {forked:.2f} | {forked / one:.2f} | {'yes' if equal else 'NO'} |", flush=True)
    print(f"load average at end {loadavg()}; {args.rounds} rounds each, medians. Each run, round by round, "
          "as variant wall s / CPU s (this process and its forked ones, the whole process's):")
    for line in details:
        print(line)


if __name__ == "__main__":
    main()
