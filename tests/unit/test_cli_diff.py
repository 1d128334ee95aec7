"""`ragretrieval diff --fail-on-lower`, `--json` and `--against`: the exit codes the pull-request check relies on."""
from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from stages import document

from pytest_ragretrieval.baseline.format import dumps
from pytest_ragretrieval.cli import main

FINGERPRINT: dict[str, Any] = {"k": 2, "tokenizer": "jieba 0.42.1", "retrievers": {"bm25": {"type": "bm25"}}}
SETTINGS = """\
[tool.ragretrieval]
chunks = "fixtures/chunks.jsonl"
evalset = "fixtures/evalset.jsonl"
k = 2
metrics = ["recall", "ndcg"]
{extra}
[tool.ragretrieval.retrievers.bm25]
type = "bm25"
"""


def results(ndcg: float = 0.6, recall: float = 0.75, **more: float) -> str:
    entry = {"metrics": {"recall@2": recall, "ndcg@2": ndcg, **more}, "questions": {}}
    return dumps(document(2, FINGERPRINT, {"bm25": entry}))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "old.json").write_text(results(), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(("new", "code", "verdict"), [
    (results(), 0, "the baseline does not lower the bar"),
    (results(ndcg=0.7), 0, "the baseline does not lower the bar"),
    (results(ndcg=0.59), 1, "the baseline lowers the bar: 1 value lowered"),
    (dumps(document(2, FINGERPRINT, {"bm25": {"metrics": {"recall@2": 0.75}, "questions": {}}})), 1,
     "the baseline lowers the bar: 1 entry removed"),
    (dumps(document(2, FINGERPRINT, {})), 1, "the baseline lowers the bar: 1 entry removed"),
], ids=["same", "raised", "lowered", "metric-removed", "retriever-removed"])
def test_fail_on_lower_exit_codes(files: Path, capsys: pytest.CaptureFixture[str], new: str, code: int,
                                  verdict: str) -> None:
    (files / "new.json").write_text(new, encoding="utf-8")
    status, out, err = run(capsys, "diff", "old.json", "new.json", "--fail-on-lower")
    assert (status, err) == (code, "")
    assert out.splitlines()[-1] == verdict


def test_two_files_alone_say_that_the_settings_were_not_compared(files: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    (files / "new.json").write_text(results(), encoding="utf-8")
    status, out, _ = run(capsys, "diff", "old.json", "new.json", "--fail-on-lower")
    assert status == 0
    assert ("  note: settings (tolerance, significance, ...) not compared: give --old-config and --new-config, "
            "or use --against REV") in out.splitlines()


def test_a_system_change_that_lowers_nothing_is_named_and_passes(files: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    other = {**FINGERPRINT, "retrievers": {"bm25": {"type": "bm25", "k1": 0.9}}}
    entry = {"metrics": {"recall@2": 0.75, "ndcg@2": 0.6}, "questions": {}}
    (files / "new.json").write_text(dumps(document(2, other, {"bm25": entry})), encoding="utf-8")
    status, out, _ = run(capsys, "diff", "old.json", "new.json")
    assert status == 0 and "compared across changes: bm25.k1 (none) -> 0.9" in out.splitlines()
    status, out, _ = run(capsys, "diff", "old.json", "new.json", "--fail-on-lower")
    assert status == 0
    assert "  compared across changes: bm25.k1 (none) -> 0.9" in out.splitlines()


def test_a_raised_tolerance_in_the_config_lowers_the_bar(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (files / "new.json").write_text(results(), encoding="utf-8")
    for side, extra in (("base", ""), ("pr", 'tolerance = {default = 0.0, ndcg = 0.02}')):
        (files / side).mkdir()
        (files / side / "pyproject.toml").write_text(SETTINGS.format(extra=extra), encoding="utf-8")
    status, out, _ = run(capsys, "diff", "old.json", "new.json", "--fail-on-lower",
                         "--old-config", "base/pyproject.toml", "--new-config", "pr/pyproject.toml")
    assert status == 1
    assert "  loosened: tolerance of ndcg@2 0 -> 0.02" in out.splitlines()


def test_json_holds_the_classified_changes(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (files / "new.json").write_text(results(ndcg=0.5, **{"map@2": 0.3}), encoding="utf-8")
    status, _, _ = run(capsys, "diff", "old.json", "new.json", "--json", "changes.json")
    assert status == 1  # without --fail-on-lower: the review view's status
    doc = json.loads((files / "changes.json").read_text(encoding="utf-8"))
    assert doc["kind"] == "ragretrieval-baseline-changes" and doc["lowers_the_bar"] is True
    assert doc["lowered"] == [{"retriever": "bm25", "metric": "ndcg@2", "old": 0.6, "new": 0.5, "tag": "", "scope": "",
                              "exam": ""}]
    assert doc["added"] == [{"retriever": "bm25", "metric": "map@2", "reason": "new in the baseline"}]


@pytest.mark.parametrize("argv", [
    ["diff", "old.json", "missing.json", "--fail-on-lower"],
    ["diff", "old.json", "--fail-on-lower"],
    ["diff", "old.json", "new.json", "--against", "main"],
    ["diff", "--against", "no-such-rev", "--fail-on-lower"],
    ["diff", "old.json", "new.json", "--fail-on-lower", "--old-config", "pyproject.toml"],
    ["diff", "--against", "main", "--new-config", "pyproject.toml"],
], ids=["missing-file", "one-file", "files-and-against", "unknown-revision", "one-config", "config-and-against"])
def test_bad_input_is_one_line_and_exit_2(files: Path, capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    (files / "new.json").write_text(results(), encoding="utf-8")
    (files / "pyproject.toml").write_text(SETTINGS.format(extra=""), encoding="utf-8")
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("ragretrieval: error: ")


# --against: the base branch's config and baseline, read from git.


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not on PATH")
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "config", "user.email", "test@example.com")
    git(tmp_path, "config", "user.name", "test")
    (tmp_path / "pyproject.toml").write_text(SETTINGS.format(extra=""), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def commit(repo: Path, files: dict[str, str], message: str) -> None:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def test_against_compares_the_base_branch_with_the_work_tree(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    commit(repo, {"baselines/retrieval.json": results()}, "base")
    git(repo, "switch", "-q", "-c", "pr")
    (repo / "baselines/retrieval.json").write_text(results(ndcg=0.55), encoding="utf-8")
    status, out, _ = run(capsys, "diff", "--against", "main", "--fail-on-lower")
    assert status == 1
    assert "  lowered: ndcg@2 of 'bm25' 0.6000 -> 0.5500 (-0.0500)" in out.splitlines()
    assert "baseline changes: main:baselines/retrieval.json -> baselines/retrieval.json" in out


def test_against_a_base_without_a_baseline_is_the_first_one(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    commit(repo, {"README": "x"}, "base")
    (repo / "baselines").mkdir()
    (repo / "baselines/retrieval.json").write_text(results(), encoding="utf-8")
    status, out, _ = run(capsys, "diff", "--against", "main", "--fail-on-lower")
    assert status == 0
    assert "  note: main has no baselines/retrieval.json: every entry is new" in out.splitlines()


def test_against_follows_a_moved_baseline_and_sees_the_base_tolerance(repo: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    commit(repo, {"old/place.json": results(),
                  "pyproject.toml": SETTINGS.format(extra='baseline = "old/place.json"\ntolerance = 0.01')}, "base")
    (repo / "pyproject.toml").write_text(SETTINGS.format(extra='baseline = "new/place.json"\ntolerance = 0.05'),
                                         encoding="utf-8")
    (repo / "new").mkdir()
    (repo / "new/place.json").write_text(results(), encoding="utf-8")
    status, out, _ = run(capsys, "diff", "--against", "main", "--fail-on-lower", "--json", "changes.json")
    assert status == 1
    assert "baseline changes: main:old/place.json -> new/place.json" in out
    assert "  loosened: tolerance of ndcg@2 0.01 -> 0.05" in out.splitlines()


def test_against_a_base_config_this_version_cannot_read_fails_closed(repo: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """issue 32: a base that holds a config nobody can compare is no pass: the label is the way through."""
    commit(repo, {"baselines/retrieval.json": results(),
                  "pyproject.toml": SETTINGS.format(extra="retired_key = 1")}, "base")
    (repo / "pyproject.toml").write_text(SETTINGS.format(extra=""), encoding="utf-8")
    status, out, _ = run(capsys, "diff", "--against", "main", "--fail-on-lower", "--json", "changes.json")
    assert status == 1
    line = next(line for line in out.splitlines() if line.startswith("  unreadable: "))
    assert line.startswith("  unreadable: the config at main (pyproject.toml) cannot be read by this version: "
                           "main:pyproject.toml [tool.ragretrieval]: unknown key 'retired_key'"), line
    assert out.splitlines()[-1] == "the baseline lowers the bar: 1 side of the base unreadable"
    changes = json.loads((repo / "changes.json").read_text(encoding="utf-8"))
    assert changes["lowers_the_bar"] is True and changes["unreadable"] == [line.removeprefix("  unreadable: ")]
    assert tempfile.gettempdir() not in out


@pytest.mark.parametrize("damage", [b"{", b"\xff", b'{"format": 99}'], ids=["truncated", "not-utf8", "format"])
def test_against_a_base_baseline_that_cannot_be_read_fails_closed(repo: Path, capsys: pytest.CaptureFixture[str],
                                                                  damage: bytes) -> None:
    (repo / "baselines").mkdir()
    (repo / "baselines" / "retrieval.json").write_bytes(damage)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    (repo / "baselines/retrieval.json").write_text(results(), encoding="utf-8")
    status, out, _ = run(capsys, "diff", "--against", "main", "--fail-on-lower")
    assert status == 1
    assert "  unreadable: the baseline at main (baselines/retrieval.json) cannot be read" in out
    assert out.splitlines()[-1] == "the baseline lowers the bar: 1 side of the base unreadable"


USER_DICT_SETTINGS = SETTINGS.replace('type = "bm25"\n', 'type = "bm25"\nuser_dict = "fixtures/user_dict.txt"\n')


def test_against_reads_the_base_as_a_whole_so_a_user_dict_resolves(repo: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """issue 32: a config naming a `user_dict` was read alone from a temporary folder, its dictionary
    missing, "settings not compared", and a pull request adding `tolerance = 0.2` passed."""
    commit(repo, {"baselines/retrieval.json": results(), "fixtures/user_dict.txt": "猫眼屏 20 n\n",
                  "pyproject.toml": USER_DICT_SETTINGS.format(extra="")}, "base")
    git(repo, "switch", "-q", "-c", "pr")
    (repo / "pyproject.toml").write_text(USER_DICT_SETTINGS.format(extra="tolerance = 0.2"), encoding="utf-8")
    status, out, _ = run(capsys, "diff", "--against", "main", "--fail-on-lower")
    assert status == 1
    assert "  loosened: tolerance of ndcg@2 0 -> 0.2" in out.splitlines()
    assert out.splitlines()[-1] == "the baseline lowers the bar: 2 settings loosened"
    assert "not compared" not in out and tempfile.gettempdir() not in out


def test_against_reads_the_dictionary_as_it_was_at_the_base(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The base's own dictionary, not the work tree's: one the pull request broke leaves the base
    readable; a base whose own dictionary is broken is not."""
    commit(repo, {"baselines/retrieval.json": results(), "fixtures/user_dict.txt": "猫眼屏 20 n\n",
                  "pyproject.toml": USER_DICT_SETTINGS.format(extra="")}, "base")
    (repo / "fixtures/user_dict.txt").write_text("猫眼屏 20 N\n", encoding="utf-8")
    (repo / "pyproject.toml").write_text(SETTINGS.format(extra=""), encoding="utf-8")
    status, out, _ = run(capsys, "diff", "--against", "main", "--fail-on-lower")
    assert (status, out.splitlines()[-1]) == (0, "the baseline does not lower the bar")
    commit(repo, {"pyproject.toml": USER_DICT_SETTINGS.format(extra="")}, "a broken dictionary named")
    (repo / "fixtures/user_dict.txt").write_text("猫眼屏 20 n\n", encoding="utf-8")
    status, out, _ = run(capsys, "diff", "--against", "HEAD", "--fail-on-lower")
    assert status == 1
    assert ("  unreadable: the config at HEAD (pyproject.toml) cannot be read by this version: HEAD:pyproject.toml "
            "[tool.ragretrieval.retrievers.bm25] key 'user_dict': HEAD:fixtures/user_dict.txt:1: expected") in out


def test_a_baseline_with_emptied_question_digests_is_refused(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """issue 40, item 11: each `fingerprint.questions.digests` entry set to {} (and `questions.sha256` zeroed)
    left no question comparable, and `diff --fail-on-lower` exited 0 on a lower value."""
    itemized = {**FINGERPRINT, "questions": {"sha256": "0" * 64, "count": 1, "digests": {"q1": {}}}}
    entry = {"metrics": {"recall@2": 0.5, "ndcg@2": 0.5}, "questions": {}}
    (files / "new.json").write_text(dumps(document(2, itemized, {"bm25": entry})), encoding="utf-8")
    status, out, err = run(capsys, "diff", "old.json", "new.json", "--fail-on-lower")
    assert (status, out) == (2, "") and err == (
        "ragretrieval: error: new.json: fingerprint.questions.digests.q1.query is missing: a run writes the short "
        "digests of every question's query and gold, without which no question is comparable; fix it, or delete it "
        "and run `pytest --rag-update-baseline` to record a new one\n")
