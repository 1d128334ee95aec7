"""The label and fork decisions of the pull-request check: pure, from the event payload, no network."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_ragretrieval.cli import main
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
