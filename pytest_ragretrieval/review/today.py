"""The third side of the pull-request check: today's rankings, the gate's own run, against the base's bar.

Both approved sides come from files the pull request can write; a head baseline edited by hand to the
base's values passes their comparison whatever the retriever does today. Today's rankings come from
the gate's `--rag-json` of the same job (`diff --today`), never from the head's file, and are scored
like the head's approved rankings (`rescore`, under the base's exam and today's where labels changed)
against the base's approved rankings: a mean below the base's by more than the base's tolerance is
lowered, named as today's rankings (docs/approval.md, "Trust model").
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from ..core.values import EPSILON
from ..scoring.metrics import metric_order
from .rescore import Exams, Rescored

SIDE = "today"
"""`ValueChange.side` of a lowering found in today's rankings, not in the head's approved ones."""

NAMED = "today's rankings"
"""How `diff` and the comment name that side."""

UNCHECKED = ("today's rankings not checked: no --today RESULTS.json (the gate's own --rag-json of this job) was "
             "given, so only the approved rankings of both files were compared")
"""The one line `diff --against` says without `--today`."""


def unchecked(names: Sequence[str], rankings: Mapping[str, object] | None) -> list[str]:
    """The lines saying which retrievers' today's side was not checked, and why."""
    if rankings is None:
        return [UNCHECKED]
    absent = [name for name in names if name not in rankings]
    return [f"today's rankings of {', '.join(map(repr, absent))} not checked: the --today results file holds "
            "none; run the gate with every retriever the base's baseline records"] if absent else []


def today_side(found: Exams, name: str, rankings: Mapping[str, Sequence[str]]) -> Exams:
    """`found` with retriever `name`'s head side made today's rankings: each question the run ranked is
    scored from today's ranking at today's places (nothing in them changed since), not the head's file."""
    return replace(found, fresh={name: {qid: tuple(ranking) for qid, ranking in rankings.items()}},
                   head_changed=(), moved=frozenset(), units={})


def dropped(result: Rescored, tolerances: Mapping[str, float]) -> list[tuple[str, float, float, str]]:
    """(metric, the base's mean, today's mean, exam) where today's rankings fall below the base's bar by more
    than the base's tolerance of the metric (0 where unknown) under either exam; `both` where under each."""
    found = []
    for label, means in sorted(result.means.items(), key=lambda item: metric_order(item[0])):
        low = [m for m in means if m.new < m.old - tolerances.get(label, 0.0) - EPSILON]
        if low:
            found.append((label, low[0].old, low[0].new, low[0].exam if len(low) == 1 else "both"))
    return found
