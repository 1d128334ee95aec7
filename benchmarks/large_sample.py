"""The large-sample path against resampling: generated items judged both ways, the largest |difference|.

Items of 1,000 to 10,000 questions, of which 10% to 100% moved (at least 1,000, where the path can be
used), per-question differences as metrics make them (a hit gained or lost: +1/-1; reciprocal ranks and
nDCG's discounts; recall in thirds), shifted so that the p's spread from about 0.06 to 1. Each item's
p is taken as the gate takes it at alpha 0.05 (`alpha` given: the normal limit where `_large_p` allows
it) and resampled (no `alpha`: 9,999 sign flips or bootstrap draws, the test's Monte Carlo error
included, sqrt(p(1 - p) / 9,999): 0.003 at p 0.1, 0.005 at 0.5).
Printed: per kind and method, the items where the path was used, the largest |p_large - p_resampled|
and the item's p's there, and the items resampled because they were within CLOSE of alpha or below.

Usage: python benchmarks/large_sample.py [--items 12]
"""
from __future__ import annotations

import argparse
import math

import numpy as np

from pytest_ragretrieval.scoring.stats import bootstrap_p, randomization_p

KINDS = {
    "hit": np.array([-1.0, 1.0]),
    "reciprocal rank": np.array([1.0 - 0.5, 0.5 - 1 / 3, 1 / 3 - 0.25, 0.25 - 0.2, 1.0 - 0.2, 0.5 - 0.2]),
    "ndcg": np.array([1.0 - 1 / math.log2(3), 1 / math.log2(3) - 0.5, 1.0 - 1 / math.log2(6), 0.5 - 1 / math.log2(5)]),
    "recall in thirds": np.array([1 / 3, 2 / 3, 1.0]),
}


METHODS = ("randomization", "bootstrap")


def item(rng: np.random.Generator, kind: str) -> np.ndarray:
    n = int(rng.choice([1000, 2000, 5000, 10000]))
    moved = max(1000, int(n * rng.choice([0.1, 0.25, 0.5, 1.0])))
    data = np.zeros(n)
    size = rng.choice(KINDS[kind], moved)
    lean = rng.uniform(0.5, 0.53)
    data[rng.choice(n, moved, replace=False)] = np.where(rng.random(moved) < lean, size, -size)
    return np.round(data, 6)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=12)
    args = parser.parse_args()
    rng = np.random.default_rng(2026)
    print(f"{args.items} items per kind, alpha 0.05, 9,999 resamples")
    for method in METHODS:
        for kind in KINDS:
            worst, at, used, resampled = 0.0, (0.0, 0.0), 0, 0
            for _ in range(args.items):
                data = item(rng, kind)
                test = randomization_p if method == "randomization" else bootstrap_p
                if method == "bootstrap" and data.size > 2000:
                    data = data[:2000] if np.count_nonzero(data[:2000]) >= 1000 else data[data != 0][:2000]
                large, drawn = test(data, alpha=0.05), test(data)
                if large == drawn:
                    resampled += 1
                    continue
                used += 1
                if abs(large - drawn) >= worst:
                    worst, at = abs(large - drawn), (large, drawn)
            print(f"  {method:13s} {kind:17s} path used on {used:2d}, resampled {resampled:2d}; "
                  f"max |dp| {worst:.4f} (large {at[0]:.4f}, resampled {at[1]:.4f})")


if __name__ == "__main__":
    main()
