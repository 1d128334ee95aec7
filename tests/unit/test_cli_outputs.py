"""The command's `--json` writes as the plugin writes: never over a file the command reads, never
over a device, FIFO or socket; one line naming the option and the fix, before anything is written."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from stages import document

from pytest_ragretrieval.baseline.format import dumps
from pytest_ragretrieval.cli import main

PYPROJECT = """\
[tool.ragretrieval]
chunks = "fixtures/chunks.jsonl"
evalset = "fixtures/evalset.jsonl"
k = 2

[tool.ragretrieval.retrievers.bm25]
type = "bm25"
user_dict = "fixtures/user_dict.txt"
"""
FINGERPRINT = {"k": 2, "tokenizer": "jieba 0.42.1", "retrievers": {"bm25": {"type": "bm25"}}}


def baseline(ndcg: float) -> str:
    return dumps(document(2, FINGERPRINT, {"bm25": {"metrics": {"ndcg@2": ndcg}, "questions": {}}}))


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=cwd, check=True,
                   capture_output=True, text=True, timeout=60)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git work tree whose baseline was lowered since HEAD, and the changes and event files of a pull request."""
    (tmp_path / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    (tmp_path / "fixtures").mkdir()
    for name in ("chunks.jsonl", "evalset.jsonl"):
        (tmp_path / "fixtures" / name).write_text("", encoding="utf-8")
    (tmp_path / "fixtures" / "user_dict.txt").write_text("猫眼屏 5\n", encoding="utf-8")
    (tmp_path / "baselines").mkdir()
    (tmp_path / "baselines" / "retrieval.json").write_text(baseline(0.6), encoding="utf-8")
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "base")
    (tmp_path / "baselines" / "retrieval.json").write_text(baseline(0.5), encoding="utf-8")
    (tmp_path / "old.json").write_text(baseline(0.6), encoding="utf-8")
    (tmp_path / "event.json").write_text(json.dumps({"pull_request": {"number": 7, "labels": []}}), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    for name in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ACTIONS", "GITHUB_EVENT_PATH"):
        monkeypatch.delenv(name, raising=False)
    main(["diff", "old.json", "baselines/retrieval.json", "--json", "changes.json"])
    assert (tmp_path / "changes.json").is_file()
    return tmp_path


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file() and ".git" not in p.parts}


def refused(capsys: pytest.CaptureFixture[str], folder: Path, argv: list[str]) -> str:
    before = snapshot(folder)
    capsys.readouterr()
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and captured.out == "", captured
    assert snapshot(folder) == before
    return lines[0]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["diff", "--against", "HEAD", "--json", "baselines/retrieval.json"],
         "--json baselines/retrieval.json: is the baseline, which writing would overwrite; give another path"),
        (["diff", "--against", "HEAD", "--json", "pyproject.toml"],
         "--json pyproject.toml: is the config file, which writing would overwrite; give another path"),
        (["diff", "old.json", "baselines/retrieval.json", "--json", "old.json"],
         "--json old.json: is OLD.json, which writing would overwrite; give another path"),
        (["diff", "old.json", "baselines/retrieval.json", "--old-config", "pyproject.toml", "--new-config",
          "pyproject.toml", "--json", "pyproject.toml"],
         "--json pyproject.toml: is --old-config, which writing would overwrite; give another path"),
        (["pr-check", "changes.json", "--event", "event.json", "--json", "changes.json"],
         "--json changes.json: is CHANGES.json, which writing would overwrite; give another path"),
        (["pr-check", "changes.json", "--event", "event.json", "--json", "event.json"],
         "--json event.json: is the event file, which writing would overwrite; give another path"),
        (["pr-check", "changes.json", "--event", "event.json", "--approved", "comment.md", "--json", "comment.md"],
         "--json comment.md: is --approved, which writing would overwrite; give another path"),
        # issue 32: the project's inputs, though neither side names them
        (["diff", "old.json", "old.json", "--json", "baselines/retrieval.json"],
         "--json baselines/retrieval.json: is the baseline, which writing would overwrite; give another path"),
        (["diff", "old.json", "old.json", "--json", "pyproject.toml"],
         "--json pyproject.toml: is the config file, which writing would overwrite; give another path"),
        (["diff", "old.json", "old.json", "--json", "fixtures/evalset.jsonl"],
         "--json fixtures/evalset.jsonl: is the eval set, which writing would overwrite; give another path"),
        (["pr-check", "changes.json", "--event", "event.json", "--json", "fixtures/chunks.jsonl"],
         "--json fixtures/chunks.jsonl: is the chunks file, which writing would overwrite; give another path"),
        (["diff", "old.json", "old.json", "--json", "fixtures/user_dict.txt"],
         "--json fixtures/user_dict.txt: is retriever 'bm25''s user_dict, which writing would overwrite; give another path"),
        (["pr-check", "changes.json", "--event", "event.json", "--json", "baselines"],
         "--json baselines: is a directory; give a file path"),
    ],
)
def test_json_never_overwrites_an_input(repo: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    assert refused(capsys, repo, argv) == f"ragretrieval: error: {message}"


def test_json_is_not_the_workflow_output_file(repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    (repo / "output").write_text("")
    monkeypatch.setenv("GITHUB_OUTPUT", str(repo / "output"))
    assert refused(capsys, repo, ["pr-check", "changes.json", "--event", "event.json", "--json", "output"]) == (
        "ragretrieval: error: --json output: is $GITHUB_OUTPUT, which writing would overwrite; give another path"
    )


def test_the_event_from_the_environment_is_an_input_too(repo: Path, capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(repo / "event.json"))
    assert refused(capsys, repo, ["pr-check", "changes.json", "--json", "event.json"]).endswith(
        "--json event.json: is the event file, which writing would overwrite; give another path"
    )


@pytest.mark.parametrize("command", ["diff", "pr-check"])
def test_json_onto_a_fifo_is_refused_without_blocking(repo: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    os.mkfifo(repo / "pipe")
    argv = (["diff", "old.json", "baselines/retrieval.json"] if command == "diff"
            else ["pr-check", "changes.json", "--event", "event.json"])
    assert refused(capsys, repo, [*argv, "--json", "pipe"]) == (
        "ragretrieval: error: --json pipe: is a FIFO (named pipe), not a regular file, and writing would replace it; "
        "give a file path"
    )


def test_json_onto_a_device_is_refused(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        os.mknod(repo / "null", 0o666 | 0o020000, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("making a character device needs root")
    assert refused(capsys, repo, ["diff", "old.json", "baselines/retrieval.json", "--json", "null"]).endswith(
        "--json null: is a character device, not a regular file, and writing would replace it; give a file path"
    )


def test_a_fresh_path_is_written(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pr-check", "changes.json", "--event", "event.json", "--json", "decision.json"]) == 1
    assert json.loads((repo / "decision.json").read_text())["check"] == "fail"
