"""The seeded damage campaign of issue 32: `python benchmarks/fuzz_inputs.py --tries 300 [--seed 0]`.

Each try damages one file the gate or the `ragretrieval` command reads (the baseline, a user
dictionary, a run file, CHANGES.json, an approval record) one way (tests/fuzz_classes.py lists
the classes), runs what reads it, and counts: tracebacks and internal errors, changed inputs, and
silent passes (a run that ends well without naming the damaged file). Prints one row per file and
class, then the totals; exits 1 when any try gave a traceback, changed an input or passed silently.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fuzz_classes import campaign  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        tallies = campaign(Path(folder), args.tries, args.seed)
    print(f"{'file':<26} {'class':<26} {'tries':>5} {'refused':>7} {'failed':>6} {'named':>5} {'silent':>6} "
          f"{'tracebacks':>10} {'changed':>7}")
    for (name, kind), tally in tallies.items():
        print(f"{name:<26} {kind:<26} {tally.tries:>5} {tally.refused:>7} {tally.failed:>6} {tally.named:>5} "
              f"{tally.silent:>6} {len(tally.tracebacks):>10} {len(tally.changed):>7}")
    totals = [sum(getattr(t, key) for t in tallies.values()) for key in ("tries", "silent")]
    faults = sum(len(t.tracebacks) for t in tallies.values())
    changed = sum(len(t.changed) for t in tallies.values())
    print(f"{totals[0]} tries (seed {args.seed}) in {time.perf_counter() - started:.0f} s: {faults} tracebacks or "
          f"internal errors, {changed} changed inputs, {totals[1]} silent passes")
    for (name, kind), tally in tallies.items():
        for line in [*tally.tracebacks, *tally.changed, *(f"silent: {e}" for e in tally.examples)]:
            print(f"  {name} {kind}: {line}")
    return 1 if faults or changed or totals[1] else 0


if __name__ == "__main__":
    raise SystemExit(main())
