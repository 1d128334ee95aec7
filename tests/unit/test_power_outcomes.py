"""benchmarks/power_outcomes.py's core on synthetic values, so the published table cannot rot: eval sets are
written by passage, a change that moves nothing is never red nor inconclusive, a change that loses every
hit fails every rule, and 4 passages leave the test to the tolerance."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np


def _load() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "power_outcomes.py"
    spec = importlib.util.spec_from_file_location("power_outcomes_benchmark", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


study = _load()


def data(passages: int, lost: float) -> object:
    """`passages` passages of 6 questions each; every metric 1.0, and `lost` lower after any swap."""
    count = 6 * passages
    base = np.ones((6, count))
    return study.Data(base, np.full((5, 6, count), 1.0 - lost), np.repeat(np.arange(passages), 6))


def test_eval_sets_are_written_by_passage() -> None:
    found = study.drawn(data(10, 0.0), 15, np.random.default_rng(1))
    documents = np.repeat(np.arange(10), 6)[found]
    assert found.size == 15 and len(set(found.tolist())) == 15
    assert max(np.bincount(documents)) <= study.PER_DOCUMENT and len(set(documents.tolist())) == 4


def test_a_change_that_moves_nothing_is_neither_red_nor_inconclusive() -> None:
    fails, inconclusive, clusters = study.trial(data(10, 0.0), "documents", 1.0, 40, np.random.default_rng(2))
    assert not any(fails) and not any(inconclusive) and clusters == 10


def test_a_change_that_loses_every_hit_fails_every_rule() -> None:
    fails, _, _ = study.trial(data(10, 1.0), "questions", 1.0, 40, np.random.default_rng(3))
    assert all(fails)


def test_few_passages_leave_the_test_to_the_tolerance() -> None:
    """4 passages (2^-4 > 0.05): with clusters on, a drop beyond the tolerance on a quarter of the questions
    fails by the tolerance alone; with clusters off the test, over 16 questions, decides."""
    moved = study.Data(np.ones((6, 24)), np.concatenate([np.zeros((5, 6, 6)), np.ones((5, 6, 18))], axis=2),
                       np.repeat(np.arange(4), 6))
    fails, _, clusters = study.trial(moved, "questions", 1.0, 16, np.random.default_rng(4))
    assert clusters == 4
    rules = dict(zip(study.RULES, fails, strict=True))
    assert all(rules[study.Rule(t, True, True)] for t in study.TOLERANCES)
    assert not any(rules[study.Rule(t, True, False)] for t in study.TOLERANCES)
