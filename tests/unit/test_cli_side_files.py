"""The command's side files (CHANGES.json, the event, the decision) are validated as the plugin
validates its own files: depth and digit limits, 1e400, booleans as numbers, malformed entries and
an empty label are one line naming the file and the JSON path, exit 2 (issue 21, item 6)."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_ragretrieval.cli import main
from pytest_ragretrieval.review.approval import decide, decision_document, pull_request
from pytest_ragretrieval.review.changes import Changes, Entry, ValueChange, dumps_changes

CHANGES = Changes("old.json", "new.json", lowered=(ValueChange("bm25", "ndcg@5", 0.6, 0.5),),
                  added=(Entry("vector", "", "new in the baseline"),))
EVENT = {"action": "synchronize", "number": 7, "pull_request": {
    "id": 1, "number": 7, "labels": [{"name": "docs"}], "head": {"repo": {"full_name": "team/repo"}},
    "base": {"repo": {"full_name": "team/repo"}}, "body": "a\nbody\twith control characters"}}


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in ("GITHUB_ACTIONS", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_EVENT_PATH"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "changes.json").write_text(dumps_changes(CHANGES), encoding="utf-8")
    (tmp_path / "event.json").write_text(json.dumps(EVENT), encoding="utf-8")
    decision = decide(CHANGES, pull_request(EVENT))
    (tmp_path / "decision.json").write_text(json.dumps(decision_document(decision)), encoding="utf-8")
    return tmp_path


def one_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and captured.out == "", captured
    assert "internal error" not in lines[0]
    return lines[0].removeprefix("ragretrieval: error: ")


def pr_check(*more: str) -> list[str]:
    return ["pr-check", "changes.json", "--event", "event.json", *more]


def edit(path: Path, change: Any) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    change(doc)
    path.write_text(json.dumps(doc), encoding="utf-8")


def test_the_untouched_files_are_read(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(pr_check()) == 1
    assert main(["comment", "--baseline-changes", "changes.json", "--decision", "decision.json"]) == 0


@pytest.mark.parametrize("name", ["changes.json", "event.json", "decision.json"])
def test_nesting_100000_deep_is_one_line_with_its_place(workspace: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    (workspace / name).write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    argv = pr_check() if name != "decision.json" else ["comment", "--decision", name]
    message = one_line(capsys, argv)
    assert message.startswith(f"{name}: not valid JSON (nested deeper than 100 levels at line 1 column 101)"), message


def test_an_integer_of_5000_digits_is_named_by_its_path(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (workspace / "changes.json").read_text(encoding="utf-8").replace('"old": 0.6', '"old": ' + "9" * 5000)
    (workspace / "changes.json").write_text(text, encoding="utf-8")
    assert one_line(capsys, pr_check()) == (
        "changes.json: malformed baseline-changes file: lowered[0].old must be a finite number, got "
        "99999999999999999999... (5000 characters); write it with `ragretrieval diff OLD NEW --json PATH`"
    )


@pytest.mark.parametrize("digits", [310, 400, 4300])
def test_an_integer_no_float_holds_is_named_by_its_path(workspace: Path, capsys: pytest.CaptureFixture[str],
                                                         digits: int) -> None:
    """issue 32: 310 to 4,300 digits decode as Python integers, and gave OverflowError where used."""
    text = (workspace / "changes.json").read_text(encoding="utf-8").replace('"new": 0.5', '"new": ' + "9" * digits)
    (workspace / "changes.json").write_text(text, encoding="utf-8")
    for argv in (pr_check(), ["comment", "--baseline-changes", "changes.json"]):
        assert one_line(capsys, argv) == (
            f"changes.json: malformed baseline-changes file: lowered[0].new must be a finite number, got "
            f"99999999999999999999... ({digits} characters); write it with `ragretrieval diff OLD NEW --json PATH`"
        )


@pytest.mark.parametrize(
    ("raw", "shown"),
    [("1e400", "1e400"), ("true", "true"), ("7.5", "7.5"), ('"7"', 'the string "7"'), ("0", "0"), ("9" * 5000, "99999999999999999999... (5000 characters)")],
)
def test_a_pull_request_number_that_is_no_number_is_refused(
    workspace: Path, capsys: pytest.CaptureFixture[str], raw: str, shown: str
) -> None:
    text = (workspace / "event.json").read_text(encoding="utf-8").replace('"id": 1, "number": 7', f'"id": 1, "number": {raw}')
    (workspace / "event.json").write_text(text, encoding="utf-8")
    assert one_line(capsys, pr_check()) == (
        f"event.json: not a pull_request event payload (pull_request.number must be a whole number from 1 to "
        f"2147483647, got {shown}); pass the file GitHub names in GITHUB_EVENT_PATH (or --event)"
    )


def test_what_the_check_does_not_read_cannot_stop_it(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The payload is GitHub's: a 5000-digit id, 1e400 or NaN elsewhere is no reason to fail the check."""
    text = (workspace / "event.json").read_text(encoding="utf-8").replace('"id": 1', '"id": ' + "9" * 5000)
    text = text.replace('"action": "synchronize"', '"action": 1e400, "other": NaN')
    (workspace / "event.json").write_text(text, encoding="utf-8")
    assert main(pr_check()) == 1
    assert "pull request #7 has no 'rag-baseline-approved' label" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda d: d["pull_request"].update(labels=[{"name": 3}]), "pull_request.labels[0].name must be a string, got 3"),
        (lambda d: d["pull_request"].update(labels={"name": "x"}), "pull_request.labels must be an array, got an object"),
        (lambda d: d["pull_request"]["head"].update(repo={"full_name": "evil\nrepo"}),
         "pull_request.head.repo.full_name holds a control character (U+000A)"),
        (lambda d: d.update(pull_request="7"), "pull_request must be an object, got the string \"7\""),
    ],
)
def test_malformed_event_values_name_their_path(
    workspace: Path, capsys: pytest.CaptureFixture[str], change: Any, path: str
) -> None:
    edit(workspace / "event.json", change)
    assert f"(event.json: not a pull_request event payload ({path})" in f"({one_line(capsys, pr_check())}"


def test_a_deleted_fork_and_a_push_event_are_no_errors(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit(workspace / "event.json", lambda d: d["pull_request"]["head"].update(repo=None))
    assert main(pr_check()) == 1
    assert "comes from the fork (deleted)" in capsys.readouterr().out
    (workspace / "event.json").write_text(json.dumps({"ref": "refs/heads/main"}), encoding="utf-8")
    assert main(pr_check()) == 0


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda d: d.update(lowered=[1]), "lowered[0] must be an object, got 1"),
        (lambda d: d.update(lowered=[["bm25"]]), "lowered[0] must be an object, got an array"),
        (lambda d: d["lowered"][0].update(new=True), "lowered[0].new must be a finite number, got true"),
        (lambda d: d["lowered"][0].pop("metric"), "lowered[0] lacks the key 'metric'"),
        (lambda d: d["lowered"][0].update(extra=1), "lowered[0] holds the unknown key 'extra'; known keys: retriever, metric, old, new, tag, scope, exam, unit, why, segment, side"),
        (lambda d: d["added"][0].update(reason="a\rb"), "added[0].reason holds a control character (U+000D)"),
        (lambda d: d.update(notes="x"), "notes must be an array, got the string \"x\""),
        (lambda d: d.update(lowers_the_bar=False), "lowers_the_bar disagrees with the changes the file lists"),
        (lambda d: d.update(lowers_the_bar=0), "lowers_the_bar must be true or false, got 0"),
        (lambda d: d.pop("raised"), "the document lacks the key 'raised'"),
        (lambda d: d["lowered"][0].update(metric="ndcg@\u00b2"), "lowered[0].metric holds 'ndcg@²' is not a metric key: "
         "a lower-case name, then optionally '@' and a cutoff of 1 to 9 ASCII digits, the first not 0 (ndcg@5), or "
         "'@', such digits and 'c' for a budget of characters (char_recall@2000c)"),
    ],
)
def test_malformed_changes_name_their_path(workspace: Path, capsys: pytest.CaptureFixture[str], change: Any, path: str) -> None:
    edit(workspace / "changes.json", change)
    for argv in (pr_check(), ["comment", "--baseline-changes", "changes.json"]):
        assert one_line(capsys, argv) == (
            f"changes.json: malformed baseline-changes file: {path}; write it with `ragretrieval diff OLD NEW --json PATH`"
        )


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda d: d.update(comment="yes"), 'comment must be true or false, got the string "yes"'),
        (lambda d: d.update(check="maybe"), "check must be one of pass, approved, fail, skipped, got 'maybe'"),
        (lambda d: d.update(reason=None), "reason must be a string, got null"),
        (lambda d: d.pop("label"), "the document lacks the key 'label'"),
    ],
)
def test_malformed_decisions_name_their_path(workspace: Path, capsys: pytest.CaptureFixture[str], change: Any, path: str) -> None:
    edit(workspace / "decision.json", change)
    assert one_line(capsys, ["comment", "--decision", "decision.json"]) == (
        f"decision.json: not a decision written by `ragretrieval pr-check --json` ({path}); "
        "write it with `ragretrieval pr-check --json PATH`"
    )


@pytest.mark.parametrize("label", ["", "   ", "a\nb", "x" * 51])
def test_a_label_that_no_pull_request_can_carry_is_refused(workspace: Path, capsys: pytest.CaptureFixture[str], label: str) -> None:
    assert one_line(capsys, pr_check("--label", label)) == (
        f"argument --label: expected a label name of 1 to 50 printable characters, got {label!r}"
    )


@pytest.mark.parametrize("name", ["changes.json", "event.json"])
def test_a_fifo_as_an_input_is_refused_without_blocking(workspace: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    (workspace / name).unlink()
    os.mkfifo(workspace / name)
    assert one_line(capsys, pr_check()).startswith(f"{name}: is not a regular file")
