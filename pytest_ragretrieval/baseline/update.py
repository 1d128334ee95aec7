"""Planning a baseline update: which entries change, which stay, which go, and why not at all.

The baseline is a projection of the run record (`record/projection.py`): the entries an update writes
are the record's `Retriever`s less what only a run adds, encoded by the record's one codec. An update rewrites the
whole file in the current format: a kept entry is written as the types read it (a value an older
file wrote as `1` is written `1.0`; keys the types do not know, and what a results file adds, are
left out); the fingerprint is written as it was."""
from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from msgspec import UNSET, structs

from ..config.settings import Config
from ..core.values import fmt
from ..files.paths import display
from ..record.codec import file_document
from ..record.projection import baseline_entry
from ..record.types import Record, Retriever, Values
from ..scoring.evaluate import Run
from .format import Baseline, baseline_record, retriever_record
from .since import Since, since

Bar = tuple[Mapping[str, tuple[str, ...]], Mapping[str, Mapping[str, float]]]
"""What an entry writes as its bar where it differs from what it records: approved rankings (question id ->
ranking) and a value bar kept from a format-3 file (metric label -> question id -> value)."""


@dataclass(frozen=True)
class UpdatePlan:
    """The baseline to write (None: write nothing), the lines that explain it, and whether the update
    failed: nothing was written that the selected items asked to write (the run then exits non-zero)."""

    record: Record | None
    lines: list[str] = field(default_factory=list)
    failed: bool = False


def change_lines(old: Mapping[str, Values], new: Mapping[str, Values]) -> list[str]:
    """`retriever label: old -> new` for every value that differs, new and removed ones included
    (retriever name -> its metrics on each side)."""
    lines: list[str] = []
    unchanged = 0
    for name in sorted(set(old) | set(new)):
        before = old.get(name, {})
        after = new.get(name, {})
        if name not in new:
            lines.append(f"  {name}: removed")
            continue
        for label in sorted(set(before) | set(after)):
            if label not in after:
                lines.append(f"  {name} {label}: removed ({fmt(before[label])})")
            elif label not in before:
                lines.append(f"  {name} {label}: new {fmt(after[label])}")
            elif before[label] != after[label]:
                lines.append(f"  {name} {label}: {fmt(before[label])} -> {fmt(after[label])}")
            else:
                unchanged += 1
    if unchanged:
        lines.append(f"  {unchanged} value{'s' if unchanged != 1 else ''} unchanged")
    return lines


def partial_lines(config: Config, selected: Mapping[str, set[str]]) -> dict[str, str]:
    """Retrievers whose metric items -k/-m selected only in part, with the line that says why they are not recorded.

    A retriever's values, per-question values and rankings are recorded together or not at all:
    fresh rankings beside old values of unselected metrics would be values no ranking gives.
    """
    every = [spec.label for spec in config.metrics]
    found = {}
    for name, labels in selected.items():
        left = [label for label in every if label not in labels]
        if labels and left:
            found[name] = (
                f"rag: {name} not recorded: -k/-m selected {', '.join(sorted(labels))} but not {', '.join(left)}; "
                f"a retriever's values and rankings are recorded together, so select all its items (-k {name})"
            )
    return found


def plan_update(
    config: Config,
    baseline: Baseline | None,
    fingerprint: Mapping[str, Any],
    runs: Mapping[str, Run],
    selected: Mapping[str, set[str]],
    refused: Collection[str] = (),
    bars: Mapping[str, Bar] | None = None,
) -> UpdatePlan:
    """Decide the new baseline from this run, the old baseline and the items `-k`/`-m` selected.

    `selected` maps each retriever to its selected metric labels; one selected in part keeps its
    old entry whole. When any retriever is in `refused` (a value would lower its bar) nothing is
    written, whatever the file's format. `bars` holds each recorded entry's bar where it differs
    from what it records: its approved rankings and a kept format-3 value bar (`bar/approved.py`, `next_approved`).
    """
    unrun = _unrun(runs, selected)
    if unrun is not None:
        return unrun
    all_labels = {spec.label for spec in config.metrics}
    judged = {name: labels - {spec.label for spec in config.across} for name, labels in selected.items()}
    found = since(baseline.fingerprint, fingerprint) if baseline is not None else None
    what = _together(found)
    changed = bool(what)
    lines: list[str] = []
    if changed:
        partial = [
            spec.name
            for spec in config.retrievers
            if not runs.get(spec.name, Run()).skipped and judged.get(spec.name) != all_labels
        ]
        if partial:
            return UpdatePlan(
                None,
                [
                    f"rag: baseline not written: {what} changed, so every retriever must be re-recorded "
                    f"but {', '.join(map(repr, partial))} {'was' if len(partial) == 1 else 'were'} not selected; "
                    "run `pytest --rag-update-baseline` without -k or -m"
                ],
                failed=True,
            )
        lines.append(f"rag: {what} changed: every retriever re-recorded")
    if refused:
        return _refused(config, baseline, refused)
    held = partial_lines(config, selected)
    lines.extend(held.values())
    old = baseline.record.retrievers if baseline is not None and baseline.record is not None else {}
    picked = _pick(config, baseline, changed, fingerprint, runs, {name for name in selected if name not in held},
                   bars or {})
    entries, recorded_fp, unavailable = picked.entries, picked.fingerprints, picked.unavailable
    lines.extend(picked.lines)
    configured = {spec.name for spec in config.retrievers}
    for name in sorted(set(old) - configured):
        lines.append(f"rag: {name} is no longer configured: removed")
    new_fp = {**fingerprint, "retrievers": recorded_fp}
    record = baseline_record(config.k, new_fp, entries, unavailable)
    if baseline is not None and file_document(record) == baseline.document:
        verdict = "left as it was, byte for byte" if held else "already up to date"
        return UpdatePlan(None, [*lines, f"rag: {display(config.baseline)} is {verdict}"])
    lines.append(f"rag: baseline changes in {config.baseline.name}:")
    lines.extend(change_lines({name: entry.metrics for name, entry in old.items()},
                              {name: entry.metrics for name, entry in entries.items()}) or ["  none"])
    return UpdatePlan(record, lines)


@dataclass(frozen=True)
class _Picked:
    """Each configured retriever's new entry, fingerprint or reason it is unavailable, and the lines that say so."""

    entries: dict[str, Retriever]
    fingerprints: dict[str, Any]
    unavailable: dict[str, str]
    lines: list[str]


def _pick(
    config: Config,
    baseline: Baseline | None,
    changed: bool,
    fingerprint: Mapping[str, Any],
    runs: Mapping[str, Run],
    recording: set[str],
    bars: Mapping[str, Bar],
) -> _Picked:
    """Fresh values for the retrievers `recording` names, else the recorded ones where they still compare
    (nothing shared `changed`), else unavailable when skipped here or in the baseline."""
    all_labels = {spec.label for spec in config.metrics}
    old = baseline.record.retrievers if baseline is not None and baseline.record is not None else {}
    old_fp = baseline.fingerprint.get("retrievers", {}) if baseline is not None and not changed else {}
    entries: dict[str, Retriever] = {}
    recorded_fp: dict[str, Any] = {}
    unavailable: dict[str, str] = {}
    lines: list[str] = []
    for spec in config.retrievers:
        name = spec.name
        state = runs.get(name)
        comparable_old = old.get(name) if not changed and name in old_fp else None
        if name in recording and state is not None and state.result is not None:
            approved, kept = bars.get(name, ({}, {}))
            held = {label: dict(values) for label, values in kept.items() if values}
            fresh = structs.replace(retriever_record(state.result), bar=held or UNSET,
                                    approved={qid: tuple(ranking) for qid, ranking in approved.items()} or UNSET)
            entries[name] = baseline_entry(fresh, all_labels)
            recorded_fp[name] = fingerprint["retrievers"][name]
        elif comparable_old is not None:
            entries[name] = baseline_entry(comparable_old, all_labels)
            recorded_fp[name] = old_fp[name]
            if state is not None and state.skipped:
                lines.append(f"rag: {name} skipped here: its recorded values are kept")
        elif state is not None and state.skipped:
            unavailable[name] = state.skipped
            if name in old:
                lines.append(f"rag: {name} skipped here and its recorded values belong to another fingerprint: removed")
            lines.append(f"rag: {name} recorded as unavailable: {state.skipped}")
        elif baseline is not None and not changed and name in baseline.unavailable:
            unavailable[name] = baseline.unavailable[name]
    return _Picked(entries, recorded_fp, unavailable, lines)


def _unrun(runs: Mapping[str, Run], selected: Mapping[str, set[str]]) -> UpdatePlan | None:
    """The failed plan when a selected retriever failed or never ran: its values would be missing."""
    failed = sorted(name for name in selected if name in runs and runs[name].error is not None)
    if failed:
        return UpdatePlan(
            None,
            [f"rag: baseline not written: retriever {', '.join(map(repr, failed))} failed; fix it and run again"],
            failed=True,
        )
    missing = sorted(name for name in selected if name not in runs)
    if missing:
        return UpdatePlan(
            None, [f"rag: baseline not written: retriever {', '.join(map(repr, missing))} did not run (interrupted?)"],
            failed=True,
        )
    return None


def _refused(config: Config, baseline: Baseline | None, refused: Collection[str]) -> UpdatePlan:
    """The failed plan when a value would lower a bar: nothing is written, and the lines say so."""
    names = ", ".join(map(repr, sorted(refused)))
    path = display(config.baseline)
    return UpdatePlan(None, [f"rag: baseline not written: values of {names} would lower the bar",
                             f"rag: {path} is left as it was, byte for byte" if baseline is not None
                             else f"rag: {path} is not written"], failed=True)


def _together(found: Since | None) -> str:
    """What changed that every entry shares (the yardstick, the tokenizer, the chunks, the questions),
    so that the entries must be recorded together; "" when nothing did."""
    if found is None:
        return ""
    if found.yardstick:
        return "the yardstick (" + "; ".join(map(str, found.yardstick)) + ")"
    parts = [change.path for change in found.shared]
    parts += ["the chunks"] if found.corpus is not None else []
    parts += ["the questions"] if found.questions.changed else []
    return ", ".join(parts)
