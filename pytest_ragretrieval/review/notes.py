"""The notes `diff` and `pr-check` print beside a comparison of bars: how each side was scored."""
from __future__ import annotations

from collections.abc import Sequence

from ..bar.exam import Exam
from ..baseline.exams import BASE, EXAM_NAMES, TODAY
from ..baseline.format import Baseline
from ..core.values import listed
from ..files.paths import display
from .rescore import Exams, Rescored


def rescore_notes(name: str, new: Baseline, result: Rescored) -> list[str]:
    """What of `name` the head's file could not give for re-scoring: metrics, or rankings both sides ask."""
    found = []
    if result.unscored:
        found.append(f"{', '.join(result.unscored)} of {name!r} cannot be scored here (a metric this installation "
                     "lacks, or a span metric without the chunks' places, which `diff --against REV` reads in the "
                     "checkout): compared the stored values")
    if result.missing:
        found.append(f"{display(new.path)} holds no ranking of {name!r} for {listed(result.missing, limit=5)}, "
                     "which both sides ask: scored as empty rankings")
    return found


def exam_notes(old: Baseline, new: Baseline, scored: Exams, names: Sequence[str], used: set[str]) -> list[str]:
    """How the bars were compared: re-scored under which exams, or (a base without labels) as stored."""
    if not names:
        return []
    if scored.base is None:
        return [f"{display(old.path)} keeps no labels (format {old.format_version}): compared its stored values; "
                "re-record it to compare rankings"]
    found = []
    if Exam.of_baseline(old.fingerprint, EXAM_NAMES[BASE]) is None:
        found.append(f"{display(old.path)} keeps no labels (format {old.format_version}): its exam is today's on the "
                     "questions whose graded gold its digests say is unchanged")
    if scored.today is None:
        found.append(f"{display(new.path)} keeps no labels (format {new.format_version}) and no eval set was read: "
                     "its approved rankings were scored under the base's exam only")
    source = scored.today.source if scored.today is not None else ""
    if used:
        exams_used = [f"{EXAM_NAMES[TODAY]} ({source})" if exam == TODAY else
                      f"the base's (the labels {display(old.path)} was recorded under)"
                      for exam in (TODAY, BASE) if exam in used]
        found.append("compared the approved rankings of both sides, scored here under " + " and ".join(exams_used)
                     + ("" if scored.today is None or source.startswith("the eval set") else
                        "; `diff --against REV` in the checkout scores them under its eval set"))
    return found
