"""`ragretrieval diff OLD.json NEW.json`: two results files compared, once they are comparable (pitfalls 3-4)."""
from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..baseline.format import Baseline, Recorded, read
from ..gate.fingerprint import changed_paths, global_changes
from ..paths import display
from ..report.terminal import table
from ..scoring.metrics import METRICS
from ..values import EPSILON, fmt, signed
from .common import FAILED, OK, Result


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    diff = commands.add_parser(
        "diff", parents=[common], help="compare two results files, metric by metric and question by question",
        description="Compare two results or baseline files. Exit 0 when they are comparable and no metric "
        "dropped, 1 when a metric dropped or the fingerprints differ, 2 on errors. --config is not read.",
    )
    diff.add_argument("old", metavar="OLD.json")
    diff.add_argument("new", metavar="NEW.json")


def run(args: argparse.Namespace) -> Result:
    return run_diff(args.old, args.new)


def metric_order(label: str) -> tuple[int, int, str]:
    """The plugin's metric order (precision, recall, f1, ndcg, ...), then by cutoff."""
    name, _, cutoff = label.partition("@")
    names = list(METRICS)
    position = names.index(name) if name in names else len(names)
    return position, int(cutoff) if cutoff.isdigit() else 0, label


def fingerprint_lines(old: Baseline, new: Baseline) -> list[str]:
    """The global fields, and the retrievers both files hold, whose fingerprints differ."""
    changed = global_changes(old.fingerprint, new.fingerprint)
    before = old.fingerprint.get("retrievers", {})
    after = new.fingerprint.get("retrievers", {})
    for name in sorted(set(before) & set(after)):
        changed += changed_paths(before[name], after[name], f"retrievers.{name}")
    for name in sorted(set(old.retrievers) & set(new.retrievers) & (set(before) ^ set(after))):
        changed.append(f"retrievers.{name} (recorded in one file only)")
    if not changed:
        return []
    return [
        f"not comparable: the fingerprints differ in {', '.join(sorted(changed))}; "
        "the numbers below come from different set-ups (pitfalls 3-4)"
    ]


def _delta_cell(before: float | None, after: float | None) -> str:
    if before is None:
        return "added"
    if after is None:
        return "removed"
    delta = after - before
    return signed(delta if abs(delta) > EPSILON else 0.0)


def metric_rows(name: str, old: Recorded, new: Recorded) -> tuple[list[list[str]], int, int]:
    """(rows, metrics dropped, metrics improved) for one retriever present in both files."""
    rows: list[list[str]] = []
    dropped = improved = 0
    for label in sorted(set(old.metrics) | set(new.metrics), key=metric_order):
        before, after = old.metrics.get(label), new.metrics.get(label)
        if before is not None and after is not None:
            dropped += int(after < before - EPSILON)
            improved += int(after > before + EPSILON)
        rows.append([
            name,
            label,
            "-" if before is None else fmt(before),
            "-" if after is None else fmt(after),
            _delta_cell(before, after),
        ])
    return rows, dropped, improved


def retriever_line(name: str, only_in: Baseline, other: Baseline, verb: str) -> str:
    line = f"retriever {name!r}: {verb} (only in {display(only_in.path)})"
    if name in other.unavailable:
        line += f"; it could not run for {display(other.path)}: {other.unavailable[name]}"
    return line


def ranking_text(ranking: Sequence[str]) -> str:
    return ", ".join(ranking) if ranking else "(empty)"


def question_lines(name: str, label: str, old: Recorded, new: Recorded) -> list[str]:
    """Questions whose `label` value changed, worst drop first, with the rankings that scored it."""
    cutoff = metric_order(label)[1] or None
    changes = []
    for qid in sorted(set(old.questions) & set(new.questions)):
        before = old.questions[qid].metrics.get(label)
        after = new.questions[qid].metrics.get(label)
        if before is not None and after is not None and abs(after - before) > EPSILON:
            changes.append((after - before, qid, before, after))
    if not changes:
        return []
    lines = [f"{name} {label}:"]
    for delta, qid, before, after in sorted(changes):
        was = ranking_text(old.questions[qid].ranking[:cutoff])
        now = ranking_text(new.questions[qid].ranking[:cutoff])
        lines.append(f"  {qid}: {fmt(before)} -> {fmt(after)} ({signed(delta)})  [{was}] -> [{now}]")
    return lines


def question_set_lines(name: str, old: Recorded, new: Recorded) -> list[str]:
    lines = []
    before, after = set(old.questions), set(new.questions)
    for side, only in (("old", before - after), ("new", after - before)):
        if only:
            lines.append(f"{name}: questions only in the {side} file: {', '.join(sorted(only))}")
    return lines


def per_question_lines(old: Baseline, new: Baseline, shared: Sequence[str]) -> list[str]:
    body: list[str] = []
    for name in shared:
        before, after = old.retrievers[name], new.retrievers[name]
        body.extend(question_set_lines(name, before, after))
        for label in sorted(set(before.metrics) & set(after.metrics), key=metric_order):
            body.extend(question_lines(name, label, before, after))
    return ["", "per-question changes, worst drop first:", *body] if body else []


def run_diff(old_path: str, new_path: str) -> Result:
    old, new = read(Path(old_path)), read(Path(new_path))
    lines = [f"old: {display(old.path)} (k={old.k})  new: {display(new.path)} (k={new.k})"]
    lines.extend(fingerprint_lines(old, new))
    comparable = len(lines) == 1
    shared = sorted(set(old.retrievers) & set(new.retrievers))
    rows: list[list[str]] = []
    dropped = improved = 0
    for name in shared:
        more, down, up = metric_rows(name, old.retrievers[name], new.retrievers[name])
        rows.extend(more)
        dropped, improved = dropped + down, improved + up
    if rows:
        lines.extend(table(["retriever", "metric", "old", "new", "delta"], rows))
    for name in sorted(set(new.retrievers) - set(old.retrievers)):
        lines.append(retriever_line(name, new, old, "added"))
    for name in sorted(set(old.retrievers) - set(new.retrievers)):
        lines.append(retriever_line(name, old, new, "removed"))
    lines.extend(per_question_lines(old, new, shared))
    verdict = f"{dropped} metric{'s' if dropped != 1 else ''} dropped, {improved} improved"
    lines.append(verdict if comparable else verdict + "; not comparable: the fingerprints differ")
    return Result(out=lines, code=OK if comparable and not dropped else FAILED)
