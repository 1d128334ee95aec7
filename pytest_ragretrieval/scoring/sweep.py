"""A sweep's numbers, pure: each setting's value on the tune questions, the best one's gain there and on the
gate's questions, the optimism (how much of the tune gain the gate's questions do not see), and a p-value
for the tune gain that knows a maximum was taken.

The selection-aware p is a sign-flip test of the whole sweep: under the null that no setting differs from
the default, each question's paired differences (setting - default, for every setting at once) are as
likely negated, so one draw flips each question's row of differences jointly across all settings and
takes the best mean gain over settings; p is the share of draws whose best gain reaches the observed best
(plus one, as scoring/stats.py counts). The naive p, the best setting's own sign-flip test as if it had
been the only one tried, is returned beside it: it is what a sweep without this correction would report.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

DRAWS = 9_999
"""Sign-flip draws: p to about ±0.004 at 0.05."""


@dataclass(frozen=True)
class Outcome:
    """The sweep's verdict on its best setting."""

    best: int
    """Its index in the settings (the first of equal bests: the earliest tried)."""
    tune_gain: float
    """Its mean gain over the default on the tune questions: what the sweep picked it by."""
    gate_gain: float | None
    """Its mean gain over the default on the gate's questions, which it never saw; None without them."""
    p: float
    """The selection-aware p of `tune_gain` (the whole sweep's sign-flip null)."""
    naive_p: float
    """The best setting's own sign-flip p, as if it were the only setting tried."""

    @property
    def optimism(self) -> float | None:
        """How much the tune gain flatters itself: tune gain - gate gain."""
        return None if self.gate_gain is None else self.tune_gain - self.gate_gain


def gains(values: Sequence[Sequence[float]], default: Sequence[float]) -> np.ndarray:
    """Settings x questions: each setting's value minus the default's, question by question."""
    return np.asarray(values, dtype=np.float64) - np.asarray(default, dtype=np.float64)[None, :]


def selection_p(diffs: np.ndarray, draws: int = DRAWS, seed: int = 0) -> tuple[float, float, int]:
    """(selection-aware p, naive p, best index) of the best mean gain in `diffs` (settings x questions),
    one-sided: a gain."""
    settings, count = diffs.shape
    means = diffs.mean(axis=1)
    best = int(np.argmax(means))
    observed = means[best]
    rng = np.random.default_rng(seed)
    reached = naive = 0
    tolerance = 1e-12 * max(1.0, abs(float(observed)))
    for start in range(0, draws, 1024):
        signs = rng.choice(np.array([-1.0, 1.0]), size=(min(1024, draws - start), count))
        flipped = signs @ diffs.T / count  # draws x settings
        reached += int(np.count_nonzero(flipped.max(axis=1) >= observed - tolerance))
        naive += int(np.count_nonzero(flipped[:, best] >= observed - tolerance))
    return (reached + 1) / (draws + 1), (naive + 1) / (draws + 1), best


def judged(
    tune: Sequence[Sequence[float]], tune_default: Sequence[float],
    gate: Sequence[Sequence[float]] | None = None, gate_default: Sequence[float] | None = None,
    draws: int = DRAWS, seed: int = 0,
) -> Outcome:
    """The best setting by its mean on the tune questions, its gains there and on the gate's, and both p's."""
    diffs = gains(tune, tune_default)
    p, naive, best = selection_p(diffs, draws, seed)
    gate_gain = None
    if gate is not None and gate_default is not None and len(gate_default):
        gate_gain = float(gains([gate[best]], gate_default).mean())
    return Outcome(best=best, tune_gain=float(diffs[best].mean()), gate_gain=gate_gain, p=p, naive_p=naive)
