"""A dry run of the composite action's shell steps on a two-commit git repository.

The action's own baseline and comment steps (their `env:` evaluated from the inputs' defaults
and a few contexts, the scripts under action/) run as the runner runs `shell: bash`, on a clone
whose pull-request commit lowers a baseline value, with a fake event file
(`GITHUB_EVENT_PATH`), `GITHUB_BASE_REF=main` and a stand-in `gh`: the check fails without the
label and passes with it, the comment is posted once and then edited, and a fork gets the job
summary instead. It runs git and the `ragretrieval` command as subprocesses (a few seconds).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from composite import ACTION, MARKER, ROOT, Step, by_id, comment_step, load

from pytest_ragretrieval.baseline.format import document, dumps

FAKE_GH = ROOT / "tests" / "tools" / "fake_gh.py"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


PYPROJECT = """\
[tool.ragretrieval]
chunks = "fixtures/chunks.jsonl"
evalset = "fixtures/evalset.jsonl"
k = 2
metrics = ["recall", "ndcg"]

[tool.ragretrieval.retrievers.bm25]
type = "bm25"
"""
FINGERPRINT = {"k": 2, "tokenizer": "jieba 0.42.1", "retrievers": {"bm25": {"type": "bm25", "k1": 1.5}}}


def baseline(ndcg: float) -> str:
    return dumps(document(2, FINGERPRINT, {"bm25": {"metrics": {"recall@2": 0.75, "ndcg@2": ndcg}, "questions": {}}}))


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=cwd, check=True,
                   capture_output=True, text=True)


class DryRun:
    """A checkout of a pull request as actions/checkout leaves it, and the action's steps run on it."""

    def __init__(self, root: Path, base_files: Mapping[str, str], pr_files: Mapping[str, str]) -> None:
        self.root = root
        origin, self.work = root / "origin.git", root / "work"
        git(root, "init", "-q", "--bare", "-b", "main", str(origin))
        git(root, "clone", "-q", f"file://{origin}", str(self.work))
        git(self.work, "switch", "-q", "-c", "main")
        self.commit(base_files, "base")
        git(self.work, "push", "-q", "origin", "main")
        git(self.work, "switch", "-q", "-c", "pull-request")
        self.commit(pr_files, "the pull request")
        # What a shallow checkout has: no remote-tracking branch for the base yet.
        git(self.work, "update-ref", "-d", "refs/remotes/origin/main")
        self.bin = root / "bin"
        self.bin.mkdir()
        gh = self.bin / "gh"
        gh.write_text(f"#!{sys.executable}\n" + FAKE_GH.read_text(encoding="utf-8"), encoding="utf-8")
        gh.chmod(0o755)
        self.state = root / "gh-state.json"
        self.state.write_text(json.dumps({"comments": [
            {"id": 7, "user": {"type": "User"}, "body": f"{MARKER} quoted by a person"}], "calls": []}))
        self.outputs: dict[str, str] = {}

    def commit(self, files: Mapping[str, str], message: str) -> None:
        for name, text in files.items():
            (self.work / name).parent.mkdir(parents=True, exist_ok=True)
            (self.work / name).write_text(text, encoding="utf-8")
        git(self.work, "add", "-A")
        git(self.work, "commit", "-q", "-m", message)

    def env(self, labels: tuple[str, ...], head_repo: str) -> dict[str, str]:
        event = {"action": "labeled" if labels else "synchronize", "pull_request": {
            "number": 42, "labels": [{"name": name} for name in labels],
            "head": {"repo": {"full_name": head_repo}}, "base": {"repo": {"full_name": "team/repo"}}}}
        (self.root / "event.json").write_text(json.dumps(event), encoding="utf-8")
        for name in ("output", "summary"):
            (self.root / name).write_text("", encoding="utf-8")
        path = os.pathsep.join([str(self.bin), str(Path(sys.executable).parent), os.environ.get("PATH", "")])
        return {
            "PATH": path, "HOME": os.environ.get("HOME", str(self.root)), "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(self.root / "event.json"),
            "GITHUB_BASE_REF": "main", "GITHUB_REPOSITORY": "team/repo", "GITHUB_ACTION_PATH": str(ROOT),
            "GITHUB_OUTPUT": str(self.root / "output"), "GITHUB_STEP_SUMMARY": str(self.root / "summary"),
            "FAKE_GH_STATE": str(self.state),
        }

    def contexts(self, inputs: Mapping[str, str]) -> dict[str, str]:
        action = load(ACTION)
        values = {f"inputs.{name}": str(spec["default"]) for name, spec in action["inputs"].items()}
        values.update({f"inputs.{name}": value for name, value in inputs.items()})
        values.update({
            "github.event.pull_request.number": "42", "github.server_url": "https://github.invalid",
            "github.repository": "team/repo", "github.run_id": "99", "steps.gate.outcome": "success",
            "steps.upload.outputs.artifact-url": "https://github.invalid/artifacts/5",
        })
        return values

    def step(self, step: Step, env: Mapping[str, str], inputs: Mapping[str, str]) -> int:
        """Run one `run:` step as the runner would: its env: evaluated, bash -eo pipefail, the work tree as cwd."""
        known = self.contexts(inputs)
        values = {name: EXPRESSION.sub(lambda m: known[m.group(1)], str(value))
                  for name, value in step.get("env", {}).items()}
        script = self.root / "step.sh"
        script.write_text(step["run"], encoding="utf-8")
        # How the runner runs `shell: bash`.
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=self.work,
                              env={**env, **values}, capture_output=True, text=True, timeout=300)
        self.log = done.stdout + done.stderr
        return done.returncode

    def check(self, labels: tuple[str, ...] = (), head_repo: str = "team/repo", **inputs: str) -> int:
        """The baseline step, then, where its outputs allow it, the comment step; the baseline step's status."""
        env = self.env(labels, head_repo)
        status = self.step(by_id("baseline"), env, inputs)
        baseline_log = self.log
        self.outputs = dict(line.split("=", 1) for line in (self.root / "output").read_text().splitlines())
        if self.outputs.get("comment") == "true":
            assert self.step(comment_step(), env, inputs) == 0, self.log
        self.log = baseline_log + self.log
        return status

    @property
    def gh(self) -> dict[str, Any]:
        state: dict[str, Any] = json.loads(self.state.read_text(encoding="utf-8"))
        return state


@pytest.fixture
def lowered(tmp_path: Path) -> DryRun:
    if shutil.which("git") is None or shutil.which("ragretrieval", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("the dry run needs git and the ragretrieval command beside this Python")
    return DryRun(tmp_path, {"pyproject.toml": PYPROJECT, "baselines/retrieval.json": baseline(0.6)},
                  {"baselines/retrieval.json": baseline(0.5)})


def test_dry_run_fails_without_the_label_and_passes_with_it(lowered: DryRun) -> None:
    assert lowered.check() == 1, lowered.log
    assert lowered.outputs == {"check": "fail", "comment": "true"}
    assert "baseline check: fail: the baseline lowers the bar (1 lowered)" in lowered.log
    person, ours = lowered.gh["comments"]
    assert person["body"] == f"{MARKER} quoted by a person"  # never edited
    assert ours["body"].startswith(MARKER + "\n")
    assert "| bm25      | ndcg@2 | 0.6000 |  0.5000 | -0.1000 |" in ours["body"]
    assert "without the label `rag-baseline-approved`" in ours["body"]
    summary = (lowered.root / "summary").read_text(encoding="utf-8")
    assert summary.startswith("## 基线检查 / Baseline check")

    assert lowered.check(labels=("rag-baseline-approved",)) == 0, lowered.log
    assert lowered.outputs == {"check": "approved", "comment": "true"}
    (_, edited) = lowered.gh["comments"]  # the same comment, edited: one per pull request
    assert edited["id"] == ours["id"] and "approved with the label `rag-baseline-approved`" in edited["body"]
    methods = [call[call.index("--method") + 1] for call in lowered.gh["calls"] if "--method" in call]
    assert methods == ["POST", "PATCH"]


def test_dry_run_with_another_label_name(lowered: DryRun) -> None:
    assert lowered.check(labels=("rag-baseline-approved",), label="lower-ok") == 1
    assert lowered.check(labels=("lower-ok",), label="lower-ok") == 0


def test_dry_run_from_a_fork_keeps_the_summary_and_posts_nothing(lowered: DryRun) -> None:
    assert lowered.check(head_repo="alice/repo") == 1
    assert lowered.outputs == {"check": "fail", "comment": "false"}
    assert lowered.gh["calls"] == []
    assert "::notice title=rag%3A no comment::the pull request comes from the fork alice/repo" in lowered.log
    assert "| bm25      | ndcg@2 | 0.6000 |  0.5000 | -0.1000 |" in (lowered.root / "summary").read_text()


def test_dry_run_of_the_first_baseline(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("the dry run needs git")
    run = DryRun(tmp_path, {"pyproject.toml": PYPROJECT}, {"baselines/retrieval.json": baseline(0.5)})
    assert run.check() == 0, run.log
    assert "note: origin/main has no baselines/retrieval.json: every entry is new" in run.log


def test_dry_run_where_the_token_cannot_write_fails_the_comment_step_with_the_fix(
        lowered: DryRun, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_GH_READ_ONLY", "1")
    env = {**lowered.env((), "team/repo"), "FAKE_GH_READ_ONLY": "1"}
    assert lowered.step(by_id("baseline"), env, {}) == 1
    assert lowered.step(comment_step(), env, {}) == 1
    assert "give the job `permissions: pull-requests: write`" in lowered.log


RECORD_ARGV = """import json, os, sys
with open(os.environ["ARGV_FILE"], "a", encoding="utf-8") as out:
    out.write(json.dumps([os.path.basename(sys.argv[0]), *sys.argv[1:]]) + "\\n")
"""


def stub(run: DryRun, *names: str) -> Path:
    """Commands that only record their arguments, one JSON list per call, in the file returned."""
    for name in names:
        path = run.bin / name
        path.write_text(f"#!{sys.executable}\n{RECORD_ARGV}", encoding="utf-8")
        path.chmod(0o755)
    return run.root / "argv.jsonl"


def calls(path: Path) -> list[list[str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


@pytest.mark.parametrize(("pytest_args", "expected"), [
    ("-m rag_eval", ["-m", "rag_eval"]),
    ('-m rag_eval -k "hybrid and not rerank"', ["-m", "rag_eval", "-k", "hybrid and not rerank"]),
    ("-k 'bm25 or vector' --rag-db=embedded -n 2", ["-k", "bm25 or vector", "--rag-db=embedded", "-n", "2"]),
    ('-k "$(touch pwned)" *', ["-k", "$(touch pwned)", "*"]),
    ("", []),
])
def test_pytest_args_take_shell_quoted_words_and_evaluate_nothing(lowered: DryRun, pytest_args: str,
                                                                 expected: list[str]) -> None:
    argv = stub(lowered, "pytest")
    env = {**lowered.env((), "team/repo"), "ARGV_FILE": str(argv)}
    assert lowered.step(by_id("gate"), env, {"pytest-args": pytest_args}) == 0, lowered.log
    ((command, *args),) = calls(argv)
    assert command == "pytest" and args[:1] == ["--rag-eval"]
    last_report = max(i for i, arg in enumerate(args) if arg.endswith("reports/rag-eval.html"))
    assert args[last_report + 1:] == expected, args
    assert not (lowered.work / "pwned").exists()


def test_a_bad_quote_in_pytest_args_stops_the_step_in_one_line(lowered: DryRun) -> None:
    argv = stub(lowered, "pytest")
    env = {**lowered.env((), "team/repo"), "ARGV_FILE": str(argv)}
    assert lowered.step(by_id("gate"), env, {"pytest-args": '-k "hybrid'}) == 2
    assert calls(argv) == []
    assert lowered.log.strip() == 'rag: the input pytest-args is not shell-quoted words (No closing quotation): -k "hybrid'


def test_install_takes_shell_quoted_words_and_torch_only_when_asked(lowered: DryRun) -> None:
    argv = stub(lowered, "pip")
    env = {**lowered.env((), "team/repo"), "ARGV_FILE": str(argv)}
    assert lowered.step(by_id("install"), env, {"install": "-e . 'my-retrievers[zh] @ file:///src/mine'"}) == 0
    assert calls(argv) == [["pip", "install", f"{ROOT}[pgvector,e5]"],
                           ["pip", "install", "-e", ".", "my-retrievers[zh] @ file:///src/mine"]]
    assert load(ACTION)["inputs"]["torch"]["default"] == ""
