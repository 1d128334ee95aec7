"""What moving questions out of the gate does to the bar a pull request is judged by (issue 51, the Tuning page).

A question the base's exam judged that today's `side` or `[split]` puts on `tune` is still judged by the
change that moves it (the gate holds it: evalset/split.py, `held`), and leaves once a baseline recorded
without it is merged. The review reads the move as a loosened setting, which the approval label must approve,
where a moved question's value today is below its approved one, or where the question rule reads their
leaving as a lowering. Pure.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..bar.rule import Replacement
from ..baseline.format import Baseline
from ..core.values import listed
from ..evalset.split import Split, sides
from ..record.exam import gate_ids
from .rescore import Today


@dataclass(frozen=True)
class SettingChange:
    """A setting that makes items fail less (loosened) or more (tightened) often."""

    setting: str
    subject: str
    old: str
    new: str


def moved_questions(old: Baseline, today: Today | None, split: Split | None) -> frozenset[str]:
    """The base's gate questions that today's eval set and `split` (the head's) put on `tune`; none without the
    work tree's eval set."""
    if today is None:
        return frozenset()
    side_of = sides(today.questions, split)
    return frozenset(qid for qid in gate_ids(old.fingerprint) if side_of.get(qid) == "tune")


def _text(split: Split | None) -> str:
    return "none" if split is None else f"fraction {split.fraction:g}, seed {split.seed}"


def moves(moved: frozenset[str], below: set[str], rule: Sequence[Replacement], scored: bool, read: bool,
          splits: tuple[Split | None, Split | None] | None) -> SettingChange | str | None:
    """The move out of the gate as a loosened setting where a moved question's value today is below its
    approved one (`below`), the question rule reads their leaving as a lowering (`rule`), or they cannot be
    scored here (fail closed: `scored` false, or `[split]` changed and no eval set `read`); else a note, or
    None where nothing moved. `splits`: `[split]` before and after, where both configs were read."""
    changed = splits if splits is not None and splits[0] != splits[1] else None
    cause = f"[split] {_text(changed[0])} -> {_text(changed[1])}" if changed else 'their "side" or cluster'
    if not moved:
        if changed is None or read:
            return None
        return SettingChange("split", "", _text(changed[0]), f"{_text(changed[1])} (the questions it moves out of "
                             "the gate cannot be read without the work tree's eval set)")
    why = ([f"{listed(sorted(below), limit=5)} below {'its' if len(below) == 1 else 'their'} approved value"]
           if below else [])
    why += [f"the question rule, as if they left: {rule[0].text()}"] if rule else []
    if not scored:
        why.append("not scored here (the base keeps no labels)")
    if why:
        return SettingChange("side", listed(sorted(moved), limit=5), "gate", f"tune ({cause}; {'; '.join(why)})")
    return (f"{len(moved)} question(s) moved out of the gate by {cause} ({listed(sorted(moved), limit=5)}): none "
            "below its approved value, nor lowering the bar by the question rule")
