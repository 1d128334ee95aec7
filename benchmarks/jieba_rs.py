"""`tokenizer = "jieba-rs"` (rjieba, jieba's Rust port) against jieba 0.42.1 and our cut of it, one process.

Reads a gate project's data folder (chunks.jsonl and evalset.jsonl: the bundled sample is
`fixtures`) or a SQuAD-shaped JSON file (CMRC 2018's dev set: every paragraph's context and every
question), then, for each round, cuts every text in accurate mode (HMM on) with jieba, with ours
and with jieba-rs, alternating. Prints each time, the best of the rounds, the ratios, and how many
of jieba's tokens jieba-rs cuts otherwise (docs/retrievers.md says where). Dictionaries are loaded
before timing.

Usage: python benchmarks/jieba_rs.py DATA|FILE.json [--rounds 3]
"""
from __future__ import annotations

import argparse
import difflib
import json
import logging
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path

import jieba
import rjieba

from pytest_ragretrieval.retrievers.jieba_cut import Cut


def texts(source: Path) -> list[str]:
    if source.is_dir():
        lines = (source / "chunks.jsonl").read_text(encoding="utf-8").splitlines()
        lines += (source / "evalset.jsonl").read_text(encoding="utf-8").splitlines()
        return [record.get("text", record.get("query")) for record in map(json.loads, lines)]
    articles = json.loads(source.read_text(encoding="utf-8"))["data"]
    paragraphs = [paragraph for article in articles for paragraph in article["paragraphs"]]
    return [p["context"] for p in paragraphs] + [qa["question"] for p in paragraphs for qa in p["qas"]]


def differing(theirs: list[list[str]], ours: list[list[str]]) -> tuple[int, int]:
    """(jieba's tokens in the spans where the lists differ, jieba-rs's tokens there)."""
    found = [0, 0]
    for a, b in zip(theirs, ours, strict=True):
        if a != b:
            for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
                if op != "equal":
                    found[0] += i2 - i1
                    found[1] += j2 - j1
    return found[0], found[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("source", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    corpus = texts(args.source)
    print(f"{len(corpus)} texts, {sum(map(len, corpus)):,} characters; {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}", flush=True)
    jieba.setLogLevel(logging.WARNING)
    theirs = jieba.Tokenizer()
    theirs.initialize()
    ours = Cut(theirs)
    rust = rjieba.Jieba()
    rust.cut("预热")
    sides: dict[str, Callable[[], list[list[str]]]] = {
        "jieba": lambda: [list(theirs.cut(text)) for text in corpus],
        "ours": lambda: list(ours.cut_many(corpus)),
        "jieba-rs": lambda: [rust.cut(text) for text in corpus],
    }
    best: dict[str, float] = {}
    results: dict[str, list[list[str]]] = {}
    for round_ in range(args.rounds):
        for side, run in sides.items():
            started = time.perf_counter()
            results[side] = run()
            took = time.perf_counter() - started
            best[side] = min(took, best.get(side, took))
            print(f"round {round_ + 1}: {side:<8} {took:6.3f}s", flush=True)
    if results["jieba"] != results["ours"]:
        raise SystemExit("jieba and ours differ")
    total = sum(map(len, results["jieba"]))
    theirs_n, rust_n = differing(results["jieba"], results["jieba-rs"])
    print(f"best of {args.rounds}: jieba {best['jieba']:.3f}s, ours {best['ours']:.3f}s, "
          f"jieba-rs {best['jieba-rs']:.3f}s; jieba-rs is {best['jieba'] / best['jieba-rs']:.1f}x jieba, "
          f"{best['ours'] / best['jieba-rs']:.1f}x ours")
    print(f"{theirs_n} of jieba's {total:,} tokens are {rust_n} other tokens of jieba-rs")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
