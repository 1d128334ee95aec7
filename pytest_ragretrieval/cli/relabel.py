"""`ragretrieval relabel`: move gold labels whose chunk ids left the corpus to where their text went.

It reads the corpus, the eval set and the baseline's record of the gold texts, prints the
proposal (as the gate fails with it) and the eval set's changes as a unified diff; `--apply`
writes them atomically (the file keeps its mode; `--backup` keeps the old one as `NAME.bak`,
with the same mode).
Ambiguous proposals are refused without `--accept-ambiguous`, labels found nowhere always.
"""
from __future__ import annotations

import argparse
import difflib
import stat
from pathlib import Path
from typing import Any

from ..baseline.format import load
from ..baseline.gold import recorded_gold
from ..baseline.relabel import Plan, command, needs_record, plan, rewritten
from ..config.settings import Config, load_config
from ..core.errors import FixtureError
from ..evalset.jsonl import load_chunks
from ..files.paths import Unreadable, display, read_input, write_atomic
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


def _text(path: Path) -> str:
    try:
        return read_input(path).decode("utf-8")
    except Unreadable as exc:
        raise FixtureError(f"{display(path)}: {exc}") from None
    except UnicodeDecodeError as exc:
        raise FixtureError(f"{display(path)}: not UTF-8 ({exc.reason} at byte {exc.start})") from None


def run_relabel(config: Config, config_path: str | None, *, apply: bool = False, accept_ambiguous: bool = False,
                backup: bool = False) -> Result:
    chunks_path = config.chunks_file(f"{PROG} relabel")
    chunks = load_chunks(chunks_path)
    baseline = load(config.baseline)
    recorded = recorded_gold(baseline)
    found = plan(config.evalset, chunks, recorded or {})
    name = display(config.evalset)
    if not found.moves:
        return Result(out=[f"{PROG}: nothing to relabel: every gold chunk id in {name} is in {display(chunks_path)}"])
    if recorded is None and needs_record(found):
        first = next(move for move in found.moves if not move.snippet)
        why = "there is none" if baseline is None else "it records no gold texts (recorded before they were kept)"
        raise FixtureError(f"{first.where}: unknown chunk id {first.old!r} in 'relevant', and the baseline "
                           f"{display(config.baseline)} cannot say where it went: {why}; relabel it by hand")
    before = _text(config.evalset)
    after = rewritten(before, found)
    diff = difflib.unified_diff(before.split("\n"), after.split("\n"), f"a/{name}", f"b/{name}", lineterm="")
    out = [*found.lines(command(config_path)), *diff]
    if not apply:
        return Result(out=out)
    refused = _refused(found, accept_ambiguous)
    if refused:
        return Result(out=out, err=[f"{PROG}: {name} not written: {refused}"], code=FAILED)
    if backup:
        copy = checked_output("--backup", f"{config.evalset}.bak", {"the corpus": chunks_path,
                                                                    "the baseline": config.baseline})
        assert copy is not None
        write_atomic(copy, before)
        copy.chmod(stat.S_IMODE(config.evalset.stat().st_mode))
        out.append(f"{PROG}: kept the old eval set as {display(copy)}")
    write_atomic(config.evalset, after)
    moved = sum(1 for move in found.moves if move.chunks or move.grade == 0)
    return Result(out=[*out, f"{PROG}: wrote {name} ({moved} label{'s' if moved != 1 else ''} moved)"])


def _refused(found: Plan, accept_ambiguous: bool) -> str:
    """Why `--apply` writes nothing; empty when it may."""
    if found.lost:
        lost = ", ".join(f"{m.question} ({m.old})" for m in found.lost)
        return f"found nowhere: {lost}; label them by hand first"
    if found.ambiguous and not accept_ambiguous:
        shown = ", ".join(f"{m.question} ({m.old})" for m in found.ambiguous)
        return f"ambiguous: {shown}; check them in the proposal above and pass --accept-ambiguous to apply them"
    return ""
