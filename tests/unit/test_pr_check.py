"""The label and fork decisions of the pull-request check: pure, from the event payload, no network."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from stages import document

from pytest_ragretrieval.baseline.format import dumps
from pytest_ragretrieval.cli import main
from pytest_ragretrieval.cli.pr_check import NO_RECORD
from pytest_ragretrieval.record.exam import gold_digest
from pytest_ragretrieval.review.approval import PullRequest, decide, pull_request
from pytest_ragretrieval.review.changes import Changes, Entry, SettingChange, ValueChange, dumps_changes

LOWERED = Changes("main:baselines/retrieval.json", "baselines/retrieval.json",
                  lowered=(ValueChange("bm25", "ndcg@5", 0.5885, 0.51),),
                  removed=(Entry("hybrid", "mrr@5", "no longer in the baseline"),))
RAISED = Changes("main:b.json", "b.json", raised=(ValueChange("bm25", "ndcg@5", 0.5, 0.6),))
LOOSENED = Changes("main:b.json", "b.json", loosened=(SettingChange("tolerance", "ndcg@5", "0", "0.02"),))


SHA = "4f3c2b1a" + "0" * 32


def event(labels: tuple[str, ...] = (), head: str | None = "team/repo", base: str = "team/repo",
          head_is_fork: bool = False, added: str | None = "", sha: str = SHA) -> dict[str, Any]:
    """A pull_request event; by default the `labeled` event of its first label (the run that approves),
    `added=None` for a push (`synchronize`)."""
    added = (labels[0] if labels else None) if added == "" else added
    return {
        "action": "labeled" if added else "synchronize",
        **({"label": {"name": added, "color": "ededed"}} if added else {}),
        "pull_request": {
            "number": 42,
            "labels": [{"name": name, "color": "ededed"} for name in labels],
            "head": {"ref": "feature", "sha": sha,
                     "repo": None if head is None else {"full_name": head, "fork": head_is_fork}},
            "base": {"ref": "main", "repo": {"full_name": base, "fork": False}},
        },
    }


def test_the_event_payload_is_read_as_github_sends_it() -> None:
    pr = pull_request(event(("rag-baseline-approved", "docs"), head="someone/repo"))
    assert pr == PullRequest(42, ("rag-baseline-approved", "docs"), "someone/repo", "team/repo", SHA,
                             "rag-baseline-approved")
    assert pr is not None and pr.from_fork
    assert pull_request({"ref": "refs/heads/main", "commits": []}) is None  # a push


@pytest.mark.parametrize(("changes", "labels", "check"), [
    (RAISED, (), "pass"),
    (Changes("", "b.json", added=(Entry("bm25", "", "new"),)), (), "pass"),
    (LOWERED, (), "fail"),
    (LOWERED, ("docs",), "fail"),
    (LOWERED, ("rag-baseline-approved",), "approved"),
    (LOOSENED, (), "fail"),
    (LOOSENED, ("rag-baseline-approved",), "approved"),
], ids=["raised", "first-baseline", "lowered", "other-label", "lowered-approved", "loosened", "loosened-approved"])
def test_lowering_fails_unless_the_label_approves_it(changes: Changes, labels: tuple[str, ...], check: str) -> None:
    decision = decide(changes, pull_request(event(labels)))
    assert decision.check == check
    assert decision.failed == (check == "fail")


def test_the_failure_says_what_was_lowered_and_how_to_approve() -> None:
    decision = decide(LOWERED, pull_request(event()))
    assert decision.reason == (
        "the baseline lowers the bar (1 lowered, 1 removed) and pull request #42 has no 'rag-baseline-approved' "
        "label; a maintainer who approves the lower bar adds the label, and the check runs again"
    )


def test_the_label_name_is_configurable() -> None:
    assert decide(LOWERED, pull_request(event(("ok-lower",))), label="ok-lower").check == "approved"
    assert decide(LOWERED, pull_request(event(("rag-baseline-approved",))), label="ok-lower").check == "fail"


def test_without_a_pull_request_nothing_is_checked_or_commented() -> None:
    decision = decide(LOWERED, None)
    assert (decision.check, decision.comment, decision.comment_reason) == ("skipped", False, "not a pull request")
    assert not decision.failed


@pytest.mark.parametrize(("payload", "actor", "wanted", "comment"), [
    (event(), "alice", True, True),
    (event(head_is_fork=True), "alice", True, True),  # a fork's own branches: its token may write
    (event(head="alice/repo"), "alice", True, False),
    (event(head=None), "alice", True, False),  # the fork was deleted
    (event(), "dependabot[bot]", True, False),
    (event(), "alice", False, False),
], ids=["same-repo", "repo-that-is-a-fork", "from-fork", "deleted-fork", "dependabot", "turned-off"])
def test_comment_only_where_the_token_can_write(payload: dict[str, Any], actor: str, wanted: bool,
                                               comment: bool) -> None:
    decision = decide(LOWERED, pull_request(payload), actor=actor, comment=wanted)
    assert decision.comment is comment
    assert decision.check == "fail"  # the fork decides the channel, never the verdict


def test_a_fork_keeps_the_summary_as_its_channel() -> None:
    decision = decide(RAISED, pull_request(event(head="alice/repo")))
    assert decision.comment_reason == (
        "the pull request comes from the fork alice/repo, so GitHub's token is read-only: the results are in the "
        "job summary"
    )


# The command, as the workflow runs it.


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in ("GITHUB_ACTIONS", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ACTOR", "GITHUB_EVENT_PATH"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "changes.json").write_text(dumps_changes(LOWERED), encoding="utf-8")
    return tmp_path


def write_event(folder: Path, payload: dict[str, Any]) -> str:
    (folder / "event.json").write_text(json.dumps(payload), encoding="utf-8")
    return str(folder / "event.json")


def test_pr_check_exits_1_without_the_label_and_0_with_it(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pr-check", "changes.json", "--event", write_event(workspace, event())]) == 1
    assert capsys.readouterr().out.startswith("baseline check: fail: the baseline lowers the bar")
    assert main(["pr-check", "changes.json", "--event", write_event(workspace, event(("rag-baseline-approved",)))]) == 0
    assert capsys.readouterr().out.startswith("baseline check: approved: ")


def test_pr_check_under_github_actions_writes_outputs_annotations_and_summary(
        workspace: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_OUTPUT", str(workspace / "output"))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(workspace / "summary.md"))
    monkeypatch.setenv("GITHUB_EVENT_PATH", write_event(workspace, event(head="alice/repo")))
    assert main(["pr-check", "changes.json", "--json", "decision.json"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert (workspace / "output").read_text(encoding="utf-8") == "check=fail\ncomment=false\nunlabel=\n"
    assert json.loads((workspace / "decision.json").read_text(encoding="utf-8"))["check"] == "fail"
    assert any(line.startswith("::error file=baselines/retrieval.json,title=rag%3A baseline lowered::") for line in out)
    assert "::error file=baselines/retrieval.json,title=rag%3A baseline lowered::ndcg@5 of 'bm25': 0.5885 -> 0.5100" in out
    assert out[-1].startswith("::notice title=rag%3A no comment::the pull request comes from the fork alice/repo")
    summary = (workspace / "summary.md").read_text(encoding="utf-8")
    assert summary.startswith("## 基线检查 / Baseline check\n\n❌ ")
    assert "| bm25      | ndcg@5 | 0.5885 |  0.5100 | -0.0785 |" in summary


def test_pr_check_with_a_broken_event_file_is_one_line(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (workspace / "event.json").write_text("{", encoding="utf-8")
    assert main(["pr-check", "changes.json", "--event", "event.json"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("ragretrieval: error: event.json: not valid JSON")


def test_pr_check_with_an_event_that_is_not_a_pull_request_payload_is_one_line(
        workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (workspace / "event.json").write_text(json.dumps({"pull_request": {"labels": []}}), encoding="utf-8")
    assert main(["pr-check", "changes.json", "--event", "event.json"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("ragretrieval: error: event.json: not a pull_request event payload")


def test_pr_check_outside_a_pull_request_is_skipped_and_passes(workspace: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    # A push event: no base branch, no label; the lowered changes are not judged.
    (workspace / "event.json").write_text(json.dumps({"ref": "refs/heads/main"}), encoding="utf-8")
    assert main(["pr-check", "changes.json", "--event", "event.json"]) == 0
    assert capsys.readouterr().out.startswith("baseline check: skipped: not a pull request")


def test_pr_check_reads_the_actor_from_the_environment(workspace: Path, capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_ACTOR", "dependabot[bot]")
    monkeypatch.setenv("GITHUB_OUTPUT", str(workspace / "output"))
    assert main(["pr-check", "changes.json", "--event", write_event(workspace, event())]) == 1
    assert (workspace / "output").read_text(encoding="utf-8") == "check=fail\ncomment=false\nunlabel=\n"
    assert "comment: runs triggered by dependabot[bot] get a read-only token" in capsys.readouterr().out


# The recorded approval (--approved): the loop the action runs, without GitHub.

FURTHER = Changes("main:baselines/retrieval.json", "baselines/retrieval.json",
                  lowered=(ValueChange("bm25", "ndcg@5", 0.5885, 0.51), ValueChange("hybrid", "ndcg@5", 0.7276, 0.4)),
                  removed=(Entry("hybrid", "mrr@5", "no longer in the baseline"),))


def approve_and_comment(workspace: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """The labeled run: pr-check approves, `comment` renders the comment the bot posts (comment.md)."""
    assert main(["pr-check", "changes.json", "--event", write_event(workspace, event(("rag-baseline-approved",))),
                 "--json", "decision.json"]) == 0
    capsys.readouterr()
    assert main(["comment", "--baseline-changes", "changes.json", "--decision", "decision.json"]) == 0
    comment = capsys.readouterr().out
    (workspace / "comment.md").write_text(comment, encoding="utf-8")
    return comment


def test_a_later_run_reads_the_approval_from_the_comment_and_fails_beyond_it(
        workspace: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    comment = approve_and_comment(workspace, capsys)
    assert comment.splitlines()[1].startswith("<!-- pytest-ragretrieval-approval {")
    (workspace / "further.json").write_text(dumps_changes(FURTHER), encoding="utf-8")
    monkeypatch.setenv("GITHUB_OUTPUT", str(workspace / "output"))
    push = write_event(workspace, event(("rag-baseline-approved",), added=None))
    assert main(["pr-check", "changes.json", "--event", push, "--approved", "comment.md"]) == 0
    assert "baseline check: approved: the baseline lowers the bar (1 lowered, 1 removed) within what was approved " \
           "with the label 'rag-baseline-approved' at 4f3c2b1" in capsys.readouterr().out
    assert main(["pr-check", "further.json", "--event", push, "--approved", "comment.md"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ("baseline check: fail: the baseline lowers the bar beyond what was approved at 4f3c2b1: "
                      "hybrid ndcg@5 0.7276 -> 0.4000 (new); re-apply 'rag-baseline-approved' to approve it")
    assert ("label: 'rag-baseline-approved' does not cover what the pull request lowers now (it approved another "
            "set, or other rankings or another exam): the action takes it off") in out
    assert (workspace / "output").read_text(encoding="utf-8").splitlines()[-1] == "unlabel=rag-baseline-approved"


def test_the_approval_as_a_json_record(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    approve_and_comment(workspace, capsys)
    record = json.loads((workspace / "decision.json").read_text(encoding="utf-8"))["approval"]
    (workspace / "approved.json").write_text(json.dumps(record), encoding="utf-8")
    (workspace / "further.json").write_text(dumps_changes(FURTHER), encoding="utf-8")
    push = write_event(workspace, event(("rag-baseline-approved",), added=None))
    capsys.readouterr()
    assert main(["pr-check", "further.json", "--event", push, "--approved", "approved.json"]) == 1
    assert "beyond what was approved at 4f3c2b1: hybrid ndcg@5" in capsys.readouterr().out
    # A record a person hands over must be whole: one line naming the file, the JSON path and the fix.
    record["set"]["lowered"][0]["new"] = "low"
    (workspace / "approved.json").write_text(json.dumps(record), encoding="utf-8")
    assert main(["pr-check", "further.json", "--event", push, "--approved", "approved.json"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == ("ragretrieval: error: approved.json: not an approval record (set.lowered[0].new must be a finite "
                    'number, got the string "low"); pass the action\'s comment as the bot posted it, or the `approval` '
                    "of `pr-check --json`")


def test_an_edited_record_in_the_comment_is_ignored_and_the_check_fails_closed(
        workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    comment = approve_and_comment(workspace, capsys)
    # Someone lowers the approved value in the hidden line without the digest that goes with it.
    (workspace / "comment.md").write_text(comment.replace('"new":0.51', '"new":0.1'), encoding="utf-8")
    push = write_event(workspace, event(("rag-baseline-approved",), added=None))
    assert main(["pr-check", "changes.json", "--event", push, "--approved", "comment.md"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[1] == ("approval: the record in comment.md is ignored: digest does not match the set: the record was "
                      "edited")
    assert "no recorded approval covers it (the action's comment holds none that counts)" in out[0]


@pytest.mark.parametrize(("text", "problem"), [
    (None, "comment.md: file not found"),
    ("## a comment by someone\n", "comment.md: neither an approval record (JSON) nor the action's comment (its first "
                                  "line is not <!-- pytest-ragretrieval -->)"),
    ("{", "comment.md: not valid JSON"),
], ids=["missing", "not-ours", "broken-json"])
def test_an_approved_file_that_is_neither_is_one_line(workspace: Path, capsys: pytest.CaptureFixture[str],
                                                      text: str | None, problem: str) -> None:
    if text is not None:
        (workspace / "comment.md").write_text(text, encoding="utf-8")
    assert main(["pr-check", "changes.json", "--event", write_event(workspace, event()), "--approved",
                 "comment.md"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"ragretrieval: error: {problem}")


def test_the_action_comment_without_a_record_approves_nothing(workspace: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    (workspace / "comment.md").write_text("<!-- pytest-ragretrieval -->\n## 检索门禁\n", encoding="utf-8")
    push = write_event(workspace, event(("rag-baseline-approved",), added=None))
    assert main(["pr-check", "changes.json", "--event", push, "--approved", "comment.md"]) == 1
    assert "no recorded approval covers it" in capsys.readouterr().out


def test_the_label_to_take_off_is_written_for_a_url(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_OUTPUT", str(workspace / "output"))
    push = write_event(workspace, event(("needs review/ok",), added=None))
    assert main(["pr-check", "changes.json", "--event", push, "--label", "needs review/ok"]) == 1
    assert (workspace / "output").read_text(encoding="utf-8").endswith("unlabel=needs%20review%2Fok\n")


CI_PAGE = (Path(__file__).resolve().parents[2] / "docs" / "ci.md").read_text(encoding="utf-8")


def test_the_documented_event_example_is_what_pr_check_reads(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    block = CI_PAGE.split("<!-- pr-check-event:start -->", 1)[1].split("<!-- pr-check-event:end -->", 1)[0]
    example = block.strip().removeprefix("```json").removesuffix("```")
    (workspace / "event.json").write_text(example, encoding="utf-8")
    assert main(["pr-check", "changes.json", "--event", "event.json"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("baseline check: approved: the baseline lowers the bar")
    assert out[1].startswith("comment: the pull request comes from the fork alice/knowledge-base")
    payload = json.loads(example)
    payload["pull_request"]["labels"] = []
    del payload["action"], payload["label"]
    assert main(["pr-check", "changes.json", "--event", write_event(workspace, payload)]) == 1
    assert "and pull request #42 has no 'rag-baseline-approved' label" in capsys.readouterr().out


def test_an_unreadable_base_needs_the_label_as_a_lowering_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """issue 32: `diff --against` names a base config or baseline it cannot read in CHANGES.json's
    `unreadable`; pr-check fails closed without the label and approves it with the label."""
    monkeypatch.chdir(tmp_path)
    for name in ("GITHUB_ACTIONS", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_EVENT_PATH"):
        monkeypatch.delenv(name, raising=False)
    why = "the config at origin/main (pyproject.toml) cannot be read by this version: ..."
    (tmp_path / "changes.json").write_text(dumps_changes(Changes("", "new.json", unreadable=(why,))), encoding="utf-8")
    (tmp_path / "push.json").write_text(json.dumps(event(added=None)), encoding="utf-8")
    (tmp_path / "labeled.json").write_text(json.dumps(event(("rag-baseline-approved",))), encoding="utf-8")
    assert main(["pr-check", "changes.json", "--event", "push.json"]) == 1
    assert "the baseline lowers the bar (1 side of the base unreadable) and pull request #42 has no " in capsys.readouterr().out
    assert main(["pr-check", "changes.json", "--event", "labeled.json"]) == 0
    assert "approved with the label 'rag-baseline-approved'" in capsys.readouterr().out


# What the approval binds (issue 42, rule 7): the loop through `diff --json`, on baseline files.

GOLD = {"q1": {"c1": 1}, "q2": {"c3": 1}}


def write_baseline(path: Path, rankings: dict[str, list[str]], gold: dict[str, dict[str, int]]) -> None:
    """A baseline of bm25 at k 2 whose recall@2 is what its rankings score under `gold`, the labels its
    fingerprint keeps (the exam an approval is given under)."""
    values = {qid: sum(1 for cid in ranking if gold[qid].get(cid, 0) > 0) / len(gold[qid])
              for qid, ranking in rankings.items()}
    fingerprint = {
        "yardstick": {"k": 2, "metrics_version": 1, "grading_version": 1}, "tokenizer": "jieba 0.42.1",
        "chunks": {"sha256": "c" * 64, "count": 5, "digests": {f"c{n}": f"{n}c" * 6 for n in range(1, 6)}},
        "questions": {"sha256": hashlib.sha256(json.dumps(gold, sort_keys=True).encode()).hexdigest(), "count": 2,
                      "digests": {qid: {"query": f"{qid}-query", "gold": gold_digest(graded, ()),
                                        "tags": []} for qid, graded in gold.items()},
                      "labels": gold},
        "retrievers": {"bm25": {"type": "bm25", "k1": 1.5}},
    }
    entry = {"metrics": {"recall@2": sum(values.values()) / len(values)},
             "questions": {qid: {"ranking": ranking, "metrics": {"recall@2": values[qid]}}
                           for qid, ranking in rankings.items()}}
    path.write_text(dumps(document(2, fingerprint, {"bm25": entry})), encoding="utf-8")


def check(folder: Path, capsys: pytest.CaptureFixture[str], payload: dict[str, Any], *more: str) -> tuple[int, str]:
    """`diff base.json head.json --json changes.json`, then `pr-check` on it: (exit code, first line)."""
    main(["diff", "base.json", "head.json", "--json", "changes.json"])
    capsys.readouterr()
    code = main(["pr-check", "changes.json", "--event", write_event(folder, payload), "--json", "decision.json",
                 *more])
    return code, capsys.readouterr().out.splitlines()[0]


def test_an_approval_is_re_opened_by_a_push_that_adds_gold_and_holds_through_one_that_changes_neither(
        workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_baseline(workspace / "base.json", {"q1": ["c1", "c2"], "q2": ["c3", "c4"]}, GOLD)
    worse = {"q1": ["c2", "c4"], "q2": ["c3", "c4"]}  # bm25 loses q1's gold, recorded with the flag
    write_baseline(workspace / "head.json", worse, GOLD)
    code, line = check(workspace, capsys, event(("rag-baseline-approved",)))
    assert (code, line) == (0, "baseline check: approved: the baseline lowers the bar (1 lowered); approved with the "
                               "label 'rag-baseline-approved' at 4f3c2b1")
    main(["comment", "--baseline-changes", "changes.json", "--decision", "decision.json"])
    (workspace / "comment.md").write_text(capsys.readouterr().out, encoding="utf-8")
    push = event(("rag-baseline-approved",), added=None, sha="9e8d7c6b" + "1" * 32)
    # A push that changes neither the approved rankings nor the labels (code, docs): still approved.
    assert check(workspace, capsys, push, "--approved", "comment.md") == (
        0, "baseline check: approved: the baseline lowers the bar (1 lowered) within what was approved with the "
           "label 'rag-baseline-approved' at 4f3c2b1")
    # A push that only adds gold: the same rankings, judged under another exam. The approval is re-opened.
    write_baseline(workspace / "head.json", worse, {**GOLD, "q2": {"c3": 1, "c5": 2}})
    code, line = check(workspace, capsys, push, "--approved", "comment.md")
    assert code == 1
    # Both sides' rankings scored under today's exam (c5 now gold of q2): 0.75 -> 0.25.
    assert line == ("baseline check: fail: the baseline lowers the bar (1 lowered) and the approval at 4f3c2b1 was "
                    "given for another exam (labels changed since): bm25 recall@2 0.7500 -> 0.2500 (approved: 0.5000); "
                    "re-apply 'rag-baseline-approved' to approve it")
    decision = json.loads((workspace / "decision.json").read_text(encoding="utf-8"))
    assert decision["unlabel"] and decision["approval"]["labels_digest"] != json.loads(
        (workspace / "changes.json").read_text(encoding="utf-8"))["labels_digest"]
    main(["comment", "--baseline-changes", "changes.json", "--decision", "decision.json"])
    assert "the approval at `4f3c2b1` was given for another exam (labels changed since)" in capsys.readouterr().out


def test_no_comment_says_in_one_line_that_it_reads_no_approval_record(
        workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--no-comment` reads no approval record (the action's comment holds it): the run says so, once, rather
    than reading as plainly unapproved (issue 48)."""
    write_baseline(workspace / "base.json", {"q1": ["c1", "c2"], "q2": ["c3", "c4"]}, GOLD)
    write_baseline(workspace / "head.json", {"q1": ["c2", "c4"], "q2": ["c3", "c4"]}, GOLD)
    main(["diff", "base.json", "head.json", "--json", "changes.json"])
    capsys.readouterr()
    path = write_event(workspace, event(added=None))
    assert main(["pr-check", "changes.json", "--event", path, "--no-comment"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == NO_RECORD and lines.count(NO_RECORD) == 1
    main(["pr-check", "changes.json", "--event", path])
    assert NO_RECORD not in capsys.readouterr().out.splitlines()
