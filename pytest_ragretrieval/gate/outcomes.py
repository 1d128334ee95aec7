"""Three outcomes: what a metric item's evidence says beside pass and fail (docs/verdicts.md).

Today's rule decides regressions; the passes split into non-inferior (the one-sided lower bound at or
above -margin), inconclusive (neither) and unchanged (today's rankings the approved ones), as
`checks.classify` says per exam. Here: which exam's outcome an item reports, the gate's verdict under
`inconclusive`, and the `margin` a run cannot use.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Sequence

from ..bar.sides import Side
from ..config.settings import Config
from ..core.values import EPSILON, fmt
from ..record.types import Comparison, Finding
from .checks import Outcome

WEAKEST = (Finding.INCONCLUSIVE, Finding.NON_INFERIOR, Finding.UNCHANGED)
"""A passing item's outcome is its weakest under either exam: inconclusive under one is inconclusive."""


def decided(outcomes: Sequence[tuple[str, Outcome]]) -> tuple[str, Outcome]:
    """Of a metric item's (exam, outcome) under each exam, the one that decides, its exam named where it
    was compared: the first that fails, else the weakest pass, the first on a tie."""
    failed = [entry for entry in outcomes if not entry[1].passed]
    exam, outcome = failed[0] if failed else min(
        outcomes, key=lambda entry: WEAKEST.index(entry[1].finding) if entry[1].finding in WEAKEST else 0)
    return exam, dataclasses.replace(outcome, exam=exam) if outcome.finding is not None else outcome


def through_questions(name: str, label: str, text: str, first: tuple[str, Outcome]) -> Outcome:
    """A metric item that lowers the bar through its questions (`bar.rule.replacement`, `text` what): a
    regression, reported with the comparison of its first exam."""
    return Outcome(False, f"{label} of {name!r} lowers the bar through its questions: {text}, below the bar, as the "
                   "update and the pull-request check count it; restore them, or record it with "
                   "--rag-allow-regression and the approval label", comparison=first[1].comparison,
                   finding=Finding.REGRESSION if first[1].comparison is not None else None, exam=first[0])


def unchanged(side: Side, comparable: Collection[str]) -> bool:
    """Whether today's rankings of the comparable questions are the approved ones (the bar's)."""
    today = {question.id: question.ranking for question in side.today.questions}
    return all(today.get(qid) == question.ranking for qid, question in side.bar.questions.items()
               if qid in comparable)


def gated(config: Config, name: str, label: str, outcome: Outcome) -> Outcome:
    """The gate's verdict of a metric item: one line where its configured `margin` is refused
    (`refused_margin`); an inconclusive item fails under `inconclusive = "fail"`. The update reads the
    verdict before this (`Judge.metric_verdict`): an inconclusive item raises and lowers nothing either way."""
    refused = None if outcome.comparison is None else refused_margin(config, name, label, outcome.comparison)
    if refused is not None:
        return Outcome(False, refused)
    if outcome.finding != Finding.INCONCLUSIVE or config.inconclusive == "pass":
        return outcome
    said = next((line for line in outcome.details if line.startswith("inconclusive:")), "inconclusive")
    return dataclasses.replace(outcome, passed=False, summary=f'{outcome.summary}; {said}; inconclusive = "fail" '
                               "fails it: add questions, or set inconclusive = \"pass\"",
                               details=tuple(line for line in outcome.details if line != said))


def refused_margin(config: Config, name: str, label: str, found: Comparison) -> str | None:
    """Why a configured `margin` cannot be used for this item, in one line: below its minimum detectable
    effect under the deciding exam, no run of these questions could show a drop that small ruled out. The
    default margin (the tolerance) is never refused: the item is then inconclusive more often."""
    if config.margin is None or found.mde is None:
        return None
    margin = config.margin_for(label)
    if margin >= found.mde - EPSILON:
        return None
    needed = math.ceil(found.questions * (found.mde / margin) ** 2 - EPSILON) if margin > 0 else None
    more = f", or add questions (about {needed} would detect {margin:g})" if needed else ""
    return (f"{config.where} key 'margin': {margin:g} for {label} of {name!r} is below its minimum detectable "
            f"effect {fmt(found.mde)} over {found.questions} questions, so no run of them can show a drop that "
            f"small ruled out; set margin to at least {fmt(found.mde)}{more}")
