"""What judging against the approved rankings costs: `evaluate` (gate/evaluation.py) on a synthetic
run, against scoring the run once (`score`, the reference: what the runner does for every run anyway).

Three retrievers (10,000 chunk ids, rankings of depth 5 drawn by random.Random(7)), `QUESTIONS`
questions with 1 to 3 gold chunks, k = 5, metrics precision, recall, f1, ndcg and mrr, significance
"randomization" (max-T over the family). The baseline is written by an update of a first run; the
judged run moves 10% of each ranking. Three shapes, alternating in each round with the reference:
  same      the labels the baseline kept are today's: one exam, approved rankings = recorded ones;
  relabel   half the questions gained a pooled gold chunk: two exams;
  kept      as relabel, and the baseline's approved rankings differ from its recorded ones (an update
            that kept the bar), so the last update's rankings are scored as well.
Printed: the median seconds of each, and each as a multiple of the reference. Every judgement starts with
`scoring/stats.py`'s kept draws and sums cleared, as in a fresh process: a later round reads no sum an
earlier one kept.

Usage: python benchmarks/judging.py [--questions 2000] [--rounds 5]
"""
from __future__ import annotations

import argparse
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from pytest_ragretrieval.baseline.fingerprint import questions_record
from pytest_ragretrieval.baseline.format import Baseline, parse
from pytest_ragretrieval.config.settings import Config, load_config
from pytest_ragretrieval.evalset.jsonl import GRADING_VERSION
from pytest_ragretrieval.evalset.records import Question
from pytest_ragretrieval.gate.evaluation import evaluate
from pytest_ragretrieval.gate.items import ItemKey
from pytest_ragretrieval.record.codec import encode
from pytest_ragretrieval.scoring import stats
from pytest_ragretrieval.scoring.evaluate import Run, score
from pytest_ragretrieval.scoring.metrics import METRICS_VERSION

NAMES = ("one", "two", "three")
CHUNKS = 10_000


def config(folder: Path) -> Config:
    text = ['chunks = "c.jsonl"', 'evalset = "e.jsonl"', "k = 5", 'metrics = ["precision", "recall", "f1", "ndcg", '
            '"mrr"]', 'significance = "randomization"', "tolerance = 0.02", "min_questions = 1"]
    for name in NAMES:
        text += [f"[retrievers.{name}]", 'type = "bm25"', f"k1 = {1.0 + NAMES.index(name) / 10}"]
    (folder / "rag.toml").write_text("\n".join(text) + "\n", encoding="utf-8")
    return load_config(str(folder / "rag.toml"), folder)


def fingerprint(cfg: Config, questions: Sequence[Question]) -> dict[str, object]:
    return {"yardstick": {"k": cfg.k, "metrics_version": METRICS_VERSION, "grading_version": GRADING_VERSION},
            "tokenizer": "jieba", "chunks": {"sha256": "c" * 64, "count": CHUNKS},
            "questions": questions_record(questions),
            "retrievers": {spec.name: spec.fingerprint for spec in cfg.retrievers}}


def rankings(rng: random.Random, questions: Sequence[Question]) -> dict[str, list[str]]:
    found = {}
    for question in questions:
        gold = list(question.relevance)
        noise = [f"c{rng.randrange(CHUNKS)}" for _ in range(12)]
        ranked = list(dict.fromkeys([*rng.sample(gold, k=rng.randint(0, len(gold))), *noise]))[:5]
        rng.shuffle(ranked)
        found[question.id] = ranked
    return found


def moved(rng: random.Random, found: Mapping[str, list[str]]) -> dict[str, list[str]]:
    return {qid: (list(reversed(ranking)) if rng.random() < 0.1 else ranking) for qid, ranking in found.items()}


def runs(cfg: Config, questions: Sequence[Question], found: Mapping[str, Mapping[str, list[str]]]) -> dict[str, Run]:
    return {name: Run(result=score(name, questions, found[name], cfg.metrics)) for name in NAMES}


def shapes(count: int, folder: Path) -> tuple[Callable[[], object], dict[str, Callable[[], object]]]:
    rng = random.Random(7)
    cfg = config(folder)
    base = tuple(Question(f"q{n:05d}", f"query {n}", {f"c{rng.randrange(CHUNKS)}": 1 for _ in range(rng.randint(1, 3))})
                 for n in range(count))
    relabelled = tuple(replace(q, relevance={**q.relevance, f"c{rng.randrange(CHUNKS)}": 2}) if n % 2 else q
                       for n, q in enumerate(base))
    first = {name: rankings(rng, base) for name in NAMES}
    second = {name: moved(rng, first[name]) for name in NAMES}
    selected = [ItemKey(name, "metric", spec.label) for name in NAMES for spec in cfg.metrics]

    def recorded(found: Mapping[str, Mapping[str, list[str]]], old: Baseline | None = None) -> Baseline:
        fp = fingerprint(cfg, base)
        done = evaluate(cfg, base, old, fp, runs(cfg, base, found), selected, update=True,
                        allow_regression=old is None)
        assert done.update is not None and done.update.record is not None
        return parse(cfg.baseline, encode(done.update.record))

    plain = recorded(first)
    small = {name: {qid: (ranking if n % 20 else list(reversed(ranking)))
                    for n, (qid, ranking) in enumerate(first[name].items())} for name in NAMES}
    kept = recorded(small, plain)

    def judge(baseline: Baseline, questions: Sequence[Question]) -> Callable[[], object]:
        fp = fingerprint(cfg, questions)
        today = runs(cfg, questions, second)
        return lambda: evaluate(cfg, questions, baseline, fp, today, selected)

    reference = lambda: [score(name, relabelled, second[name], cfg.metrics) for name in NAMES]  # noqa: E731
    return reference, {"same": judge(plain, base), "relabel": judge(plain, relabelled),
                       "kept": judge(kept, relabelled)}


def fresh() -> None:
    """The paired tests' kept draws and sums dropped, where this version of the package keeps them."""
    modules = [stats, *(module for module in [sys.modules.get("pytest_ragretrieval.scoring.large")] if module)]
    for module in modules:
        for name in ("_kept_sums", "_kept_packed", "_kept_flips", "_kept_indices"):
            kept = getattr(module, name, None)
            if kept is not None:
                kept.cache_clear()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        reference, judged = shapes(args.questions, Path(folder))
        times: dict[str, list[float]] = {"reference": [], **{name: [] for name in judged}}
        for _ in range(args.rounds):
            for name, work in [("reference", reference), *judged.items()]:
                fresh()
                start = time.perf_counter()
                work()
                times[name].append(time.perf_counter() - start)
    medians = {name: statistics.median(found) for name, found in times.items()}
    print(f"{platform.processor() or platform.machine()}, Python {sys.version.split()[0]}, {args.questions} questions "
          f"x {len(NAMES)} retrievers, {args.rounds} rounds, alternating")
    for name, value in medians.items():
        print(f"  {name:9s} {value:8.3f} s  {value / medians['reference']:6.1f}x the reference")


if __name__ == "__main__":
    main()
