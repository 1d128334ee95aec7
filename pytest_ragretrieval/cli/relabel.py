"""`ragretrieval relabel`: move gold labels whose chunk ids left the corpus to where their text went.

It reads the corpus, the eval set and the baseline's record of the gold texts, prints the
proposal (as the gate fails with it) and the eval set's changes as a unified diff that `git apply`
takes; `--apply` writes them atomically (the file keeps its mode; `--backup` keeps the old one as
`NAME.bak`, with the same mode, never over a file the configuration reads nor over an earlier
backup), and only over the bytes it planned: an eval set edited meanwhile is left alone.
Ambiguous proposals are refused without `--accept-ambiguous`, labels found nowhere always.
"""
from __future__ import annotations

import argparse
import difflib
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..baseline.format import load
from ..config.outputs import inputs
from ..config.settings import Config, load_config
from ..core.errors import FixtureError
from ..core.values import listed
from ..evalset.jsonl import load_chunks
from ..files.paths import MISSING, ChangedSince, Unreadable, display, read_input, write_atomic
from ..labels.gold import recorded_digests, recorded_gold
from ..labels.relabel import Plan, command, needs_record, plan, rewritten
from .common import FAILED, PROG, Result, checked_output


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    relabel = commands.add_parser(
        "relabel", parents=[common],
        help="move gold labels whose chunk ids left the corpus to the chunks holding their recorded text",
        description="For every gold chunk id of the eval set that the corpus no longer holds, find where the "
        "text the baseline recorded for it went (contained, then fuzzy) and print the proposal and the eval "
        "set's changes as a unified diff. Grades are kept.",
    )
    relabel.add_argument("--apply", action="store_true", help="write the changes to the eval set (atomically)")
    relabel.add_argument("--accept-ambiguous", action="store_true",
                         help="with --apply: also apply ambiguous proposals (every candidate gets the grade)")
    relabel.add_argument("--backup", action="store_true", help="with --apply: keep the old eval set as NAME.bak")


def run(args: argparse.Namespace) -> Result:
    config = load_config(args.config, Path.cwd())
    return run_relabel(config, args.config, apply=args.apply, accept_ambiguous=args.accept_ambiguous,
                       backup=args.backup)


def _bytes(path: Path) -> bytes:
    try:
        return read_input(path)
    except Unreadable as exc:
        raise FixtureError(f"{display(path)}: {exc}") from None


def _lines(text: str) -> list[str]:
    """The text's lines, each with its `\n` (the last one without, when the file does not end with one):
    split at `\n` only, as git does, never at the other line ends `str.splitlines` knows."""
    return re.findall(r"[^\n]*\n|[^\n]+$", text)


def _diff(before: str, after: str, name: str) -> Iterator[str]:
    """The change as a unified diff `git apply` takes: a last line without a line end is marked so."""
    for line in difflib.unified_diff(_lines(before), _lines(after), f"a/{name}", f"b/{name}"):
        if line.endswith("\n"):
            yield line[:-1]
        else:
            yield line
            yield "\\ No newline at end of file"


def run_relabel(config: Config, config_path: str | None, *, apply: bool = False, accept_ambiguous: bool = False,
                backup: bool = False) -> Result:
    chunks_path = config.chunks_file(f"{PROG} relabel")
    chunks = load_chunks(chunks_path)
    baseline = load(config.baseline)
    recorded = recorded_gold(baseline)
    name = display(config.evalset)
    data = _bytes(config.evalset)
    try:
        before = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FixtureError(f"{name}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    found = plan(config.evalset, chunks, recorded or {}, recorded_digests(baseline), data)
    if not found.moves:
        return Result(out=[f"{PROG}: nothing to relabel: every gold chunk id in {name} is in {display(chunks_path)}"])
    first = needs_record(found)
    if recorded is None and first is not None:
        why = "there is none" if baseline is None else "it records no gold texts (recorded before they were kept)"
        raise FixtureError(f"{first.where}: unknown chunk id {first.old!r} in 'relevant', and the baseline "
                           f"{display(config.baseline)} cannot say where it went: {why}; relabel it by hand")
    after = rewritten(before, found)
    out = [*found.lines(command(config_path)), *_diff(before, after, name)]
    if not apply:
        return Result(out=out)
    refused = _refused(found, accept_ambiguous)
    if refused:
        return Result(out=out, err=[f"{PROG}: {name} not written: {refused}"], code=FAILED)
    copy = None
    if backup:
        read = {**inputs(config), "the chunks file": chunks_path}
        copy = checked_output("--backup", f"{config.evalset}.bak", read, config_path)
        assert copy is not None
        if os.path.lexists(copy):
            return Result(out=out, err=[_kept(name, copy)], code=FAILED)
    if _bytes(config.evalset) != data:
        return Result(out=out, err=[f"{PROG}: {name} not written: it changed since relabel read it; run "
                                    f"`{command(config_path)}` again to see the changes to the file as it is now"],
                      code=FAILED)
    if copy is not None:
        try:
            write_atomic(copy, before, since=MISSING)  # never over a backup made meanwhile
        except ChangedSince:
            return Result(out=out, err=[_kept(name, copy)], code=FAILED)
        copy.chmod(stat.S_IMODE(config.evalset.stat().st_mode))
        out.append(f"{PROG}: kept the old eval set as {display(copy)}")
    write_atomic(config.evalset, after)
    moved = sum(1 for move in found.moves if move.chunks or move.grade == 0)
    return Result(out=[*out, f"{PROG}: wrote {name} ({moved} label{'s' if moved != 1 else ''} moved)"])


def _kept(name: str, copy: Path) -> str:
    return (f"{PROG}: {name} not written: the backup {display(copy)} exists, and --backup never overwrites one; "
            "move it away (or drop --backup) and run again")


def _refused(found: Plan, accept_ambiguous: bool) -> str:
    """Why `--apply` writes nothing; empty when it may."""
    if found.lost:
        lost = listed(f"{m.question} ({m.old})" for m in found.lost)
        return f"found nowhere: {lost}; label them by hand first"
    if found.ambiguous and not accept_ambiguous:
        shown = listed(f"{m.question} ({m.old})" for m in found.ambiguous)
        return f"ambiguous: {shown}; check them in the proposal above and pass --accept-ambiguous to apply them"
    return ""
