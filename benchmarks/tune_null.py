"""The sweep's statistics under the null (issue 51): settings of equal quality, many sweeps.

Each simulated sweep: `questions` tune questions and as many gate questions, each with its own chance of
a hit (drawn once per question from Beta(2, 2)); the default hits or misses at that chance, and each of
`settings` settings agrees with the default except on a share of the questions (each setting its own,
2–10%), where it draws again at the same chance. So every setting is exactly as good as the default, and
(default, setting) are exchangeable question by question: the sign-flip null holds. The sweep then picks
its best setting on the tune questions (`scoring/sweep.py`'s `judged`, the command's own code) and
measures it on the gate's.

Printed, over the sweeps: how often the selection-aware p and the naive best-vs-default p fall at or below
α 0.05, the winner's mean tune gain, mean gate gain and mean optimism, each with its standard error, and
the share of sweeps whose best gain reaches +1.1 points (the size a public project published as an
improvement). Usage: python benchmarks/tune_null.py [--sweeps 1000] [--draws 999] [--questions 265]
[--settings 10] [--seed 0]
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
from dataclasses import dataclass

import numpy as np

from pytest_ragretrieval.scoring.sweep import judged


@dataclass(frozen=True)
class Summary:
    sweeps: int
    selection_rate: float
    naive_rate: float
    tune_gain: tuple[float, float]
    gate_gain: tuple[float, float]
    optimism: tuple[float, float]
    reached: float
    """Share of sweeps whose best tune gain is at least +1.1 points."""


def _side(rng: np.random.Generator, chance: np.ndarray, settings: int) -> tuple[np.ndarray, np.ndarray]:
    """(settings x questions, default) hits of equal quality."""
    default = (rng.random(chance.size) < chance).astype(np.float64)
    rows = []
    for _ in range(settings):
        share = rng.uniform(0.02, 0.10)
        again = rng.random(chance.size) < share
        redrawn = (rng.random(chance.size) < chance).astype(np.float64)
        rows.append(np.where(again, redrawn, default))
    return np.asarray(rows), default


def _mean_se(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), statistics.stdev(values) / math.sqrt(len(values))


def simulate(sweeps: int, draws: int, questions: int, settings: int, seed: int, alpha: float = 0.05) -> Summary:
    rng = np.random.default_rng(seed)
    selection = naive = reached = 0
    tune_gains: list[float] = []
    gate_gains: list[float] = []
    optimism: list[float] = []
    for sweep in range(sweeps):
        tune_chance, gate_chance = rng.beta(2, 2, questions), rng.beta(2, 2, questions)
        tune, tune_default = _side(rng, tune_chance, settings)
        gate, gate_default = _side(rng, gate_chance, settings)
        found = judged(tune, tune_default, gate, gate_default, draws=draws, seed=seed * 100_003 + sweep)
        selection += found.p <= alpha
        naive += found.naive_p <= alpha
        reached += found.tune_gain >= 0.011 - 1e-12
        assert found.gate_gain is not None and found.optimism is not None
        tune_gains.append(found.tune_gain)
        gate_gains.append(found.gate_gain)
        optimism.append(found.optimism)
    return Summary(sweeps, selection / sweeps, naive / sweeps, _mean_se(tune_gains), _mean_se(gate_gains),
                   _mean_se(optimism), reached / sweeps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=999)
    parser.add_argument("--questions", type=int, default=265)
    parser.add_argument("--settings", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    found = simulate(args.sweeps, args.draws, args.questions, args.settings, args.seed)
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{found.sweeps} sweeps of {args.settings} equal settings, {args.questions} tune + {args.questions} gate "
          f"questions (hit), {args.draws} sign-flip draws each, seed {args.seed}")
    print(f"rejected at alpha 0.05: selection-aware p {found.selection_rate:.1%}, naive best-vs-default p "
          f"{found.naive_rate:.1%}")
    for name, (value, se) in (("tune gain", found.tune_gain), ("gate gain", found.gate_gain),
                              ("optimism", found.optimism)):
        print(f"winner's mean {name}: {value * 100:+.3f} points (SE {se * 100:.3f})")
    print(f"sweeps whose best tune gain is at least +1.1 points: {found.reached:.1%}")


if __name__ == "__main__":
    main()
