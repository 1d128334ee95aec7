"""One evaluation: the runs of a gate run judged once, into the record, each item's verdict and the
baseline update.

The pytest session (`glue/session.py`) and `ragretrieval merge` (`cli/merge.py`) are shells around
`evaluate`: the session collects, runs and hands the verdicts to its items; merge reads the shards'
partial records. Neither judges, builds a record or plans an update itself, so the same runs give
the same verdicts, results, reports and baseline either way.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from msgspec import UNSET, structs

from ..bar.places import Edit
from ..baseline.exams import KeptExam
from ..baseline.fingerprint import placed
from ..baseline.format import Baseline
from ..baseline.update import UpdatePlan
from ..config.settings import Config
from ..evalset.records import Question, Span
from ..record.types import ItemOutcome, QuestionsReused, Record, Status, TuneSplit, Verdict
from ..scoring.evaluate import Run
from .checks import Outcome
from .items import ItemKey, Skip
from .judge import Judge
from .record import baseline_update, run_record
from .segments import Segments


@dataclass(frozen=True)
class Evaluation:
    """What judging a run gives: the record (what `--rag-json` writes and every report is a view of),
    each selected item's verdict in the selection's order, the baseline update (None unless asked
    for) and the lines that fail the run as a whole (a gate run without a baseline)."""

    record: Record
    verdicts: Mapping[ItemKey, Verdict] = field(hash=False)
    update: UpdatePlan | None = None
    failed: tuple[str, ...] = ()

    @property
    def warnings(self) -> list[str]:
        """The record's notes as the terminal shows them, after the summary."""
        return [f"warning: {note}" for note in self.record.notes or ()]

    def timed(self, phases: Mapping[str, float], tune: TuneSplit | None = None) -> Record:
        """The record with the run's phases, as `--rag-json` writes it (they end after judging), and the
        tune questions' values, scored apart (evalset/split.py), where the run had some."""
        return structs.replace(self.record, phases=dict(phases), tune=tune if tune is not None else UNSET)


def verdict(judged: Callable[[], Outcome]) -> tuple[Verdict, Outcome | None]:
    """An item's verdict as data (and its outcome, None when skipped): `judged` raises Skip for an item
    whose retriever could not run here."""
    try:
        found = judged()
    except Skip as exc:
        return Verdict(Status.SKIPPED, (str(exc),)), None
    return Verdict(Status.PASSED if found.passed else Status.FAILED, tuple(found.lines), properties(found)), found


def properties(found: Outcome) -> tuple[tuple[str, str], ...]:
    """What `--junitxml` records of a metric item (pytest's `record_property`): its outcome, the exam that
    decided it, its delta and p there; nothing for an item that compared nothing."""
    comparison = found.comparison
    if found.finding is None or comparison is None:
        return ()
    numbers = (("rag_delta", comparison.delta), ("rag_p", comparison.p_value))
    return (("rag_outcome", str(found.finding)), ("rag_exam", found.exam),
            *((name, repr(value)) for name, value in numbers if value is not None))


def item_outcome(key: ItemKey, found: Outcome) -> ItemOutcome | None:
    """The item's outcome as `--rag-json` records it; None for an item that compared nothing."""
    comparison = found.comparison
    if found.finding is None or comparison is None:
        return None
    return ItemOutcome(key.nodeid, key.retriever, key.name, found.finding, found.exam, comparison.delta,
                       comparison.p_value, found.passed, comparison.needed, comparison.needed_clusters)


def evaluate(
    config: Config,
    questions: Sequence[Question],
    baseline: Baseline | None,
    fingerprint: Mapping[str, Any],
    runs: Mapping[str, Run],
    selected: Sequence[ItemKey],
    *,
    update: bool = False,
    allow_regression: bool = False,
    reused: Sequence[str] = (),
    reused_questions: Mapping[str, tuple[int, int]] | None = None,
    places: Mapping[str, Span] | None = None,
    kept: KeptExam | None = None,
    units: Mapping[str, Sequence[str]] | None = None,
    edits: Mapping[str, Edit] | None = None,
) -> Evaluation:
    """Judge the selected items of `runs` (every selected retriever has run) against the baseline.
    `fingerprint` is what ran, as data; `reused` names the retrievers whose rankings came from their
    cached run, `reused_questions` (reused, searched) those run for new or edited questions alone;
    `update` plans the baseline the selection asks for (`--rag-update-baseline`); `places` are the
    chunks' spans when a span metric is listed (the bar's rankings are scored as today's are); `kept`, where
    the base's exam is read from the base revision (a pull request's CI), not the baseline; `units`, after a
    chunk-id re-chunk, the relabel's mapping (`labels.relabel.units`), which tells lowerings that only come from
    the changed unit; `edits`, across a chunker change, each edited document's edit (`bar.places.edit`), through
    which the bar's recorded places are carried."""
    ranked = {cid for run in runs.values() if run.result is not None for q in run.result.questions for cid in q.ranking}
    ranked |= {cid for entry in (baseline.retrievers.values() if baseline is not None else ())
               for ranking in entry.approved_rankings().values() for cid in ranking}
    fingerprint = placed(fingerprint, ranked)
    judge = Judge(config, questions, baseline, fingerprint, runs, update=update, allow_regression=allow_regression,
                  selected=selected, places=places, kept=kept, units=units, edits=edits)
    segments = Segments(judge, selected)
    verdicts: dict[ItemKey, Verdict] = {}
    failures: dict[ItemKey, Outcome] = {}
    outcomes: list[ItemOutcome] = []
    for key in selected:
        verdicts[key], found = verdict(partial(segments.outcome if key.kind == "segment" else judge.outcome, key))
        if found is not None and not found.passed:
            failures[key] = found
        judged = item_outcome(key, found) if found is not None and not update else None
        outcomes += [judged] if judged is not None else []
    record = run_record(config, fingerprint, runs, judge, failures, segments=segments)
    return Evaluation(
        record=structs.replace(record, reused=tuple(sorted(reused)) or UNSET, reused_questions={
            name: QuestionsReused(*counts) for name, counts in sorted((reused_questions or {}).items())} or UNSET,
            outcomes=tuple(outcomes) or UNSET),
        verdicts=verdicts,
        update=baseline_update(config, baseline, fingerprint, runs, selected, judge, segments) if update else None,
        failed=tuple(judge.missing_baseline()),
    )
