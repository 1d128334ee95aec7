"""Whether a pull request may lower its own bar, and whether the check can comment on it.

A lower baseline (or a looser setting) passes only with the approval label, which a
maintainer adds after reviewing the listed changes; adding or removing it re-runs the check
(`on: pull_request: types: [..., labeled, unlabeled]`). Commenting needs a token that may
write: on pull requests from forks, and on Dependabot's, GitHub hands the workflow a read-only
token whatever `permissions:` says, so there the job summary is the channel and the check does
not fail for the missing comment. Pure: the caller reads the event file and the environment.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .changes import Changes

DEFAULT_LABEL = "rag-baseline-approved"
READ_ONLY_ACTORS = ("dependabot[bot]",)
"""Actors whose pull_request runs get a read-only token even from a branch of the same repository."""


@dataclass(frozen=True)
class PullRequest:
    """What the decision needs from a `pull_request` event's payload."""

    number: int
    labels: tuple[str, ...]
    head_repo: str  # "" when the head repository was deleted
    base_repo: str

    @property
    def from_fork(self) -> bool:
        """`head.repo.fork` is no test: a fork's own pull requests between its branches have it set too."""
        return self.head_repo != self.base_repo


def pull_request(event: Mapping[str, Any]) -> PullRequest | None:
    """The pull request of a `pull_request` (or `pull_request_target`) event; None for any other event."""
    pr = event.get("pull_request")
    if not isinstance(pr, Mapping):
        return None
    head_repo = (pr.get("head") or {}).get("repo") or {}
    base_repo = (pr.get("base") or {}).get("repo") or {}
    labels = tuple(str(label.get("name", "")) for label in pr.get("labels") or () if isinstance(label, Mapping))
    return PullRequest(int(pr["number"]), labels, str(head_repo.get("full_name", "")),
                       str(base_repo.get("full_name", "")))


@dataclass(frozen=True)
class Decision:
    """`check`: pass, approved (lowered with the label), fail, or skipped (nothing to compare)."""

    check: str
    reason: str
    label: str
    comment: bool
    comment_reason: str

    @property
    def failed(self) -> bool:
        return self.check == "fail"


def what_lowered(changes: Changes) -> str:
    """`3 lowered, 1 removed, 1 setting loosened`: the counts of what lowers the bar."""
    counts = (
        (len(changes.lowered), "lowered", "lowered"),
        (len(changes.removed), "removed", "removed"),
        (len(changes.loosened), "setting loosened", "settings loosened"),
        (len(changes.lost_hits), "question no longer a hit", "questions no longer a hit"),
    )
    return ", ".join(f"{n} {one if n == 1 else many}" for n, one, many in counts if n)


def _comment(pr: PullRequest | None, actor: str, wanted: bool) -> tuple[bool, str]:
    if pr is None:
        return False, "not a pull request"
    if not wanted:
        return False, "commenting is turned off (comment: false)"
    if pr.from_fork:
        return False, (f"the pull request comes from the fork {pr.head_repo or '(deleted)'}, so GitHub's token is "
                       "read-only: the results are in the job summary")
    if actor in READ_ONLY_ACTORS:
        return False, f"runs triggered by {actor} get a read-only token: the results are in the job summary"
    return True, f"sticky comment on pull request #{pr.number}"


def decide(changes: Changes, pr: PullRequest | None, label: str = DEFAULT_LABEL, actor: str = "",
           comment: bool = True) -> Decision:
    """The baseline check's verdict; outside a pull request there is no base branch and no label: skipped."""
    can_comment, why = _comment(pr, actor, comment)
    if pr is None:
        return Decision("skipped", "not a pull request: no base branch to compare the baseline with", label,
                        can_comment, why)
    if not changes.lowers_the_bar:
        return Decision("pass", "the baseline does not lower the bar", label, can_comment, why)
    lowered = what_lowered(changes)
    if label in pr.labels:
        return Decision("approved", f"the baseline lowers the bar ({lowered}); approved with the label {label!r}",
                        label, can_comment, why)
    return Decision(
        "fail",
        f"the baseline lowers the bar ({lowered}) and pull request #{pr.number} has no {label!r} label; "
        "a maintainer who approves the lower bar adds the label, and the check runs again",
        label, can_comment, why,
    )


def decision_document(decision: Decision) -> dict[str, Any]:
    return {"check": decision.check, "reason": decision.reason, "label": decision.label,
            "comment": decision.comment, "comment_reason": decision.comment_reason}


def parse_decision(doc: Mapping[str, Any]) -> Decision:
    """The inverse of `decision_document`; KeyError or TypeError for anything else (the caller names the file)."""
    if doc["check"] not in ("pass", "approved", "fail", "skipped"):
        raise TypeError(f"unknown check {doc['check']!r}")
    return Decision(str(doc["check"]), str(doc["reason"]), str(doc["label"]), bool(doc["comment"]),
                    str(doc["comment_reason"]))
