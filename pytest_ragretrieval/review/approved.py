"""What a reviewer approved with the label: the pull request's lowerings of the bar at one commit.

A label alone would approve every later push too. So the run of the label's own `labeled` event
records the set it approves (each lowered value with its base and new value, each removed entry,
loosened setting and lost hit, the head commit, a digest of the set) in a hidden line of the
sticky comment, and every later run checks that the pull request lowers nothing beyond it:

- a lowered value is approved while its new value is at most EPSILON below the approved new
  value (the same or better), whatever the base branch's value does meanwhile;
- a removed entry, a loosened setting or a lost hit is approved when the set holds the same one;
  a removed retriever (or a metric removed for every retriever) also approves any lowering or
  removal of what it removed, a lost hit of its questions included;
- a loosened setting stays approved while it is no looser than approved: a tolerance, a margin,
  `max_latency_ms` or `min_questions` no higher (`none`, no limit, is the loosest), an `alpha` no lower; a
  `significance` test must be the same one (the two are not ordered), `fail_on` the same move.

Anything else is "beyond what was approved". The record also binds what the lowerings were judged
on: the digests of the head's approved rankings and of the exam its baseline was recorded under
(`baseline.exams`). A later push that changes either re-opens the approval, whatever it lowers: new
gold could otherwise stretch an approval while retrieval gets worse. A record without them (written
before approvals bound them) binds only its set. Pure: the comment is fetched and posted by the action.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from ..core.values import EPSILON, fmt, listed
from ..files.jsonshape import Node
from .changes import DIGESTS, Changes, Entry, LostHit, SettingChange, ValueChange, read_digest

KIND = "ragretrieval-approval"
VERSION = 1
RECORD = "<!-- pytest-ragretrieval-approval "
"""The hidden line's start: the record's JSON follows on the same line, then ` -->`."""
RECORD_LINE = re.compile(r"<!-- pytest-ragretrieval-approval (\{.*\}) -->")
SHOWN = 3
"""Unapproved lowerings named in the one-line verdict; the comment lists them all."""


@dataclass(frozen=True)
class Approval:
    """The lowerings a label approved on pull request `pr` at commit `head` ("" when the event named none)."""

    pr: int
    head: str
    label: str
    lowered: tuple[ValueChange, ...] = ()
    removed: tuple[Entry, ...] = ()  # reasons left out: an entry is its retriever and metric
    loosened: tuple[SettingChange, ...] = ()
    lost_hits: tuple[LostHit, ...] = ()
    approved_digest: str = ""
    """The head's approved rankings the label was given for ("" in a record written before approvals bound them)."""
    labels_digest: str = ""
    """The exam the head's baseline was recorded under when the label was given (likewise)."""

    @property
    def digest(self) -> str:
        """`sha256:` of the set in canonical JSON, with the digests it binds where it holds them: the same
        lowerings of the same rankings under the same exam give the same digest, at any commit."""
        text = json.dumps({**set_document(self), **bound_document(self)}, sort_keys=True, separators=(",", ":"),
                          ensure_ascii=True)
        return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()

    @property
    def count(self) -> int:
        return len(self.lowered) + len(self.removed) + len(self.loosened) + len(self.lost_hits)

    @property
    def at(self) -> str:
        """The commit as messages show it: its first 7 hex digits."""
        return self.head[:7] if self.head else "an unknown commit"


def approval_of(changes: Changes, pr: int, head: str, label: str) -> Approval:
    """Everything `changes` lowers, as the label approves it now."""
    return Approval(
        pr, head, label,
        lowered=tuple(ValueChange(c.retriever, c.metric, c.old, c.new, segment=c.segment) for c in changes.lowered),
        removed=tuple(Entry(e.retriever, e.metric, "") for e in changes.removed),
        loosened=changes.loosened, lost_hits=changes.lost_hits,
        approved_digest=changes.approved_digest, labels_digest=changes.labels_digest,
    )


def reopened(approval: Approval, changes: Changes) -> str:
    """What the approval was given for that the pull request no longer holds ("" while it holds it, and
    for a record without digests): other approved rankings, another exam, or both."""
    other = []
    if approval.approved_digest and approval.approved_digest != changes.approved_digest:
        other.append("other approved rankings")
    if approval.labels_digest and approval.labels_digest != changes.labels_digest:
        other.append("another exam (labels changed since)")
    return " and ".join(other)


def set_document(approval: Approval) -> dict[str, Any]:
    return {
        "lowered": [{"retriever": c.retriever, "metric": c.metric, "base": c.old, "new": c.new,
                     **({"segment": c.segment} if c.segment else {})} for c in approval.lowered],
        "removed": [{"retriever": e.retriever, "metric": e.metric} for e in approval.removed],
        "loosened": [{"setting": s.setting, "subject": s.subject, "base": s.old, "new": s.new}
                     for s in approval.loosened],
        "lost_hits": [{"retriever": h.retriever, "question": h.question} for h in approval.lost_hits],
    }


def bound_document(approval: Approval) -> dict[str, str]:
    """The digests the approval binds, those it holds."""
    return {key: getattr(approval, key) for key in DIGESTS if getattr(approval, key)}


def record_document(approval: Approval) -> dict[str, Any]:
    return {"kind": KIND, "version": VERSION, "pr": approval.pr, "head": approval.head, "label": approval.label,
            "set": set_document(approval), **bound_document(approval), "digest": approval.digest}


def record_line(approval: Approval) -> str:
    """The hidden line: ASCII JSON with `<` and `>` escaped, so no name can end the HTML comment early."""
    text = json.dumps(record_document(approval), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return RECORD + text.replace("<", "\\u003c").replace(">", "\\u003e") + " -->"


@dataclass(frozen=True)
class Review:
    """A pull request's lowerings sorted against an approval, each as one line of text."""

    approved: tuple[str, ...] = ()
    unapproved: tuple[str, ...] = ()

    def unapproved_text(self) -> str:
        """The first few unapproved lowerings on one line, and how many more."""
        return listed(self.unapproved, limit=SHOWN)


def _removes(approval: Approval, retriever: str, metric: str) -> bool:
    """Whether the approval removed this entry, or all of its retriever, or its metric for every retriever."""
    keys = {(e.retriever, e.metric) for e in approval.removed}
    return (retriever, metric) in keys or (retriever, "") in keys or bool(metric and ("", metric) in keys)


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _no_looser(setting: str, new: str, approved: str) -> bool:
    """Whether a loosened setting's value is within the approved one (see the module's docstring)."""
    if setting in ("tolerance", "max_latency_ms", "min_questions", "margin"):
        if approved == "none":
            return True
        value, limit = _number(new), _number(approved)
        return value is not None and limit is not None and value <= limit + EPSILON
    if setting == "alpha":
        value, limit = _number(new), _number(approved)
        return value is not None and limit is not None and value >= limit - EPSILON
    return setting == "fail_on" or new == approved


def _value(change: ValueChange, approval: Approval) -> tuple[bool, str]:
    """(approved, the approved value: "" when the approval holds none for this entry)."""
    for approved in approval.lowered:
        if (approved.retriever, approved.metric, approved.segment) == (change.retriever, change.metric, change.segment):
            return change.new >= approved.new - EPSILON, fmt(approved.new)
    return (True, "removed") if _removes(approval, change.retriever, change.metric) else (False, "")


def _setting(change: SettingChange, approval: Approval) -> tuple[bool, str]:
    for approved in approval.loosened:
        if (approved.setting, approved.subject) == (change.setting, change.subject):
            return _no_looser(change.setting, change.new, approved.new), approved.new
    return False, ""


def entry_text(entry: Entry) -> str:
    if entry.retriever and entry.metric:
        return f"{entry.retriever} {entry.metric}"
    return f"retriever {entry.retriever}" if entry.retriever else f"{entry.metric} of every retriever"


def review(approval: Approval | None, changes: Changes) -> Review:
    """Every lowering of `changes`, approved or not by `approval` (None: nothing is approved)."""
    approved: list[str] = []
    unapproved: list[str] = []

    def sort(text: str, now: str, covered: bool, was: str) -> None:
        if covered:
            approved.append(text if was in ("", now) else f"{text} (approved: {was})")
        else:
            unapproved.append(f"{text} ({f'approved: {was}' if was else 'new'})")

    held = approval or Approval(0, "", "")
    for value in changes.lowered:
        segment = f" in segment {value.segment}" if value.segment else ""
        sort(f"{value.retriever} {value.metric}{segment} {fmt(value.old)} -> {fmt(value.new)}", fmt(value.new),
             *_value(value, held))
    for entry in changes.removed:
        sort(f"{entry_text(entry)} removed", "", _removes(held, entry.retriever, entry.metric), "")
    for setting in changes.loosened:
        of = f" of {setting.subject}" if setting.subject else ""
        sort(f"{setting.setting}{of} {setting.old} -> {setting.new}", setting.new, *_setting(setting, held))
    for hit in changes.lost_hits:
        kept = any((h.retriever, h.question) == (hit.retriever, hit.question) for h in held.lost_hits)
        sort(f"{hit.retriever} {hit.question} no longer a hit", "", kept or _removes(held, hit.retriever, ""), "")
    return Review(tuple(approved), tuple(unapproved))


def find_record(text: str) -> str | None:
    """The record's JSON in the action's comment: only on the line after its first, where the action
    writes it (the rest of the comment quotes the pull request's own files)."""
    lines = text.split("\n", 2)
    found = RECORD_LINE.fullmatch(lines[1].rstrip("\r")) if len(lines) > 1 else None
    return found.group(1) if found else None


HEAD = re.compile(r"(?:[0-9a-f]{40}|[0-9a-f]{64})?")
"""A commit's full name, SHA-1 or SHA-256; "" when the event named none."""
_FIELDS = {
    "lowered": ("retriever", "metric", "base", "new"),
    "removed": ("retriever", "metric"),
    "loosened": ("setting", "subject", "base", "new"),
    "lost_hits": ("retriever", "question"),
}


def _items(node: Node, key: str) -> list[dict[str, Any]]:
    """The entries of one list of the set: exactly their keys, numbers finite, texts printable."""
    numbers = ("base", "new") if key == "lowered" else ()
    later = ("segment",) if key == "lowered" else ()  # records written before segments lack it
    return [{name: item[name].number() if name in numbers else item[name].metric_key() if name == "metric"
             else item[name].text() for name in (*_FIELDS[key], *later) if name in item.mapping()}
            for item in (entry.exactly(*_FIELDS[key], optional=later) for entry in node[key].items())]


def parse_record(node: Node) -> Approval:
    """The inverse of `record_document`; ShapeProblem naming the JSON path for anything else, a
    digest that does not match its set (an edited record) included."""
    node.exactly("kind", "version", "pr", "head", "label", "set", "digest", optional=DIGESTS)
    if node["kind"].value != KIND or node["version"].value != VERSION:
        raise node["version"].problem(f"is not {VERSION} of kind {KIND!r}: written by another version of the plugin")
    head = node["head"].text()
    if not HEAD.fullmatch(head):
        raise node["head"].problem(f"must be a commit's full hex name, got {head!r}")
    sets = node["set"].exactly(*_FIELDS)
    lowered, removed, loosened, hits = (_items(sets, key) for key in _FIELDS)
    approval = Approval(
        node["pr"].integer(1, 2**31 - 1), head, node["label"].text(),
        lowered=tuple(ValueChange(i["retriever"], i["metric"], i["base"], i["new"], segment=i.get("segment", ""))
                      for i in lowered),
        removed=tuple(Entry(i["retriever"], i["metric"], "") for i in removed),
        loosened=tuple(SettingChange(i["setting"], i["subject"], i["base"], i["new"]) for i in loosened),
        lost_hits=tuple(LostHit(i["retriever"], i["question"]) for i in hits),
        **{key: read_digest(node[key]) for key in DIGESTS if key in node.mapping()},
    )
    if node["digest"].text() != approval.digest:
        raise node["digest"].problem("does not match the set: the record was edited")
    return approval
