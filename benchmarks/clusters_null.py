"""The gate's tests on clustered questions under the null (issue 50 item 2): no true change, many pull requests.

Each simulated pull request: `clusters` documents of `size` questions each. Every document has a chance of
a hit drawn once from Beta(2, 2) (some documents are hard, some easy: its questions share it); before the
change each question's top-5 rank is drawn at its document's chance (a hit at rank 1 to 5, uniform, else
a miss). The harmless change touches each document with chance `touched`; in a touched document every
question is drawn again at a new chance for the document, drawn from the same Beta(2, 2). So before and
after are exchangeable document by document (the null the cluster sign-flip test needs holds), and the
questions of a touched document move together: the clustering the issue names.

Three metric items per pull request, as one retriever's: hit@5, reciprocal rank (0 for a miss) and hit@1.
An item fails when its mean falls (tolerance 0) and its one-sided p is below alpha, or, where its clusters
cannot reach alpha, by its fall alone (the gate's rule, `unreachable`); the family fails when any item does,
its p max-T-adjusted over the items tested. Printed, over the pull requests: how often an item fails (all three items'
verdicts pooled) and how often the family fails, each with its standard error, with clusters on (the gate:
whole documents flipped, `labels` of each question's document) and off (every question its own cluster,
the gate before clusters), through the gate's own `randomization_p` and `maxt` (scoring/stats.py).

With `--planted D`, a regression on top: after the harmless change, round(D x questions) questions that are
hits are made misses (drawn at random over every document), and hit@5's item is judged: printed, how often
the gate (clusters on) fails it and how often an exact enumeration of the documents' sign patterns written
here, apart from the gate's code, does.
Usage: python benchmarks/clusters_null.py [--prs 1000] [--clusters 12] [--size 10] [--touched 0.8] [--seed 0]
       [--planted 0.05]
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import time
from dataclasses import dataclass
from itertools import product

import numpy as np

from pytest_ragretrieval.bar.clusters import Clustering, unreachable
from pytest_ragretrieval.scoring.stats import labels, maxt, randomization_p

ALPHA = 0.05


@dataclass(frozen=True)
class Rates:
    """Failure rates over the pull requests: single items (pooled) and families, with clusters on and off."""

    prs: int
    items_on: float
    family_on: float
    items_off: float
    family_off: float


def _ranks(rng: np.random.Generator, chance: np.ndarray) -> np.ndarray:
    """Each question's rank within the top 5 (1 to 5) at its chance of a hit, else 0 (a miss)."""
    hit = rng.random(chance.size) < chance
    return np.where(hit, rng.integers(1, 6, chance.size), 0)


def _metrics(ranks: np.ndarray) -> list[np.ndarray]:
    """hit@5, reciprocal rank and hit@1 of each question."""
    return [(ranks > 0).astype(float), np.where(ranks > 0, 1.0 / np.maximum(ranks, 1), 0.0),
            (ranks == 1).astype(float)]


def _change(rng: np.random.Generator, clusters: int, size: int, touched: float) -> tuple[np.ndarray, np.ndarray]:
    """The ranks before and after one harmless pull request; questions in document order."""
    document = np.repeat(np.arange(clusters), size)
    chance = rng.beta(2, 2, clusters)
    before = _ranks(rng, chance[document])
    again = rng.random(clusters) < touched
    redrawn = _ranks(rng, rng.beta(2, 2, clusters)[document])
    return before, np.where(again[document], redrawn, before)


def pull_request(rng: np.random.Generator, clusters: int, size: int, touched: float) -> list[np.ndarray]:
    """The three items' per-question differences (after - before) of one harmless pull request, rounded to the
    6 digits a run stores; questions in document order."""
    before, after = _change(rng, clusters, size, touched)
    return [np.round(a - b, 6) for a, b in zip(_metrics(after), _metrics(before), strict=True)]


def planted(rng: np.random.Generator, clusters: int, size: int, touched: float, drop: float) -> np.ndarray:
    """hit@5's per-question differences of a harmless pull request with round(drop x questions) hits made misses."""
    before, after = _change(rng, clusters, size, touched)
    hits = np.flatnonzero(after > 0)
    lost = rng.choice(hits, min(hits.size, round(drop * before.size)), replace=False)
    after[lost] = 0
    return (after > 0).astype(float) - (before > 0).astype(float)


def enumerated(differences: np.ndarray, clusters: int) -> float:
    """The exact one-sided p of flipping whole documents (contiguous, equal sizes), apart from the gate's code:
    the share of the 2^G sign patterns whose sum is at most the observed one."""
    sums = differences.reshape(clusters, -1).sum(axis=1)
    observed = sums.sum()
    flips = np.array(list(product([1, -1], repeat=clusters)))
    return float(np.mean(flips @ sums <= observed + 1e-9))


def power(prs: int, clusters: int, size: int, touched: float, drop: float, seed: int) -> tuple[float, float]:
    """How often hit@5's item fails with a planted drop: by the gate (clusters on), and by `enumerated`."""
    rng = np.random.default_rng(seed)
    grouped = Clustering({f"q{index}": f"doc{index // size}" for index in range(clusters * size)}, {}, "documents")
    gate = exact = 0
    for _ in range(prs):
        item = planted(rng, clusters, size, touched, drop)
        gate += _fails([item], grouped)[0]
        alone = 2.0 ** -clusters >= ALPHA
        exact += bool(item.mean() < 0 and (alone or enumerated(item, clusters) < ALPHA))
    return gate / prs, exact / prs


def _fails(items: list[np.ndarray], clustering: Clustering | None) -> tuple[int, bool]:
    """How many items fail on their own, and whether the family fails, by the gate's rule: an item whose moved
    clusters cannot reach alpha (`unreachable`) fails when its mean falls (tolerance 0); the others when it
    falls and their p (max-T-adjusted over them, for the family) is below alpha."""
    ids = [f"q{index}" for index in range(items[0].size)]
    clusters = None if clustering is None else labels([clustering.key(qid) for qid in ids])
    if unreachable(clustering, ids, ALPHA):
        failing = sum(1 for item in items if item.mean() < 0)
        return failing, failing > 0
    failing = sum(1 for item in items if item.mean() < 0 and randomization_p(item, clusters=clusters) < ALPHA)
    adjusted = maxt(items, "randomization", alpha=ALPHA, clusters=clusters)
    family = any(p is not None and p < ALPHA and item.mean() < 0 for item, p in zip(items, adjusted, strict=True))
    return failing, family


def simulate(prs: int, clusters: int, size: int, touched: float, seed: int) -> Rates:
    rng = np.random.default_rng(seed)
    grouped = Clustering({f"q{index}": f"doc{index // size}" for index in range(clusters * size)}, {}, "documents")
    items_on = items_off = family_on = family_off = 0
    for _ in range(prs):
        items = pull_request(rng, clusters, size, touched)
        failing, family = _fails(items, grouped)
        items_on, family_on = items_on + failing, family_on + family
        failing, family = _fails(items, None)
        items_off, family_off = items_off + failing, family_off + family
    return Rates(prs, items_on / (3 * prs), family_on / prs, items_off / (3 * prs), family_off / prs)


def _with_error(rate: float, count: int) -> str:
    return f"{100 * rate:.1f}% ± {100 * math.sqrt(rate * (1 - rate) / count):.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prs", type=int, default=1000)
    parser.add_argument("--clusters", type=int, default=12)
    parser.add_argument("--size", type=int, default=10)
    parser.add_argument("--touched", type=float, default=0.8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--planted", type=float, default=None)
    args = parser.parse_args()
    started = time.perf_counter()
    if args.planted is not None:
        gate, exact = power(args.prs, args.clusters, args.size, args.touched, args.planted, args.seed)
        print(f"{args.prs} pull requests with a planted {args.planted:g} drop of hit@5, {args.clusters} documents x "
              f"{args.size} questions, touched {args.touched}, seed {args.seed}: the gate fails "
              f"{_with_error(gate, args.prs)}, the exact enumeration {_with_error(exact, args.prs)} "
              f"({time.perf_counter() - started:.0f} s)")
        return
    found = simulate(args.prs, args.clusters, args.size, args.touched, args.seed)
    print(f"{args.prs} harmless pull requests, {args.clusters} documents x {args.size} questions, each document "
          f"touched with chance {args.touched}, seed {args.seed}; alpha {ALPHA}, tolerance 0, one-sided "
          "randomization test, max-T over hit@5, reciprocal rank and hit@1")
    print(f"clusters on  (whole documents flipped):  single items fail {_with_error(found.items_on, 3 * found.prs)}, "
          f"the family {_with_error(found.family_on, found.prs)}")
    print(f"clusters off (each question its own):    single items fail {_with_error(found.items_off, 3 * found.prs)}, "
          f"the family {_with_error(found.family_off, found.prs)}")
    print(f"({time.perf_counter() - started:.0f} s on {platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()})")


if __name__ == "__main__":
    main()
