"""Whether a pull request may lower its own bar, and whether the check can comment on it.

A lower baseline (or a looser setting) passes only with the approval label, which a
maintainer adds after reviewing the listed changes; adding or removing it re-runs the check
(`on: pull_request: types: [..., labeled, unlabeled]`). The label approves what it was applied
to, not every later push: the run of its own `labeled` event records the set it approves
(`approved.py`) in the sticky comment, and later runs pass only while the pull request lowers
nothing beyond that record, on the approved rankings and under the exam it was given for (a push that
changes either re-opens it); otherwise they fail, and where the token can write the action takes
the label off, so the label's presence means "this set is approved". Commenting needs a token
that may write: on pull requests from forks, and on Dependabot's, GitHub hands the workflow a
read-only token whatever `permissions:` says, so there the job summary is the channel, the check
does not fail for the missing comment, and nothing is recorded: only the `labeled` run approves.
Pure: the caller reads the event file, the environment and the comment.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..files.jsonshape import Node
from .approved import HEAD, Approval, Review, approval_of, parse_record, record_document, reopened, review
from .changes import Changes

DEFAULT_LABEL = "rag-baseline-approved"
NONE_RECORDED = "the action's comment holds none that counts"
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
    head_sha: str = ""  # the commit the event is about ("" when the payload names none)
    labeled: str = ""  # the label this `labeled` event added; "" for any other event

    @property
    def from_fork(self) -> bool:
        """`head.repo.fork` is no test: a fork's own pull requests between its branches have it set too."""
        return self.head_repo != self.base_repo


def pull_request(event: Any) -> PullRequest | None:
    """The pull request of a `pull_request` (or `pull_request_target`) event; None for any other event.
    Only what the decision reads is checked (ShapeProblem naming its JSON path): the rest is GitHub's.

    `labeled` is the label of a `labeled` event (`action` and `label.name`): that run is the one
    that approves, because GitHub runs it on the commit the label was applied to (`head.sha`).
    Timestamps are never compared: a commit's date is whatever its author wrote.
    """
    pr = Node(event)["pull_request"]
    if pr.absent:
        return None
    labels = () if pr["labels"].absent else tuple(label["name"].text(printable=False) for label in pr["labels"].items())
    sha = pr["head"]["sha"] if not pr["head"].absent else Node(None)
    if not sha.absent and not HEAD.fullmatch(sha.text()):
        raise sha.problem(f"must be a commit's full hex name, got {sha.text()!r}")
    # Any other action, whatever its type, and a `labeled` event without its label approve nothing.
    label = Node(event)["label"] if Node(event)["action"].value == "labeled" else Node(None)
    added = "" if label.absent or label["name"].absent else label["name"].text(printable=False)
    return PullRequest(pr["number"].integer(1, MAX_NUMBER), labels, _repository(pr["head"]), _repository(pr["base"]),
                       "" if sha.absent else sha.text(), added)


def _repository(side: Node) -> str:
    """`owner/name` of a pull request's head or base; "" when GitHub sends none (a deleted fork)."""
    repo = Node(None) if side.absent else side["repo"]
    return "" if repo.absent or repo["full_name"].absent else repo["full_name"].text()


@dataclass(frozen=True)
class Decision:
    """`check`: pass, approved (lowered with the label), fail, or skipped (nothing to compare).

    `approval` is the record this run keeps (the comment's hidden line, the job summary), `review`
    the lowerings approved and not, `unlabel` whether the action takes the label off, `note` why
    no approval is recorded on this pull request ("" where one is).
    """

    check: str
    reason: str
    label: str
    comment: bool
    comment_reason: str
    approval: Approval | None = None
    review: Review = Review()
    unlabel: bool = False
    note: str = ""

    @property
    def failed(self) -> bool:
        return self.check == "fail"


def what_lowered(changes: Changes) -> str:
    """`3 lowered, 1 removed, 1 setting loosened`: the counts of what lowers the bar."""
    units = f" ({changes.unit_counts})" if changes.unit_counts else ""
    counts = (
        (len(changes.lowered), "lowered" + units, "lowered" + units),
        (len(changes.removed), "removed", "removed"),
        (len(changes.loosened), "setting loosened", "settings loosened"),
        (len(changes.lost_hits), "question no longer a hit", "questions no longer a hit"),
        (len(changes.unreadable), "side of the base unreadable", "sides of the base unreadable"),
    )
    return ", ".join(f"{n} {one if n == 1 else many}" for n, one, many in counts if n)


def _read_only(pr: PullRequest, actor: str) -> str:
    """Why GitHub's token cannot write on this run; "" when it can."""
    if pr.from_fork:
        return f"the pull request comes from the fork {pr.head_repo or '(deleted)'}, so GitHub's token is read-only"
    if actor in READ_ONLY_ACTORS:
        return f"runs triggered by {actor} get a read-only token"
    return ""


def _comment(pr: PullRequest | None, actor: str, wanted: bool) -> tuple[bool, str]:
    if pr is None:
        return False, "not a pull request"
    if not wanted:
        return False, "commenting is turned off (comment: false)"
    read_only = _read_only(pr, actor)
    if read_only:
        return False, f"{read_only}: the results are in the job summary"
    return True, f"sticky comment on pull request #{pr.number}"


def decide(changes: Changes, pr: PullRequest | None, label: str = DEFAULT_LABEL, actor: str = "",
           comment: bool = True, recorded: Approval | None = None) -> Decision:
    """The baseline check's verdict; outside a pull request there is no base branch and no label: skipped.

    `recorded` is the approval read from the action's own comment. It counts only while the label
    is on and only where the action posts that comment (a token that can write, comments on):
    elsewhere nothing is recorded, so only the run of the label's own `labeled` event approves.
    """
    can_comment, why = _comment(pr, actor, comment)
    if pr is None:
        return Decision("skipped", "not a pull request: no base branch to compare the baseline with", label,
                        can_comment, why)
    read_only = _read_only(pr, actor)
    cause = read_only or ("" if comment else "commenting is turned off (comment: false)")
    note = f"{cause}: no approval is recorded, only the run of the label's own event approves" if cause else ""
    on = label in pr.labels
    prior = recorded if (recorded is not None and on and not note and recorded.pr == pr.number
                         and recorded.label == label) else None
    fresh = approval_of(changes, pr.number, pr.head_sha, label) if on and pr.labeled == label else None
    if not changes.lowers_the_bar:
        return Decision("pass", "the baseline does not lower the bar", label, can_comment, why, fresh or prior,
                        note=note)
    lowered = what_lowered(changes)
    if not on:
        return Decision(
            "fail",
            f"the baseline lowers the bar ({lowered}) and pull request #{pr.number} has no {label!r} label; "
            "a maintainer who approves the lower bar adds the label, and the check runs again",
            label, can_comment, why, note=note,
        )
    if fresh is not None:
        return Decision("approved", f"the baseline lowers the bar ({lowered}); approved with the label {label!r} "
                        f"at {fresh.at}", label, can_comment, why, fresh, review(fresh, changes), note=note)
    checked = review(prior, changes)
    given_for = reopened(prior, changes) if prior is not None else ""
    if prior is not None and given_for:  # re-opened: nothing it approved counts
        everything = Review((), checked.approved + checked.unapproved)
        return Decision("fail", f"the baseline lowers the bar ({lowered}) and the approval at {prior.at} was given "
                        f"for {given_for}: {everything.unapproved_text()}; re-apply {label!r} to approve it", label,
                        can_comment, why, prior, everything, unlabel=True, note=note)
    if prior is not None and not checked.unapproved:
        return Decision("approved", f"the baseline lowers the bar ({lowered}) within what was approved with the "
                        f"label {label!r} at {prior.at}", label, can_comment, why, prior, checked)
    beyond = (f"beyond what was approved at {prior.at}" if prior is not None else
              f"and no recorded approval covers it ({note or NONE_RECORDED})")
    again = f"remove {label!r} and add it again" if read_only else f"re-apply {label!r}"
    return Decision("fail", f"the baseline lowers the bar {beyond}: {checked.unapproved_text()}; {again} to "
                    "approve it", label, can_comment, why, prior, checked, unlabel=not read_only, note=note)


def decision_document(decision: Decision) -> dict[str, Any]:
    return {"check": decision.check, "reason": decision.reason, "label": decision.label,
            "comment": decision.comment, "comment_reason": decision.comment_reason,
            "approval": None if decision.approval is None else record_document(decision.approval),
            "approved": list(decision.review.approved), "unapproved": list(decision.review.unapproved),
            "unlabel": decision.unlabel, "note": decision.note}


def parse_decision(doc: Any) -> Decision:
    """The inverse of `decision_document`; ShapeProblem naming the JSON path for anything else."""
    node = Node(doc).exactly("check", "reason", "label", "comment", "comment_reason", "approval", "approved",
                             "unapproved", "unlabel", "note")
    check = node["check"].text()
    if check not in CHECKS:
        raise node["check"].problem(f"must be one of {', '.join(CHECKS)}, got {check!r}")
    approval = None if node["approval"].absent else parse_record(node["approval"])
    lists = [tuple(item.text() for item in node[key].items()) for key in ("approved", "unapproved")]
    return Decision(check, node["reason"].text(), node["label"].text(), node["comment"].boolean(),
                    node["comment_reason"].text(), approval, Review(*lists), node["unlabel"].boolean(),
                    node["note"].text())
