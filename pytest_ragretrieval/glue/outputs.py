"""A judgement's outputs, written one way by the pytest run (`glue/session.py`) and `ragretrieval merge`
(`cli/merge.py`): the reports (and in GitHub Actions the job summary), the results file, the baseline update.
Each file is written whole (`write_atomic`); the baseline only over the bytes the run read. A file that cannot
be written is one line that fails the run, the others are still written."""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..baseline.update import UpdatePlan
from ..core.env import in_github_actions
from ..core.timing import Phases
from ..files.paths import ChangedSince, Snapshot, changed_since, display, write_atomic, write_problem
from ..record.codec import encode
from ..record.report import ReportInput
from ..record.types import Record


class Writer:
    """Writes one file: `wrote PATH` to `out`, or one line to `err` that fails the run (`failed`). `prefix`
    starts a `wrote` line and `error` an error line; `rerun` is the command a concurrent update's line names."""

    def __init__(self, out: list[str], err: list[str], rerun: str, prefix: str = "rag: ",
                 error: str = "rag: error: ") -> None:
        self.out, self.err, self.rerun, self.prefix, self.error = out, err, rerun, prefix, error
        self.failed = False

    def __call__(self, path: Path, text: str, since: Snapshot | None = None) -> None:
        try:
            write_atomic(path, text, since=since)
        except ChangedSince:
            self.err.append(f"{self.error}{changed_since(path, self.rerun)}")
            self.failed = True
        except OSError as exc:
            self.err.append(f"{self.error}could not write {display(path)}: {write_problem(path, exc)}")
            self.failed = True
        else:
            self.out.append(f"{self.prefix}wrote {display(path)}")


@dataclass(frozen=True)
class Judgement:
    """What a judgement writes, each part built only when it is written."""

    reports: Mapping[str, Path] = field(hash=False)
    """Report format name (`report/formats.py`) -> where to write it."""
    view: Callable[[], ReportInput]
    results: Path | None
    record: Callable[[], Record]
    """The results file's record, built after the reports (the pytest run's holds their phase's seconds)."""
    plan: UpdatePlan | None
    baseline: Path
    baseline_read: Snapshot
    """The baseline's bytes as the run read them: the update writes only over those."""


def write_judgement(judged: Judgement, write: Writer, phases: Phases | None = None,
                    said: list[str] | None = None) -> list[str]:
    """Write the reports, the results file and the baseline update, in that order; the update's lines go to
    `said` (where given) before its file is written. Returns the GitHub annotations of the failures."""
    annotations: list[str] = []
    with phases.phase("reports") if phases is not None else contextlib.nullcontext():
        if judged.reports or in_github_actions():
            annotations = _reports(judged, write)
    if judged.results is not None:
        write(judged.results, encode(judged.record()))
    plan = judged.plan
    if plan is not None:
        if said is not None:
            said += plan.lines
        write.failed = write.failed or plan.failed
        if plan.record is not None:
            write(judged.baseline, encode(plan.record), judged.baseline_read)
    return annotations


def _reports(judged: Judgement, write: Writer) -> list[str]:
    from ..report.formats import write_reports

    data = judged.view()
    write_reports(judged.reports, data, write)
    if not in_github_actions():
        return []
    from ..report.github import append_summary, error_annotations

    warning = append_summary(data)
    write.out.extend([warning] if warning else [])
    return error_annotations(data)
