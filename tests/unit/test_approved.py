"""What the approval label approved: the recorded set, what it covers later, and the verdict around it.

Pure, from hand-built changes, events and records; the action's dry run
(tests/e2e/test_action_dry_run.py) takes the same path through GitHub's files.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from typing import Any

import pytest

from pytest_ragretrieval.core.values import EPSILON
from pytest_ragretrieval.files.jsonshape import Node, ShapeProblem
from pytest_ragretrieval.review.approval import decide, pull_request
from pytest_ragretrieval.review.approved import (
    Approval,
    approval_of,
    find_record,
    parse_record,
    record_document,
    record_line,
    review,
)
from pytest_ragretrieval.review.changes import Changes, Entry, LostHit, SettingChange, ValueChange

SHA = "4f3c2b1a" + "0" * 32
LATER = "9e8d7c6b" + "1" * 32
LABEL = "rag-baseline-approved"
BM25 = ValueChange("bm25", "ndcg@5", 0.6, 0.5)
HYBRID = ValueChange("hybrid", "ndcg@5", 0.7276, 0.4)


def lowered(*values: ValueChange, **more: Any) -> Changes:
    return Changes("main:b.json", "b.json", lowered=values, **more)


APPROVED = approval_of(lowered(BM25), 42, SHA, LABEL)


def event(labels: tuple[str, ...] = (LABEL,), added: str | None = None, head: str = "team/repo",
          sha: str = LATER) -> dict[str, Any]:
    return {"action": "labeled" if added else "synchronize", **({"label": {"name": added}} if added else {}),
            "pull_request": {"number": 42, "labels": [{"name": name} for name in labels],
                             "head": {"sha": sha, "repo": {"full_name": head}},
                             "base": {"repo": {"full_name": "team/repo"}}}}


# The record and its digest.


def test_the_digest_is_sha256_of_the_set_in_canonical_json() -> None:
    canonical = ('{"loosened":[],"lost_hits":[],"lowered":[{"base":0.6,"metric":"ndcg@5","new":0.5,'
                 '"retriever":"bm25"}],"removed":[]}')
    assert APPROVED.digest == "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
    # The set, not the commit or the pull request, makes the digest.
    assert approval_of(lowered(BM25), 7, LATER, "other").digest == APPROVED.digest
    assert approval_of(lowered(replace(BM25, new=0.49)), 42, SHA, LABEL).digest != APPROVED.digest


def test_removed_entries_are_recorded_without_their_reasons() -> None:
    approval = approval_of(Changes("a", "b", removed=(Entry("hybrid", "mrr@5", "no longer in the baseline"),)),
                           42, SHA, LABEL)
    assert approval.removed == (Entry("hybrid", "mrr@5", ""),)
    assert record_document(approval)["set"]["removed"] == [{"retriever": "hybrid", "metric": "mrr@5"}]


def test_the_record_line_round_trips_and_no_name_ends_the_html_comment() -> None:
    tricky = ValueChange("检索 --> <b>", "ndcg@5", 0.6, 0.5)
    approval = approval_of(lowered(tricky), 42, SHA, LABEL)
    line = record_line(approval)
    assert line.startswith("<!-- pytest-ragretrieval-approval {") and line.endswith("} -->")
    assert line.isascii() and line.count("-->") == 1 and "<b>" not in line
    found = find_record(f"<!-- pytest-ragretrieval -->\n{line}\n## title\n")
    assert found is not None and parse_record(Node(json.loads(found))) == approval


def test_the_record_is_read_only_from_the_second_line() -> None:
    line = record_line(APPROVED)
    assert find_record(f"<!-- pytest-ragretrieval -->\n{line}") is not None
    # Anywhere else it could be text the pull request's own files put into the comment.
    assert find_record(f"<!-- pytest-ragretrieval -->\n## title\n{line}\n") is None
    assert find_record(f"<!-- pytest-ragretrieval -->\n  {line}\n") is None
    assert find_record(line) is None


def damaged(**changes: Any) -> dict[str, Any]:
    doc = record_document(APPROVED)
    for path, value in changes.items():
        *parents, key = path.split("__")
        target = doc
        for parent in parents:
            target = target[int(parent)] if isinstance(target, list) else target[parent]
        if value is None:
            del target[key]
        else:
            target[key] = value
    return doc


@pytest.mark.parametrize(("doc", "problem"), [
    ([], "the document must be an object, got an array"),
    (damaged(head=None), "the document lacks the key 'head'"),
    (damaged(extra=1), "the document holds the unknown key 'extra'; known keys: kind, version, pr, head, label, set, "
                       "digest"),
    (damaged(version=2), "version is not 1 of kind 'ragretrieval-approval': written by another version"),
    (damaged(pr=True), "pr must be a whole number from 1 to 2147483647, got true"),
    (damaged(head="HEAD"), "head must be a commit's full hex name, got 'HEAD'"),
    (damaged(set__lowered="no"), 'set.lowered must be an array, got the string "no"'),
    (damaged(set__lowered__0__new=float("nan")), "set.lowered[0].new must be a finite number"),
    (damaged(set__lowered__0__new="0.5"), 'set.lowered[0].new must be a finite number, got the string "0.5"'),
    (damaged(set__lowered__0__metric=5), "set.lowered[0].metric must be a string, got 5"),
    (damaged(set__lowered__0__tag=""), "set.lowered[0] holds the unknown key 'tag'"),
    (damaged(set__lowered__0__new=0.1), "digest does not match the set: the record was edited"),
    # issue 32: integers a float cannot hold are refused where they are read, never an OverflowError
    (damaged(set__lowered__0__new=10 ** 309), "set.lowered[0].new must be a finite number, got 1000000000"),
    (damaged(set__lowered__0__base=-(10 ** 4299)), "set.lowered[0].base must be a finite number, got -100000000"),
    (damaged(set__lowered__0__metric="ndcg@" + "5" * 5001), "set.lowered[0].metric holds 'ndcg@55555555555555555555"),
], ids=["not-object", "missing", "unknown", "version", "pr", "head", "list", "nan", "string-number", "text",
        "item-key", "edited", "310-digits", "4300-digits", "metric-key"])
def test_a_record_the_action_did_not_write_names_its_json_path(doc: Any, problem: str) -> None:
    with pytest.raises(ShapeProblem) as raised:
        parse_record(Node(doc))
    assert str(raised.value).startswith(problem)


# What an approval covers.


def test_an_approved_value_passes_while_it_stays_or_improves() -> None:
    assert review(APPROVED, lowered(BM25)).approved == ("bm25 ndcg@5 0.6000 -> 0.5000",)
    better = review(APPROVED, lowered(replace(BM25, new=0.55)))
    assert better.approved == ("bm25 ndcg@5 0.6000 -> 0.5500 (approved: 0.5000)",) and not better.unapproved
    # The base branch moved: the bar the pull request sets is what was approved.
    assert not review(APPROVED, lowered(ValueChange("bm25", "ndcg@5", 0.7, 0.5))).unapproved
    # Float noise within EPSILON is no further lowering.
    assert not review(APPROVED, lowered(replace(BM25, new=0.5 - EPSILON / 2))).unapproved


def test_a_further_lowering_and_a_new_one_are_not_approved() -> None:
    found = review(APPROVED, lowered(replace(BM25, new=0.5 - 2 * EPSILON - 0.0001), HYBRID))
    assert found.approved == ()
    assert found.unapproved == ("bm25 ndcg@5 0.6000 -> 0.4999 (approved: 0.5000)",
                                "hybrid ndcg@5 0.7276 -> 0.4000 (new)")
    assert review(None, lowered(BM25)).unapproved == ("bm25 ndcg@5 0.6000 -> 0.5000 (new)",)


def test_a_removal_approves_what_it_removed_and_any_smaller_lowering_of_it() -> None:
    gone = approval_of(Changes("a", "b", removed=(Entry("hybrid", "", "no longer configured"),
                                                  Entry("", "mrr@5", "no longer in the configured metrics"))),
                       42, SHA, LABEL)
    changes = Changes("a", "b", lowered=(HYBRID, ValueChange("bm25", "mrr@5", 0.5, 0.4)),
                      removed=(Entry("hybrid", "", "no longer configured"), Entry("hybrid", "recall@5", "gone"),
                               Entry("bm25", "mrr@5", "gone"), Entry("bm25", "recall@5", "gone")),
                      lost_hits=(LostHit("hybrid", "q07"), LostHit("bm25", "q07")))
    found = review(gone, changes)
    assert found.approved == ("hybrid ndcg@5 0.7276 -> 0.4000 (approved: removed)",
                              "bm25 mrr@5 0.5000 -> 0.4000 (approved: removed)", "retriever hybrid removed",
                              "hybrid recall@5 removed", "bm25 mrr@5 removed", "hybrid q07 no longer a hit")
    assert found.unapproved == ("bm25 recall@5 removed (new)", "bm25 q07 no longer a hit (new)")


@pytest.mark.parametrize(("setting", "approved", "now", "covered"), [
    ("tolerance", "0.02", "0.02", True),
    ("tolerance", "0.02", "0.01", True),
    ("tolerance", "0.02", "0.03", False),
    ("max_latency_ms", "none", "800", True),
    ("max_latency_ms", "500", "400", True),
    ("max_latency_ms", "500", "none", False),
    ("alpha", "0.01", "0.02", True),
    ("alpha", "0.01", "0.005", False),
    ("significance", "randomization", "randomization", True),
    ("significance", "randomization", "t-test", False),
    ("fail_on", "metric", "metric, latency", True),
    ("tolerance", "0.02", "lots", False),
    ("min_questions", "30", "25", True),
    ("min_questions", "30", "40", False),
], ids=["same", "tighter", "looser", "no-limit-approved", "lower-limit", "limit-dropped", "alpha-higher",
        "alpha-lower", "same-test", "other-test", "fail-on", "not-a-number", "fewer-unjudged", "more-unjudged"])
def test_a_loosened_setting_stays_approved_while_no_looser(setting: str, approved: str, now: str,
                                                           covered: bool) -> None:
    subject = "question" if setting == "fail_on" else "ndcg@5" if setting == "tolerance" else ""
    approval = approval_of(Changes("a", "b", loosened=(SettingChange(setting, subject, "x", approved),)),
                           42, SHA, LABEL)
    found = review(approval, Changes("a", "b", loosened=(SettingChange(setting, subject, "x", now),)))
    assert (bool(found.approved), bool(found.unapproved)) == (covered, not covered)
    other = SettingChange("tolerance", "mrr@5", "0", "0.1")  # a setting the approval does not hold
    assert review(approval, Changes("a", "b", loosened=(other,))).unapproved == ("tolerance of mrr@5 0 -> 0.1 (new)",)


# The verdict.


def test_the_labeled_run_approves_and_records_the_current_set_at_its_head() -> None:
    decision = decide(lowered(BM25, HYBRID), pull_request(event(added=LABEL)))
    assert decision.check == "approved" and not decision.unlabel
    assert decision.reason == ("the baseline lowers the bar (2 lowered); approved with the label "
                               "'rag-baseline-approved' at 9e8d7c6")
    assert decision.approval == approval_of(lowered(BM25, HYBRID), 42, LATER, LABEL)
    assert decision.review.approved == ("bm25 ndcg@5 0.6000 -> 0.5000", "hybrid ndcg@5 0.7276 -> 0.4000")


def test_a_later_push_within_the_approval_passes_and_keeps_the_record() -> None:
    decision = decide(lowered(replace(BM25, new=0.55)), pull_request(event()), recorded=APPROVED)
    assert decision.check == "approved" and decision.approval == APPROVED
    assert decision.reason == ("the baseline lowers the bar (1 lowered) within what was approved with the label "
                               "'rag-baseline-approved' at 4f3c2b1")


def test_a_later_push_beyond_the_approval_fails_in_one_line_and_takes_the_label_off() -> None:
    decision = decide(lowered(BM25, HYBRID), pull_request(event()), recorded=APPROVED)
    assert decision.check == "fail" and decision.unlabel
    assert decision.reason == ("the baseline lowers the bar beyond what was approved at 4f3c2b1: hybrid ndcg@5 "
                               "0.7276 -> 0.4000 (new); re-apply 'rag-baseline-approved' to approve it")
    assert decision.review.approved == ("bm25 ndcg@5 0.6000 -> 0.5000",)
    assert decision.approval == APPROVED  # kept until a labeled run replaces it


def test_many_unapproved_lowerings_are_counted_after_three() -> None:
    values = tuple(ValueChange(f"r{n}", "ndcg@5", 0.6, 0.5) for n in range(5))
    reason = decide(lowered(*values), pull_request(event()), recorded=APPROVED).reason
    assert ": r0 ndcg@5 0.6000 -> 0.5000 (new), r1 ndcg@5 0.6000 -> 0.5000 (new), r2 ndcg@5 0.6000 -> 0.5000 (new), " \
           "... and 2 more; re-apply" in reason


@pytest.mark.parametrize(("recorded", "labels"), [
    (None, (LABEL,)),
    (APPROVED, ("docs",)),
    (replace(APPROVED, pr=41), (LABEL,)),
    (replace(APPROVED, label="other"), (LABEL,)),
], ids=["no-record", "label-off", "other-pr", "other-label"])
def test_without_a_record_that_counts_the_label_approves_nothing(recorded: Approval | None,
                                                                 labels: tuple[str, ...]) -> None:
    decision = decide(lowered(BM25), pull_request(event(labels)), recorded=recorded)
    assert decision.check == "fail" and decision.approval is None
    if LABEL in labels:
        assert decision.unlabel
        assert decision.reason == ("the baseline lowers the bar and no recorded approval covers it (the action's "
                                   "comment holds none that counts): bm25 ndcg@5 0.6000 -> 0.5000 (new); re-apply "
                                   "'rag-baseline-approved' to approve it")


def test_a_pull_request_that_stops_lowering_passes_and_keeps_the_record_while_the_label_is_on() -> None:
    same = Changes("a", "b")
    assert decide(same, pull_request(event()), recorded=APPROVED).approval == APPROVED
    assert decide(same, pull_request(event(("docs",))), recorded=APPROVED).approval is None
    # The label applied where nothing is lowered approves the empty set.
    empty = decide(same, pull_request(event(added=LABEL)), recorded=APPROVED)
    assert empty.check == "pass" and empty.approval == Approval(42, LATER, LABEL)


@pytest.mark.parametrize(("head", "actor", "comment", "cause"), [
    ("alice/repo", "alice", True, "the pull request comes from the fork alice/repo, so GitHub's token is read-only"),
    ("team/repo", "dependabot[bot]", True, "runs triggered by dependabot[bot] get a read-only token"),
    ("team/repo", "alice", False, "commenting is turned off (comment: false)"),
], ids=["fork", "dependabot", "comment-off"])
def test_where_nothing_is_recorded_only_the_labeled_run_approves(head: str, actor: str, comment: bool,
                                                                 cause: str) -> None:
    note = f"{cause}: no approval is recorded, only the run of the label's own event approves"
    labeled = decide(lowered(BM25), pull_request(event(added=LABEL, head=head)), actor=actor, comment=comment)
    assert (labeled.check, labeled.note, labeled.comment) == ("approved", note, False)
    # A later run ignores any record: the action wrote none here, so one found was written by someone else.
    later = decide(lowered(BM25), pull_request(event(head=head)), actor=actor, comment=comment, recorded=APPROVED)
    assert later.check == "fail" and later.approval is None
    assert f"no recorded approval covers it ({note}): bm25 ndcg@5" in later.reason
    read_only = actor != "alice" or head != "team/repo"
    assert later.unlabel is not read_only
    again = "remove 'rag-baseline-approved' and add it again" if read_only else "re-apply 'rag-baseline-approved'"
    assert later.reason.endswith(f"; {again} to approve it")


def test_a_head_that_is_not_a_commit_is_refused() -> None:
    with pytest.raises(ShapeProblem, match="pull_request.head.sha must be a commit's full hex name, got 'main'"):
        pull_request(event(sha="main"))


# What the approval binds: the head's approved rankings and the exam it was given under (issue 42, rule 7).

RANKINGS = "a1" * 32
EXAM = "e1" * 32
BOUND = approval_of(lowered(BM25, approved_digest=RANKINGS, labels_digest=EXAM), 42, SHA, LABEL)


def test_the_record_binds_the_head_s_digests_and_its_digest_covers_them() -> None:
    assert (BOUND.approved_digest, BOUND.labels_digest) == (RANKINGS, EXAM)
    doc = record_document(BOUND)
    assert (doc["approved_digest"], doc["labels_digest"]) == (RANKINGS, EXAM)
    assert parse_record(Node(json.loads(find_record(f"<!-- pytest-ragretrieval -->\n{record_line(BOUND)}") or ""))) \
        == BOUND
    # The same set under another exam is another approval; a record without digests keeps its old digest.
    assert BOUND.digest != replace(BOUND, labels_digest="e2" * 32).digest != APPROVED.digest
    assert "approved_digest" not in record_document(APPROVED)
    assert parse_record(Node(record_document(APPROVED))) == APPROVED


def bound(**changes: Any) -> dict[str, Any]:
    doc = record_document(BOUND)
    doc.update(changes)
    return doc


@pytest.mark.parametrize(("doc", "problem"), [
    (bound(approved_digest="a1" * 31), "approved_digest must be a digest of 64 lowercase hex digits, got 'a1a1"),
    (bound(labels_digest="E1" * 32), "labels_digest must be a digest of 64 lowercase hex digits, got 'E1E1"),
    (bound(labels_digest=64), "labels_digest must be a string, got 64"),
    (bound(labels_digest="e2" * 32), "digest does not match the set: the record was edited"),
    ({k: v for k, v in bound().items() if k != "approved_digest"}, "digest does not match the set: the record was "
                                                                   "edited"),
], ids=["short", "upper-case", "number", "other-exam", "dropped"])
def test_a_damaged_bound_digest_names_its_json_path(doc: dict[str, Any], problem: str) -> None:
    with pytest.raises(ShapeProblem) as raised:
        parse_record(Node(doc))
    assert str(raised.value).startswith(problem) and "\n" not in str(raised.value)


@pytest.mark.parametrize(("rankings", "exam", "given_for"), [
    ("a2" * 32, EXAM, "other approved rankings"),
    (RANKINGS, "e2" * 32, "another exam (labels changed since)"),
    ("a2" * 32, "e2" * 32, "other approved rankings and another exam (labels changed since)"),
], ids=["rankings", "labels", "both"])
def test_a_push_that_changes_what_was_approved_re_opens_the_approval(rankings: str, exam: str,
                                                                     given_for: str) -> None:
    # The same lowering the label approved: only what it was judged on moved.
    decision = decide(lowered(BM25, approved_digest=rankings, labels_digest=exam), pull_request(event()),
                      recorded=BOUND)
    assert decision.check == "fail" and decision.unlabel and decision.approval == BOUND
    assert decision.reason == (f"the baseline lowers the bar (1 lowered) and the approval at 4f3c2b1 was given for "
                               f"{given_for}: bm25 ndcg@5 0.6000 -> 0.5000; re-apply 'rag-baseline-approved' to "
                               "approve it")
    assert decision.review.approved == () and decision.review.unapproved == ("bm25 ndcg@5 0.6000 -> 0.5000",)


def test_a_push_that_changes_neither_stays_approved_and_an_older_record_binds_only_its_set() -> None:
    same = lowered(replace(BM25, new=0.55), approved_digest=RANKINGS, labels_digest=EXAM)
    assert decide(same, pull_request(event()), recorded=BOUND).check == "approved"
    # A record written before approvals bound digests is honoured as before, whatever the head holds.
    moved = lowered(BM25, approved_digest="a2" * 32, labels_digest="e2" * 32)
    assert decide(moved, pull_request(event()), recorded=APPROVED).check == "approved"
    # A push that lowers nothing passes, re-opened or not; the label's own run binds the head's digests.
    assert decide(replace(moved, lowered=()), pull_request(event()), recorded=BOUND).check == "pass"
    assert decide(moved, pull_request(event(added=LABEL))).approval == replace(
        BOUND, head=LATER, approved_digest="a2" * 32, labels_digest="e2" * 32)


def test_a_segment_lowering_is_approved_apart_from_the_whole_set_s() -> None:
    """A lowered segment (`lang:de`) is its own entry of the set: the whole set's approval of the same metric does
    not cover it, the record keeps the segment (round trip, digest), and a record without one still reads."""
    german = replace(BM25, segment="lang:de")
    assert review(APPROVED, lowered(german)).unapproved == ("bm25 ndcg@5 in segment lang:de 0.6000 -> 0.5000 (new)",)
    approval = approval_of(lowered(german), 42, SHA, LABEL)
    assert record_document(approval)["set"]["lowered"] == [
        {"retriever": "bm25", "metric": "ndcg@5", "base": 0.6, "new": 0.5, "segment": "lang:de"}]
    assert approval.digest != APPROVED.digest
    assert parse_record(Node(json.loads(record_line(approval).split(" ", 2)[2][:-4]))) == approval
    assert review(approval, lowered(german)).approved == ("bm25 ndcg@5 in segment lang:de 0.6000 -> 0.5000",)
    assert review(approval, lowered(BM25)).unapproved == ("bm25 ndcg@5 0.6000 -> 0.5000 (new)",)
    assert parse_record(Node(record_document(APPROVED))) == APPROVED  # no `segment` key: the whole set
