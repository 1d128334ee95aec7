"""`ragretrieval pr-check CHANGES.json`: the pull request's baseline check, from `diff --json` and the event.

Pass when the changes do not lower the bar, or when the pull request carries the approval
label and lowers nothing beyond what it approved (`--approved`: the action's earlier comment,
which records the set the label's `labeled` run approved); fail (exit 1) otherwise. It also
decides whether the comment can be posted: not on pull requests from forks, whose token is
read-only. Under GitHub Actions it writes `check=`, `comment=` and `unlabel=` (the label to take
off, or nothing) to `$GITHUB_OUTPUT` before exiting (so later steps can read them after a
failure), an annotation per lowered value on the baseline file, and the changes and the
approval to the job summary. No network: the workflow fetches and posts the comment with `gh`.
"""
from __future__ import annotations

import argparse
import json
import os
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core.values import fmt
from ..files.jsonshape import Node, ShapeProblem, decode
from ..files.jsontext import JSONProblem
from ..files.paths import display, write_atomic
from ..report.github import escape_data, escape_property
from ..review.approval import DEFAULT_LABEL, Decision, decide, decision_document, pull_request
from ..review.approved import Approval, find_record, parse_record
from ..review.changes import Changes, read_changes
from ..review.comment import MARKER, baseline_summary
from .common import FAILED, OK, Result, UsageError, checked_output, label_name, read_json, read_text, shape_error


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    check = commands.add_parser(
        "pr-check", help="decide the pull request's baseline check from `diff --json` and the event",
        description="Pass when CHANGES.json (written by `diff --json`) does not lower the bar, or when the pull "
        "request carries the approval label and lowers nothing beyond what it approved (the run of the label's "
        "`labeled` event approves; --approved is the record of that); fail (exit 1) otherwise. Says whether a "
        "comment can be posted (not on forks: their token is read-only). Under GitHub Actions also writes check=, "
        "comment= and unlabel= to $GITHUB_OUTPUT, annotations, and the changes and the approval to the job "
        "summary. --config is not read.",
    )
    check.add_argument("changes", metavar="CHANGES.json")
    check.add_argument("--event", metavar="PATH", default=None,
                       help="the event's JSON payload (default: $GITHUB_EVENT_PATH)")
    check.add_argument("--label", default=DEFAULT_LABEL, type=label_name,
                       help=f"the approval label (default: {DEFAULT_LABEL})")
    check.add_argument("--actor", default=None, help="who triggered the run (default: $GITHUB_ACTOR)")
    check.add_argument("--no-comment", action="store_false", dest="comment", help="never plan a comment")
    check.add_argument("--approved", metavar="PATH", default=None,
                       help="what the label approved: the action's earlier comment (its text, as the bot posted it) "
                       "or an approval record (JSON, as in decision.json's `approval`)")
    check.add_argument("--json", metavar="PATH", default=None, dest="json_path",
                       help="write the decision here (read by comment)")


def run(args: argparse.Namespace) -> Result:
    event_path = args.event or os.environ.get("GITHUB_EVENT_PATH")
    actor = args.actor if args.actor is not None else os.environ.get("GITHUB_ACTOR", "")
    read = {"CHANGES.json": Path(args.changes), **({"the event file": Path(event_path)} if event_path else {}),
            **({"--approved": Path(args.approved)} if args.approved else {})}
    checked_output("--json", args.json_path, read, getattr(args, "config", None))
    recorded, note = read_approved(args.approved)
    result = run_pr_check(read_changes(Path(args.changes)), event_path, args.label, actor, args.comment,
                          args.json_path, recorded)
    if note:
        result.out.insert(1, f"approval: {note}")
    if not args.comment and args.approved is None:
        result.out.insert(1, NO_RECORD)
    return result


NO_RECORD = ("approval: no approval record read: with --no-comment the check neither reads nor writes the "
             "action's comment, where the record of what a label approved is kept, so an approval given at an earlier "
             "commit counts only through the label on this event (pass --approved PATH to read one)")


APPROVED_FIX = "pass the action's comment as the bot posted it, or the `approval` of `pr-check --json`"


def read_approved(path: str | None) -> tuple[Approval | None, str]:
    """The recorded approval, and a note when the comment's record is ignored.

    A JSON file is a record a person hands over: anything wrong with it is an error. A comment is
    what GitHub holds: a record in it that is not one the action wrote (edited, damaged, of
    another version) is ignored with a note, so the check fails closed, and the next run of the
    label's `labeled` event writes a good one.
    """
    if path is None:
        return None, ""
    where = Path(path)
    text = read_text(where, APPROVED_FIX)
    if text.lstrip().startswith("{"):
        try:
            return parse_record(Node(decode(text))), ""
        except JSONProblem as exc:
            raise UsageError(f"{display(where)}: not valid JSON ({exc}); {APPROVED_FIX}") from None
        except ShapeProblem as exc:
            raise shape_error(where, "not an approval record", exc, APPROVED_FIX) from None
    if text.split("\n", 1)[0].rstrip("\r") != MARKER:
        raise UsageError(f"{display(where)}: neither an approval record (JSON) nor the action's comment (its first "
                         f"line is not {MARKER}); {APPROVED_FIX}")
    found = find_record(text)
    if found is None:
        return None, ""
    try:
        return parse_record(Node(decode(found))), ""
    except (JSONProblem, ShapeProblem) as exc:
        return None, f"the record in {display(where)} is ignored: {exc}"


EVENT_FIX = "pass the file GitHub names in GITHUB_EVENT_PATH (or --event)"


def read_event(path: str | None) -> Mapping[str, Any]:
    if not path:
        return {}
    event = read_json(Path(path), EVENT_FIX)
    if not isinstance(event, Mapping):
        raise UsageError(f"{display(Path(path))}: not an event payload (expected a JSON object); {EVENT_FIX}")
    return event


def github_lines(decision: Decision, changes: Changes) -> list[str]:
    """Workflow commands: an error per lowered value when the check fails (a warning when approved),
    and a notice saying why there is no comment."""
    lines = []
    if decision.check in ("fail", "approved"):
        level = "error" if decision.failed else "warning"
        title = "rag: baseline lowered" + ("" if decision.failed else " (approved)")
        where = f"file={escape_property(changes.new_path)},title={escape_property(title)}"
        lines.append(f"::{level} {where}::{escape_data(decision.reason)}")
        lines += [f"::{level} {where}::" + escape_data(f"{c.metric} of {c.retriever!r}"
                                                             + (f" in segment {c.segment}" if c.segment else "")
                                                             + f": {fmt(c.old)} -> {fmt(c.new)}")
                  for c in changes.lowered]
    if not decision.comment:
        lines.append(f"::notice title=rag%3A no comment::{escape_data(decision.comment_reason)}")
    return lines


def _append(variable: str, text: str) -> None:
    target = os.environ.get(variable)
    if target:
        with open(target, "a", encoding="utf-8") as stream:
            stream.write(text)


def run_pr_check(changes: Changes, event_path: str | None, label: str, actor: str, comment: bool,
                 json_path: str | None, recorded: Approval | None = None) -> Result:
    """Decide, print the verdict (and workflow commands under GitHub Actions), write outputs for later steps."""
    try:
        pr = pull_request(read_event(event_path))
    except ShapeProblem as exc:
        raise shape_error(Path(str(event_path)), "not a pull_request event payload", exc, EVENT_FIX) from None
    decision = decide(changes, pr, label, actor, comment, recorded)
    if json_path is not None:
        write_atomic(Path(json_path), json.dumps(decision_document(decision), ensure_ascii=False, indent=2) + "\n")
    unlabel = urllib.parse.quote(label, safe="") if decision.unlabel else ""
    _append("GITHUB_OUTPUT", f"check={decision.check}\ncomment={'true' if decision.comment else 'false'}\n"
                             f"unlabel={unlabel}\n")
    lines = [f"baseline check: {decision.check}: {decision.reason}", f"comment: {decision.comment_reason}"]
    if decision.approval is not None:
        lines.append(f"approval: {decision.approval.digest} at {decision.approval.head or 'an unknown commit'}")
    if decision.note:
        lines.append(f"approval: {decision.note}")
    if decision.unlabel:
        lines.append(f"label: {label!r} does not cover what the pull request lowers now (it approved another set, "
                     "or other rankings or another exam): the action takes it off")
    if os.environ.get("GITHUB_ACTIONS") == "true":
        lines += github_lines(decision, changes)
        _append("GITHUB_STEP_SUMMARY", baseline_summary(changes, decision, changes.language) + "\n")
    return Result(out=lines, code=FAILED if decision.failed else OK)
