"""The gate's settings a pull request may change, and which of their changes loosen the bar (a raised
tolerance or margin, a weaker test, a removed segment key...): what `classify` lists as loosened or tightened,
and what the gate itself names in CI (`glue/trust.py`). Pure."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..config.settings import Config
from ..core.values import EPSILON
from ..evalset.segments import setting_changes
from ..evalset.split import Split
from ..scoring.metrics import ANN_TIE_EPSILON, metric_order
from .moves import SettingChange

STRICTEST = ("none", "maxt", "holm")  # each p at most the next one's: a later one fails fewer items


@dataclass(frozen=True)
class GateSettings:
    """The parts of `[tool.ragretrieval]` that decide whether an item fails, besides the baseline."""

    metrics: tuple[str, ...]
    tolerances: Mapping[str, float] = field(hash=False)
    significance: str = "none"
    alpha: float = 0.05
    adjustment: str = "maxt"
    fail_on: tuple[str, ...] = ("metric",)
    retrievers: tuple[str, ...] = ()
    max_latency_ms: Mapping[str, float] = field(default_factory=dict, hash=False)
    ann_tie_epsilon: float = ANN_TIE_EPSILON
    """A larger one counts more of an index's swaps as ties: a lower `ann_recall` reads as a loss less often."""
    split: Split | None = None
    """`[split]`: changed, it may move the base's gate questions to `tune`, a loosening where one was hurt
    (`review/moves.py`)."""
    segments: tuple[str, ...] = ()
    min_questions: int = 20
    inconclusive: str = "pass"
    margins: Mapping[str, float] = field(default_factory=dict, hash=False)
    """Per gated metric, the margin a pass must be shown within (`margin`, else the tolerance)."""


def gate_settings(config: Config) -> GateSettings:
    return GateSettings(
        metrics=tuple(spec.label for spec in config.metrics),
        tolerances={spec.label: config.tolerance.for_metric(spec) for spec in config.metrics},
        significance=config.significance,
        alpha=config.alpha,
        adjustment=config.adjustment,
        fail_on=config.fail_on,
        retrievers=tuple(spec.name for spec in config.retrievers),
        max_latency_ms={s.name: s.max_latency_ms for s in config.retrievers if s.max_latency_ms is not None},
        ann_tie_epsilon=config.ann_tie_epsilon,
        split=config.split,
        segments=config.segments,
        min_questions=config.min_questions,
        inconclusive=config.inconclusive,
        margins={spec.label: config.margin_for(spec.label) for spec in config.metrics},
    )


def loosened_settings(old: GateSettings, new: GateSettings) -> list[SettingChange]:
    """The settings `new` loosens against `old` (the gate's own verdicts cannot see them)."""
    return setting_moves(old, new)[0]


def setting_moves(old: GateSettings, new: GateSettings) -> tuple[list[SettingChange], list[SettingChange]]:
    """(loosened, tightened) between two configurations."""
    loosened: list[SettingChange] = []
    tightened: list[SettingChange] = []
    _per_metric("tolerance", old.tolerances, new.tolerances, loosened, tightened)
    if old.significance != new.significance:
        change = SettingChange("significance", "", old.significance, new.significance)
        (tightened if new.significance == "none" else loosened).append(change)
    elif new.significance != "none" and abs(new.alpha - old.alpha) > EPSILON:
        change = SettingChange("alpha", "", f"{old.alpha:g}", f"{new.alpha:g}")
        (loosened if new.alpha < old.alpha else tightened).append(change)
    if new.significance == old.significance != "none" and old.adjustment != new.adjustment:
        change = SettingChange("adjustment", "", old.adjustment, new.adjustment)
        (loosened if STRICTEST.index(new.adjustment) > STRICTEST.index(old.adjustment) else tightened).append(change)
    if ("question" in old.fail_on) != ("question" in new.fail_on):
        change = SettingChange("fail_on", "question", ", ".join(old.fail_on), ", ".join(new.fail_on))
        (loosened if "question" in old.fail_on else tightened).append(change)
    for name in sorted(set(old.max_latency_ms) | set(new.max_latency_ms)):
        if name not in new.retrievers:
            continue
        before_ms, after_ms = old.max_latency_ms.get(name), new.max_latency_ms.get(name)
        change = SettingChange("max_latency_ms", name, _ms(before_ms), _ms(after_ms))
        if before_ms is not None and (after_ms is None or after_ms > before_ms):
            loosened.append(change)
        elif after_ms is not None and (before_ms is None or after_ms < before_ms):
            tightened.append(change)
    _tie_epsilon(old, new, loosened, tightened)
    eased, stricter = setting_changes(old.segments, new.segments, old.min_questions, new.min_questions)
    loosened += [SettingChange(*change) for change in eased]
    tightened += [SettingChange(*change) for change in stricter]
    _inconclusive(old, new, loosened, tightened)
    return loosened, tightened


def _tie_epsilon(old: GateSettings, new: GateSettings, loosened: list[SettingChange],
                 tightened: list[SettingChange]) -> None:
    """`ann_tie_epsilon` raised is loosened: more of the index's swaps count as ties, so an index's loss (which
    keeps a question that lost its hit from reading as a labelling problem) is seen less often."""
    if new.ann_tie_epsilon == old.ann_tie_epsilon:
        return
    change = SettingChange("ann_tie_epsilon", "", f"{old.ann_tie_epsilon:g}", f"{new.ann_tie_epsilon:g}")
    (loosened if new.ann_tie_epsilon > old.ann_tie_epsilon else tightened).append(change)


def _inconclusive(old: GateSettings, new: GateSettings, loosened: list[SettingChange],
                  tightened: list[SettingChange]) -> None:
    """`inconclusive` from "fail" to "pass" is loosened, and so is a margin raised while both are "fail"."""
    if old.inconclusive != new.inconclusive:
        change = SettingChange("inconclusive", "", old.inconclusive, new.inconclusive)
        (loosened if new.inconclusive == "pass" else tightened).append(change)
    elif new.inconclusive == "fail":
        _per_metric("margin", old.margins, new.margins, loosened, tightened)


def _per_metric(setting: str, old: Mapping[str, float], new: Mapping[str, float], loosened: list[SettingChange],
                tightened: list[SettingChange]) -> None:
    """A per-metric setting (`tolerance`, `margin`) raised is loosened, lowered tightened, for each metric both gate."""
    for label in sorted(set(old) & set(new), key=metric_order):
        change = SettingChange(setting, label, f"{old[label]:g}", f"{new[label]:g}")
        if new[label] > old[label] + EPSILON:
            loosened.append(change)
        elif new[label] < old[label] - EPSILON:
            tightened.append(change)


def _ms(value: float | None) -> str:
    return "none" if value is None else f"{value:g}"
