"""`ragretrieval comment RESULTS.json`: print the sticky pull-request comment as Markdown.

It reads the gate's `--rag-json` results and, for the baseline part, either the base branch's
baseline (`--baseline-diff OLD`, compared with the config's baseline: values only) or the
changes `ragretrieval diff --json` classified (`--baseline-changes`, values and settings), and
optionally `pr-check`'s decision (label, fork) and the record of the sweep behind tuned settings
(`--sweep`). It prints; the workflow posts with `gh`.
"""
from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from msgspec import UnsetType

from ..baseline.format import read
from ..config.settings import load_config
from ..core.urls import url_problem
from ..files.jsonshape import ShapeProblem
from ..record.codec import read as read_record
from ..report.view import results_view
from ..review.approval import Decision, parse_decision
from ..review.changes import Changes, classify, read_changes
from ..review.comment import CommentInput, render
from ..review.sweep import Sweep, parse_sweep
from .common import OK, Result, read_json, shape_error

T = TypeVar("T")

OUTCOMES = ("success", "failure", "cancelled", "skipped", "")


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    comment = commands.add_parser(
        "comment", parents=[common], help="print the pull-request comment for a --rag-json results file",
        description="Print the sticky pull-request comment as Markdown, starting with the marker "
        "<!-- pytest-ragretrieval -->, at most 65,536 bytes (question lists are cut first, with a note). "
        "Without RESULTS.json it says that the gate wrote no results and shows the baseline check alone. "
        "--config is read with --baseline-diff only.",
    )
    comment.add_argument("results", metavar="RESULTS.json", nargs="?",
                         help="the gate's --rag-json results; left out when the gate wrote none")
    source = comment.add_mutually_exclusive_group()
    source.add_argument("--baseline-diff", metavar="OLD.json", default=None,
                        help="the base branch's baseline, compared with the config's baseline (values only)")
    source.add_argument("--baseline-changes", metavar="CHANGES.json", default=None,
                        help="the changes `ragretrieval diff --json` wrote (values and settings)")
    comment.add_argument("--decision", metavar="DECISION.json", default=None,
                         help="the decision `ragretrieval pr-check --json` wrote (label, fork)")
    comment.add_argument("--sweep", metavar="SWEEP.json", default=None,
                         help="the record `ragretrieval tune --record` wrote: the comment names the sweep's optimism "
                         "(never a verdict)")
    comment.add_argument("--gate-outcome", choices=OUTCOMES, default="",
                         help="the gate step's outcome, for results files that do not list their failures")
    comment.add_argument("--artifact-url", default="", type=link, help="where the uploaded reports are")
    comment.add_argument("--run-url", default="", type=link, help="the workflow run")


def link(text: str) -> str:
    """An argparse `type=`: nothing, or an http(s) URL the comment may show to everyone (no credentials)."""
    problem = url_problem(text, "a link the comment shows needs none") if text else None
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return text


def run(args: argparse.Namespace) -> Result:
    data = CommentInput(
        report=None, failures_recorded=False, gate_outcome=args.gate_outcome, changes=load_changes(args),
        decision=load_decision(args.decision), artifact_url=args.artifact_url, run_url=args.run_url,
        sweep=load_sweep(args.sweep),
    )
    if args.results is not None:
        path = Path(args.results)
        record = read_record(path).record
        data = replace(data, report=results_view(path, record),
                       failures_recorded=not isinstance(record.failures, UnsetType))
    return Result(out=render(data).rstrip("\n").split("\n"), code=OK)


def load_changes(args: argparse.Namespace) -> Changes | None:
    """The baseline's changes, read from `diff --json`, or classified here from `--baseline-diff OLD`."""
    if args.baseline_changes is not None:
        return read_changes(Path(args.baseline_changes))
    if args.baseline_diff is None:
        return None
    config = load_config(getattr(args, "config", None), Path.cwd())
    note = ("settings (tolerance, ...) not compared: use `ragretrieval diff --against REV --json C` "
            "and --baseline-changes C")
    return replace(classify(read(Path(args.baseline_diff)), read(config.baseline), notes=[note]),
                   language=config.report_language)


def load_sweep(path: str | None) -> Sweep | None:
    return None if path is None else _side_file(Path(path), parse_sweep, "`ragretrieval tune NAME --record PATH`",
                                                "a record written by `ragretrieval tune --record`")


def load_decision(path: str | None) -> Decision | None:
    return None if path is None else _side_file(Path(path), parse_decision, "`ragretrieval pr-check --json PATH`",
                                                "a decision written by `ragretrieval pr-check --json`")


def _side_file(path: Path, parse: Callable[[Any], T], writer: str, what: str) -> T:
    """A file another command wrote, parsed; anything else is one line naming the file, its JSON path and the
    command that writes it."""
    fix = f"write it with {writer}"
    doc = read_json(path, fix)
    try:
        return parse(doc)
    except ShapeProblem as exc:
        raise shape_error(path, f"not {what}", exc, fix) from None
