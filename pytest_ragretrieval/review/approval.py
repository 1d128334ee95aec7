"""Whether a pull request may lower its own bar, and whether the check can comment on it.

A lower baseline (or a looser setting) passes only with the approval label, which a
maintainer adds after reviewing the listed changes; adding or removing it re-runs the check
(`on: pull_request: types: [..., labeled, unlabeled]`). Commenting needs a token that may
write: on pull requests from forks, and on Dependabot's, GitHub hands the workflow a read-only
token whatever `permissions:` says, so there the job summary is the channel and the check does
not fail for the missing comment. Pure: the caller reads the event file and the environment.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..jsonshape import Node
from .changes import Changes

DEFAULT_LABEL = "rag-baseline-approved"
CHECKS = ("pass", "approved", "fail", "skipped")
MAX_NUMBER = 2**31 - 1
"""The largest pull request number taken from an event (GitHub's are far below)."""
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


def pull_request(event: Any) -> PullRequest | None:
    """The pull request of a `pull_request` (or `pull_request_target`) event; None for any other event.
    Only what the decision reads is checked (ShapeProblem naming its JSON path): the rest is GitHub's."""
    pr = Node(event)["pull_request"]
    if pr.absent:
        return None
    labels = () if pr["labels"].absent else tuple(label["name"].text(printable=False) for label in pr["labels"].items())
    return PullRequest(pr["number"].integer(1, MAX_NUMBER), labels, _repository(pr["head"]), _repository(pr["base"]))


def _repository(side: Node) -> str:
    """`owner/name` of a pull request's head or base; "" when GitHub sends none (a deleted fork)."""
    repo = Node(None) if side.absent else side["repo"]
    return "" if repo.absent or repo["full_name"].absent else repo["full_name"].text()


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


def parse_decision(doc: Any) -> Decision:
    """The inverse of `decision_document`; ShapeProblem naming the JSON path for anything else."""
    node = Node(doc).exactly("check", "reason", "label", "comment", "comment_reason")
    check = node["check"].text()
    if check not in CHECKS:
        raise node["check"].problem(f"must be one of {', '.join(CHECKS)}, got {check!r}")
    return Decision(check, node["reason"].text(), node["label"].text(), node["comment"].boolean(),
                    node["comment_reason"].text())
