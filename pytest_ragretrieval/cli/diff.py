"""`ragretrieval diff`: two results files or baselines side by side, and what the change does to the bar.

Plain `diff OLD NEW` is the review view: what changed between the two set-ups, the metric table
over the questions both share and the per-question changes, exit 1 when a metric dropped or the
yardstick differs (pitfalls 3-4: then the numbers mean different things). `--fail-on-lower` asks the
pull-request question instead: does the new side lower the bar? Exit 1 exactly when it does,
whatever the fingerprints say. The gate's settings live in the config, so they are compared
only when both configs are known: `--old-config`/`--new-config`, or `--against REV`, which
takes the old side (the config and the baseline it names) from a git revision.
"""
from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..bar.units import UNIT_ONLY
from ..baseline.exams import BASE, EXAM_NAMES, TODAY
from ..baseline.format import Baseline, Recorded
from ..baseline.since import Since, common_means, held, since
from ..core.values import EPSILON, fmt, signed
from ..files.jsontext import cutoff
from ..files.paths import display, write_atomic
from ..report.terminal import table
from ..review.changes import Changes, ValueChange, classify, dumps_changes
from ..review.rescore import Cut, Today, exams, scored_view
from ..review.today import NAMED, SIDE
from ..scoring.metrics import metric_order, of_retriever
from .common import FAILED, OK, Result, UsageError, checked_output
from .sides import Sides, from_files, from_revision, with_rankings


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    diff = commands.add_parser(
        "diff", parents=[common], help="compare two results files, or a baseline with the base branch's",
        description="Compare two results or baseline files. Exit 0 when they are comparable and no metric "
        "dropped, 1 when a metric dropped or the yardstick (k, metric definitions, grading rules) differs, 2 on "
        "errors; other changes are named. With --fail-on-lower, exit 1 "
        "exactly when the new side lowers the bar: a value lowered, a retriever or metric removed, a setting "
        "(tolerance, significance, alpha, fail_on, max_latency_ms, ann_tie_epsilon) loosened. --config is read "
        "with --against only.",
    )
    diff.add_argument("old", metavar="OLD.json", nargs="?")
    diff.add_argument("new", metavar="NEW.json", nargs="?")
    diff.add_argument("--fail-on-lower", action="store_true", help="exit 1 when the new side lowers the bar")
    diff.add_argument("--old-config", metavar="PATH", default=None, help="the old side's pyproject.toml or config TOML")
    diff.add_argument("--new-config", metavar="PATH", default=None, help="the new side's pyproject.toml or config TOML")
    diff.add_argument("--against", metavar="REV", default=None,
                      help="compare the config's baseline and settings at git revision REV with the work tree's")
    diff.add_argument("--today", metavar="RESULTS.json", default=None,
                      help="with --against: the gate's own --rag-json of this job: its rankings are scored against "
                           "the base's bar as a third side (lowered when below it beyond the base's tolerance), and "
                           "stand for the head's where its baseline holds none of a question as asked today")
    diff.add_argument("--json", metavar="PATH", default=None, dest="json_path",
                      help="also write the classified changes here (read by pr-check and comment)")


def run(args: argparse.Namespace) -> Result:
    if args.against is not None:
        if args.old is not None or args.old_config or args.new_config:
            raise UsageError("diff takes OLD.json NEW.json (with --old-config/--new-config), or --against REV alone")
        sides = from_revision(args.against, getattr(args, "config", None), Path.cwd())
    else:
        if args.new is None:
            raise UsageError("diff takes OLD.json NEW.json, or --against REV")
        if bool(args.old_config) != bool(args.new_config):
            raise UsageError("--old-config and --new-config go together: the settings of both sides are compared")
        sides = from_files(args.old, args.new, args.old_config, args.new_config)
    if args.today is not None:
        if args.against is None:
            raise UsageError("--today goes with --against REV: today's rankings are judged under the base's exam")
        sides = with_rankings(sides, Path(args.today))
    checked_output("--json", args.json_path, sides.inputs, getattr(args, "config", None))
    return run_diff(sides, fail_on_lower=args.fail_on_lower, json_path=args.json_path,
                    with_changes=args.against is not None)


# The review view.


def since_lines(old: Baseline, new: Baseline, found: Since | None = None) -> tuple[list[str], Since]:
    """What changed between the two files, by the gate's rules, and the comparison itself (`found`, where
    known)."""
    if found is None:
        found = since(old.fingerprint, new.fingerprint, set(old.retrievers) & set(new.retrievers), held(old, new))
    lines = [line for line in found.lines() if not line.startswith("not comparable")]
    if found.yardstick:
        lines.insert(0, f"not comparable: the yardstick differs in {'; '.join(map(str, found.yardstick))}; "
                        "the numbers below measure different things (pitfalls 3-4)")
    return lines, found


def _delta_cell(before: float | None, after: float | None) -> str:
    if before is None:
        return "added"
    if after is None:
        return "removed"
    delta = after - before
    return signed(delta if abs(delta) > EPSILON else 0.0)


def compared_on(label: str, old: Recorded, found: Since, cut: Cut | None, k: int) -> frozenset[str]:
    """The questions `label` is compared on: the comparable ones, but across a chunker change (`Cut`)."""
    if cut is None:
        return found.questions.comparable
    return cut.comparable(label, found.questions.comparable, old.approved_rankings(), k)


def metric_rows(name: str, old: Recorded, new: Recorded, found: Since, cut: Cut | None = None,
                k: int = 0) -> tuple[list[list[str]], int, int]:
    """(rows, metrics dropped, metrics improved) for one retriever present in both files: over the
    comparable questions both scored when the yardstick is the same (across a chunker change, each metric's:
    `compared_on`), as recorded otherwise. judged@k is shown but counts neither way: it measures the labels,
    not the retriever."""
    rows: list[list[str]] = []
    dropped = improved = 0
    shared: tuple[dict[str, float], dict[str, float]] = (dict(old.metrics), dict(new.metrics))
    if found.comparable:
        shared = common_means(old, new, found.questions.comparable)
        for label in (old.metrics if cut is not None else ()):
            means = common_means(old, new, compared_on(label, old, found, cut, k))
            for side, found_means in zip(shared, means, strict=True):
                side.pop(label, None)
                side.update({label: found_means[label]} if label in found_means else {})
    for label in sorted(set(old.metrics) | set(new.metrics), key=metric_order):
        if cut is not None and label in old.metrics and label in new.metrics and label not in shared[0]:
            rows.append([name, label, fmt(old.metrics[label]), fmt(new.metrics[label]), "not comparable"])
            continue  # across the chunker change no approved top k kept its places: chunk ids name other text
        before = shared[0].get(label, old.metrics.get(label)) if label in old.metrics else None
        after = shared[1].get(label, new.metrics.get(label)) if label in new.metrics else None
        if before is not None and after is not None and of_retriever(label):
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


def question_lines(name: str, label: str, old: Recorded, new: Recorded, comparable: set[str]) -> list[str]:
    """Comparable questions whose `label` value changed, worst drop first, with the rankings that scored it."""
    depth = cutoff(label)
    changes = []
    for qid in sorted(set(old.questions) & set(new.questions) & comparable):
        before = old.questions[qid].metrics.get(label)
        after = new.questions[qid].metrics.get(label)
        if before is not None and after is not None and abs(after - before) > EPSILON:
            changes.append((after - before, qid, before, after))
    if not changes:
        return []
    lines = [f"{name} {label}:"]
    for delta, qid, before, after in sorted(changes):
        was = ranking_text(old.questions[qid].ranking[:depth])
        now = ranking_text(new.questions[qid].ranking[:depth])
        lines.append(f"  {qid}: {fmt(before)} -> {fmt(after)} ({signed(delta)})  [{was}] -> [{now}]")
    return lines


def question_set_lines(name: str, old: Recorded, new: Recorded) -> list[str]:
    lines = []
    before, after = set(old.questions), set(new.questions)
    for side, only in (("old", before - after), ("new", after - before)):
        if only:
            lines.append(f"{name}: questions only in the {side} file: {', '.join(sorted(only))}")
    return lines


def per_question_lines(old: Baseline, new: Baseline, shared: Sequence[str], found: Since,
                       cut: Cut | None = None) -> list[str]:
    body: list[str] = []
    for name in shared:
        before, after = old.retrievers[name], new.retrievers[name]
        comparable = set(before.questions) & set(after.questions)
        known = found.questions.itemized and found.comparable
        if not known:  # which questions changed is not known
            body.extend(question_set_lines(name, before, after))
        for label in sorted(set(before.metrics) & set(after.metrics), key=metric_order):
            on = comparable & compared_on(label, before, found, cut, old.k) if known else comparable
            body.extend(question_lines(name, label, before, after, on))
    return ["", "per-question changes, worst drop first:", *body] if body else []


STORED = "values as each file stores them (its last update's, not its approved bar)"
"""The table's label where a file keeps no labels: stored values, said so, since the bar may differ."""


def review(old: Baseline, new: Baseline, today: Today | None = None) -> tuple[list[str], int]:
    """The review view's lines and status: 1 when a metric dropped or the yardstick differs. Where the old
    file keeps labels, each file's values are scored here from its recorded rankings under one exam (today's:
    the work tree's eval set, else the new file's labels), never read: label work then moves no value."""
    lines = [f"old: {display(old.path)} (k={old.k})  new: {display(new.path)} (k={new.k})"]
    more_lines, found = since_lines(old, new)
    scored = exams(old, new, today, found)
    cut = scored.cut  # across a chunker change each file's rankings at its own places
    if cut is not None:
        found = replace(found, questions=cut.questions(found.questions))
        more_lines = since_lines(old, new, found)[0]
    lines.extend(more_lines)
    if scored.base is not None:
        old = scored_view(old, scored, cut.old if cut is not None else None)
        new = scored_view(new, scored, cut.new if cut is not None else None)
        under = f"{EXAM_NAMES[TODAY]} ({scored.today.source})" if scored.today is not None else EXAM_NAMES[BASE]
        lines.append(f"values scored here from each file's recorded rankings under {under}")
    else:
        lines.append(STORED)
    comparable = found.comparable
    shared = sorted(set(old.retrievers) & set(new.retrievers))
    rows: list[list[str]] = []
    dropped = improved = 0
    for name in shared:
        more, down, up = metric_rows(name, old.retrievers[name], new.retrievers[name], found, cut, old.k)
        rows.extend(more)
        dropped, improved = dropped + down, improved + up
    if rows:
        lines.extend(table(["retriever", "metric", "old", "new", "delta"], rows))
    for name in sorted(set(new.retrievers) - set(old.retrievers)):
        lines.append(retriever_line(name, new, old, "added"))
    for name in sorted(set(old.retrievers) - set(new.retrievers)):
        lines.append(retriever_line(name, old, new, "removed"))
    lines.extend(per_question_lines(old, new, shared, found, cut))
    verdict = f"{dropped} metric{'s' if dropped != 1 else ''} dropped, {improved} improved"
    lines.append(verdict if comparable else verdict + "; not comparable: the yardstick differs")
    return lines, OK if comparable and not dropped else FAILED


# The pull-request view: does the new side lower the bar?


def _count(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def subject(retriever: str, metric: str) -> str:
    if retriever and metric:
        return f"{metric} of {retriever!r}"
    return f"retriever {retriever!r}" if retriever else f"{metric} (every retriever)"


def verdict_line(changes: Changes) -> str:
    if not changes.lowers_the_bar:
        return "the baseline does not lower the bar"
    parts = [
        _count(len(changes.lowered), "value", "values") + " lowered"
        + (f" ({changes.unit_counts})" if changes.unit_counts else "") if changes.lowered else "",
        _count(len(changes.removed), "entry", "entries") + " removed" if changes.removed else "",
        _count(len(changes.loosened), "setting", "settings") + " loosened" if changes.loosened else "",
        _count(len(changes.lost_hits), "question", "questions") + " no longer a hit" if changes.lost_hits else "",
        _count(len(changes.unreadable), "side", "sides") + " of the base unreadable" if changes.unreadable else "",
    ]
    return "the baseline lowers the bar: " + ", ".join(part for part in parts if part)


UNDER = {TODAY: f"under {EXAM_NAMES[TODAY]}", BASE: f"under {EXAM_NAMES[BASE]}",
         "both": "under today's exam and the base's (today's means)"}
"""How a change names the exam both sides were scored under, where more than one was."""


def _moved(kind: str, change: ValueChange, exams: int = 1) -> str:
    """`  lowered: ndcg@5 of 'bm25' 0.8 -> 0.7 (-0.1)`, or over replaced questions: `...: the 12 edited ...`;
    ` under the base's exam (...)` where both sides were scored under more than one."""
    under = f" {UNDER[change.exam]}" if exams > 1 and change.exam in UNDER else ""
    why = f" [{change.why}]" if change.why else ""
    kind += f" ({change.unit})" if change.unit == UNIT_ONLY else ""
    what = subject(change.retriever, change.metric) + (f" in segment {change.segment}" if change.segment else "")
    kind += f" ({NAMED})" if change.side == SIDE else ""
    if change.scope:
        return f"  {kind}: {what}: {change.scope}{why}"
    return (f"  {kind}: {what} {fmt(change.old)} -> {fmt(change.new)} "
            f"({signed(change.new - change.old)}){under}{why}")


def change_lines(changes: Changes) -> list[str]:
    """Every classified difference, one line each, what lowers the bar first, the verdict last."""
    lines = [f"baseline changes: {changes.old_path or '(none at the base)'} -> {changes.new_path}"]
    lines += [f"  note: {note}" for note in changes.notes]
    if changes.yardstick:
        how = "both sides' approved rankings scored by this version" if changes.rescored else \
            "the values are compared as recorded"
        lines.append(f"  yardstick changed: {'; '.join(changes.yardstick)}; {how}")
    if changes.fingerprint:
        lines.append(f"  compared across changes: {'; '.join(changes.fingerprint)}")
    lines += [f"  {line}" for line in changes.questions]
    lines += [f"  unreadable: {why}" for why in changes.unreadable]
    exams = len(changes.rescored)
    # across a chunk-id re-chunk the real drops first, then those only from the changed unit
    lines += [_moved("lowered", c, exams) for c in sorted(changes.lowered, key=lambda c: c.unit == UNIT_ONLY)]
    lines += [f"  removed: {subject(e.retriever, e.metric)} ({e.reason})" for e in changes.removed]
    lines += [f"  loosened: {s.setting}{' of ' + s.subject if s.subject else ''} {s.old} -> {s.new}"
              for s in changes.loosened]
    lines += [f"  no longer a hit: {h.question} of {h.retriever!r} (fail_on question)"
              f"{' ' + UNDER[h.exam] if exams > 1 and h.exam in UNDER else ''}" for h in changes.lost_hits]
    lines += [_moved("raised", c, exams) for c in changes.raised]
    lines += [f"  added: {subject(e.retriever, e.metric)} ({e.reason})" for e in changes.added]
    lines += [f"  tightened: {s.setting}{' of ' + s.subject if s.subject else ''} {s.old} -> {s.new}"
              for s in changes.tightened]
    if changes.tags_lowered or changes.tags_raised:
        lines.append(f"  per-tag values (not gated): {len(changes.tags_lowered)} lower, "
                     f"{len(changes.tags_raised)} higher")
    return lines + [verdict_line(changes)]


def run_diff(sides: Sides, *, fail_on_lower: bool = False, json_path: str | None = None,
             with_changes: bool = False) -> Result:
    """The review view, then (with --fail-on-lower, --json or --against) the classified changes.

    Without --fail-on-lower the status is the review view's; with it, 1 exactly when the change lowers the bar.
    """
    lines, code = review(sides.old, sides.new, sides.today) if sides.old is not None else ([], OK)
    if not (fail_on_lower or json_path is not None or with_changes):
        return Result(out=lines, code=code)
    changes = classify(sides.old, sides.new, sides.old_settings, sides.new_settings, sides.notes, sides.today)
    changes = replace(changes, unreadable=sides.unreadable, language=sides.language)
    if json_path is not None:
        write_atomic(Path(json_path), dumps_changes(changes))
    lines = [*lines, "", *change_lines(changes)] if lines else change_lines(changes)
    if fail_on_lower:
        return Result(out=lines, code=FAILED if changes.lowers_the_bar else OK)
    return Result(out=lines, code=code)
