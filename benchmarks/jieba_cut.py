"""Our cut of jieba 0.42.1 against jieba's own, on the same texts, alternating, in one process.

Reads the chunks and questions of a gate project's data folder (`scale.py` generates one:
benchmarks/.work/gate-20k/data), builds one jieba.Tokenizer and our Cut over it (the Cut's
construction, its dictionary tables, is timed apart), then, for each round, cuts every text in
accurate mode and in search mode with jieba and with ours, alternating, and checks that every
token list is equal. Prints each time, the ratios (jieba / ours, best of the rounds) and the
machine's load average.

Usage: python benchmarks/jieba_cut.py [DATA] [--rounds 2]
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import time
from pathlib import Path

import jieba

from pytest_ragretrieval.retrievers.jieba_cut import Cut

HERE = Path(__file__).resolve().parent


def texts(data: Path) -> list[str]:
    found = [json.loads(line)["text"] for line in (data / "chunks.jsonl").open(encoding="utf-8")]
    return found + [json.loads(line)["query"] for line in (data / "evalset.jsonl").open(encoding="utf-8")]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("data", type=Path, nargs="?", default=HERE / ".work" / "gate-20k" / "data")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    corpus = texts(args.data)
    print(f"{len(corpus)} texts, {sum(map(len, corpus)):,} characters; {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}", flush=True)
    jieba.setLogLevel(logging.WARNING)
    theirs = jieba.Tokenizer()
    started = time.perf_counter()
    theirs.initialize()
    print(f"jieba's dictionary loaded in {time.perf_counter() - started:.2f}s", flush=True)
    started = time.perf_counter()
    ours = Cut(theirs)
    print(f"our tables built in {time.perf_counter() - started:.2f}s", flush=True)
    modes = {
        "cut": (lambda: [list(theirs.cut(text)) for text in corpus], lambda: list(ours.cut_many(corpus))),
        "cut_for_search": (lambda: [list(theirs.cut_for_search(text)) for text in corpus],
                           lambda: list(ours.search_many(corpus))),
    }
    best: dict[tuple[str, str], float] = {}
    for round_ in range(args.rounds):
        for mode, (jiebas, ours_) in modes.items():
            results = {}
            for side, run in (("jieba", jiebas), ("ours", ours_)):
                started = time.perf_counter()
                results[side] = run()
                took = time.perf_counter() - started
                best[mode, side] = min(took, best.get((mode, side), took))
                print(f"round {round_ + 1}: {mode:<15} {side:<6} {took:6.2f}s", flush=True)
            if results["jieba"] != results["ours"]:
                raise SystemExit(f"{mode}: the token lists differ")
    for mode in modes:
        print(f"{mode}: jieba {best[mode, 'jieba']:.2f}s, ours {best[mode, 'ours']:.2f}s, "
              f"{best[mode, 'jieba'] / best[mode, 'ours']:.2f}x; all {len(corpus)} token lists equal")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
