"""A pull request that changes the chunker, on CMRC 2018 dev: the gate's verdict against the side-by-side run.

CMRC 2018 dev (github.com/ymcui/cmrc2018, CC BY-SA 4.0; read from the path given, never committed) as
documents and answer spans, as benchmarks/chunking.py builds it, bm25 (jieba) alone, k = 5. Three gate
sessions in a temporary folder:

1. side by side: `[chunker]` at FROM and `[chunkings.to]` at TO in one session, bm25 on each, compared;
2. the baseline recorded at FROM alone;
3. the pull request: `[chunker]` at TO, `--rag-eval`, its `--rag-json`.

It prints each span item's delta both ways (the pull request's against its bar, the side-by-side pair's TO minus
FROM), their largest difference, the items that failed and how many questions each kind of metric compared on.

    python benchmarks/chunker_change.py /tmp/cmrc2018_dev.json [--questions 3219] [--from 512/64] [--to 256/32]
        [--metrics recall,char_recall,answer_hit,char_recall@1000c,answer_hit@1000c]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
METRICS = "recall,char_recall,answer_hit,char_recall@1000c,answer_hit@1000c"


def chunking_module() -> Any:
    """benchmarks/chunking.py, whose CMRC project and TOML writer this reuses."""
    spec = importlib.util.spec_from_file_location("chunking_benchmark", ROOT / "benchmarks" / "chunking.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tokens(shape: str) -> dict[str, Any]:
    """`512/64` as a `tokens` chunker in `unicode` tokens."""
    size, overlap = (int(part) for part in shape.split("/"))
    return {"type": "tokens", "size": size, "overlap": overlap, "tokenizer": "unicode"}


def gate(module: Any, settings: dict[str, Any], work: Path, *flags: str) -> tuple[int, str, dict[str, Any]]:
    """One gate session on `settings`: its exit status, its output and its --rag-json."""
    config = work / "ragretrieval.toml"
    config.write_text(module.toml_text(settings), encoding="utf-8")
    results = work / "results.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")]))}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q", "-m", "rag_eval",
               f"--rag-config={config}", f"--rag-json={results}", *flags]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    if done.returncode not in (0, 1):
        sys.exit(f"the gate failed ({' '.join(command)}):\n{done.stdout[-3000:]}{done.stderr[-2000:]}")
    found: dict[str, Any] = json.loads(results.read_text(encoding="utf-8"))
    return done.returncode, done.stdout, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cmrc", type=Path)
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--from", dest="before", default="512/64")
    parser.add_argument("--to", dest="after", default="256/32")
    parser.add_argument("--metrics", default=METRICS, help=f"the config's `metrics`, comma-separated ({METRICS})")
    args = parser.parse_args()
    module = chunking_module()
    with tempfile.TemporaryDirectory(prefix="rag-chunker-change-") as folder:
        work = Path(folder)
        settings = module.cmrc_settings(args.cmrc, work, args.questions)
        metrics = args.metrics.split(",")
        settings.update(k=5, metrics=metrics, significance="randomization", baseline=str(work / "baseline.json"))
        bm25 = settings["retrievers"]["bm25"]
        both = {**settings, "chunker": tokens(args.before), "chunkings": {"to": tokens(args.after)},
                "retrievers": {"bm25": bm25, "bm25_to": {**bm25, "chunking": "to"}}, "compare": [["bm25_to", "bm25"]]}
        _, _, side = gate(module, both, work, "--rag-update-baseline")
        (work / "baseline.json").unlink()
        alone = {**settings, "chunker": tokens(args.before), "retrievers": {"bm25": bm25}}
        gate(module, alone, work, "--rag-update-baseline")
        status, out, pr = gate(module, {**alone, "chunker": tokens(args.after)}, work, "--rag-eval")
    pairs = {c["metric"]: c for c in side["comparisons"]}
    compared = pr["retrievers"]["bm25"]["comparison"]
    print(f"CMRC 2018 dev, bm25 (jieba), k=5: a pull request from {args.before} to {args.after}")
    print(f"{'item':<20} {'pull request':>12} {'side by side':>12} {'p':>8}")
    gap = 0.0
    for label in [label for label in compared if label in pairs]:
        ours, theirs = compared[label]["delta"], pairs[label]["delta"]
        gap = max(gap, abs(ours - theirs))
        print(f"{label:<20} {ours:>+12.4f} {theirs:>+12.4f} {compared[label]['p_value']:>8.4f}  "
              f"({compared[label]['questions']} questions)")
    print(f"largest difference: {gap:.6f}")
    print(f"gate exit status {status}; failed: " + ", ".join(
        line.split(" - ")[0].removeprefix("FAILED ") for line in out.splitlines() if line.startswith("FAILED")))
    print("\n".join(line for line in out.splitlines() if "across the chunker change" in line))


if __name__ == "__main__":
    main()
