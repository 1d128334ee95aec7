"""scoring/sweep.py: the selection-aware p knows a maximum was taken; benchmarks/tune_null.py's study, reduced."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np

from pytest_ragretrieval.scoring.sweep import judged, selection_p


def _load() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "tune_null.py"
    spec = importlib.util.spec_from_file_location("tune_null_benchmark", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_a_real_gain_is_found_and_no_change_is_not() -> None:
    rng = np.random.default_rng(0)
    noise = rng.choice([-1.0, 0.0, 1.0], size=(8, 60), p=[0.05, 0.9, 0.05])
    real = noise.copy()
    real[3] = np.where(rng.random(60) < 0.5, 1.0, 0.0)
    p, naive, best = selection_p(real, draws=999)
    assert best == 3 and p <= 0.01 and naive <= p
    assert selection_p(np.zeros((5, 40)), draws=99)[:2] == (1.0, 1.0)


def test_the_selection_aware_p_is_never_below_the_naive_one() -> None:
    rng = np.random.default_rng(1)
    for _ in range(20):
        diffs = rng.choice([-1.0, 0.0, 1.0], size=(10, 50), p=[0.06, 0.88, 0.06])
        p, naive, _ = selection_p(diffs, draws=199, seed=3)
        assert p >= naive


def test_the_best_is_picked_on_tune_and_measured_on_gate() -> None:
    tune = [[0.0] * 30, [1.0] * 30]
    gate = [[1.0] * 30, [0.0] * 30]
    found = judged(tune, [0.0] * 30, gate, [0.0] * 30, draws=99)
    assert (found.best, found.tune_gain, found.gate_gain, found.optimism) == (1, 1.0, 0.0, 1.0)


def test_the_null_study_reduced_rejects_at_about_alpha_and_the_winner_gains_nothing_on_gate() -> None:
    found = _load().simulate(sweeps=200, draws=199, questions=120, settings=6, seed=5)
    assert found.selection_rate <= 0.09 < found.naive_rate + 0.09
    assert found.naive_rate >= found.selection_rate
    gate, gate_se = found.gate_gain
    assert abs(gate) <= 3 * gate_se
    (tune, tune_se), (optimism, optimism_se) = found.tune_gain, found.optimism
    assert tune > 3 * tune_se  # the winner always looks better where it was picked
    assert abs(optimism - tune) <= 3 * max(optimism_se, gate_se)
