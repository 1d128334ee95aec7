"""Start-up cost of the plugin when its flags are not given.

Runs `pytest --collect-only` on an empty project with the plugin loaded and with
`-p no:ragretrieval`, alternating, and prints the median of each and their ratio. The issue
asks for "nothing measurable": a ratio within run-to-run noise of 1.00.
Usage: python benchmarks/startup.py [rounds]
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def once(folder: Path, *extra: str) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *extra],
        cwd=folder, check=False, capture_output=True,
    )
    return time.perf_counter() - started


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        (folder / "test_empty.py").write_text("def test_nothing():\n    pass\n")
        once(folder)
        with_plugin, without = [], []
        for _ in range(rounds):
            with_plugin.append(once(folder))
            without.append(once(folder, "-p", "no:ragretrieval"))
    a, b = statistics.median(with_plugin), statistics.median(without)
    spread = statistics.pstdev(without) / b
    print(f"pytest --collect-only, median of {rounds}: with plugin {a * 1000:.1f} ms, "
          f"without {b * 1000:.1f} ms, ratio {a / b:.3f} (noise of the baseline run: {spread:.1%})")


if __name__ == "__main__":
    main()
