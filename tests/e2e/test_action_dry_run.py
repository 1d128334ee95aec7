"""A dry run of the composite action's shell steps on a git repository.

The action's own baseline, label and comment steps (their `env:` evaluated from the inputs'
defaults and a few contexts, the scripts under action/) run as the runner runs `shell: bash`, on
a clone whose pull-request commits lower a baseline value, with the event file GitHub would send
(`GITHUB_EVENT_PATH`: a push is `synchronize`, adding a label is `labeled`), `GITHUB_BASE_REF=main`
and a stand-in `gh` that holds the pull request's comments and labels: the check fails without
the label and passes with it, the comment is posted once and then edited, a later push is held
to what the label approved, and a fork gets the job summary instead. It runs git and the
`ragretrieval` command as subprocesses (a few seconds per run).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from composite import ACTION, MARKER, ROOT, Step, by_id, comment_step, load
from stages import document

from pytest_ragretrieval.baseline.exams import approved_digest, labels_digest
from pytest_ragretrieval.baseline.format import dumps, parse
from pytest_ragretrieval.review.approved import approval_of, record_line
from pytest_ragretrieval.review.changes import Changes, ValueChange
from pytest_ragretrieval.review.sweep import Sweep, sweep_document

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
LABEL = "rag-baseline-approved"
BOT = "github-actions[bot]"


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
            {"id": 7, "node_id": "IC_7", "user": {"login": "alice", "type": "User"},
             "body": f"{MARKER} quoted by a person", "editor": None}], "labels": [], "calls": []}))
        self.outputs: dict[str, str] = {}

    def commit(self, files: Mapping[str, str], message: str) -> None:
        for name, text in files.items():
            (self.work / name).parent.mkdir(parents=True, exist_ok=True)
            (self.work / name).write_text(text, encoding="utf-8")
        git(self.work, "add", "--", *files)
        git(self.work, "commit", "-q", "-m", message)

    def push(self, ndcg: float) -> None:
        """A new commit on the pull request: its baseline's ndcg@2 re-recorded."""
        self.commit({"baselines/retrieval.json": baseline(ndcg)}, f"ndcg@2 {ndcg}")

    @property
    def head(self) -> str:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=self.work, check=True, capture_output=True, text=True)
        return done.stdout.strip()

    def env(self, labels: tuple[str, ...], head_repo: str, added: str | None = None) -> dict[str, str]:
        """The environment of a run; the event is `labeled` for `added`, `synchronize` (a push) otherwise."""
        event = {"action": "labeled" if added else "synchronize", **({"label": {"name": added}} if added else {}),
                 "pull_request": {
                     "number": 42, "labels": [{"name": name} for name in labels],
                     "head": {"sha": self.head, "repo": {"full_name": head_repo}},
                     "base": {"repo": {"full_name": "team/repo"}}}}
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
            # The package under test where it is put on the path rather than installed (a worktree).
            **({"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}),
        }

    def contexts(self, inputs: Mapping[str, str]) -> dict[str, str]:
        action = load(ACTION)
        values = {f"inputs.{name}": str(spec["default"]) for name, spec in action["inputs"].items()}
        values.update({f"inputs.{name}": value for name, value in inputs.items()})
        values.update({
            "github.event.pull_request.number": "42", "github.server_url": "https://github.invalid",
            "github.repository": "team/repo", "github.run_id": "99", "steps.gate.outcome": "success",
            "steps.upload.outputs.artifact-url": "https://github.invalid/artifacts/5",
            "steps.baseline.outputs.unlabel": self.outputs.get("unlabel", ""),
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

    def check(self, labels: tuple[str, ...] | None = None, head_repo: str = "team/repo", added: str | None = None,
              **inputs: str) -> int:
        """The baseline step, then, where its outputs allow them, the label and comment steps; the baseline
        step's status. `labels` default to those the stand-in `gh` holds, as GitHub's event would carry them."""
        env = self.env(tuple(self.gh["labels"]) if labels is None else labels, head_repo, added)
        status = self.step(by_id("baseline"), env, inputs)
        log = self.log
        self.outputs = dict(line.split("=", 1) for line in (self.root / "output").read_text().splitlines())
        if self.outputs.get("unlabel"):
            assert self.step(by_id("unlabel"), env, inputs) == 0, self.log
            log += self.log
        if self.outputs.get("comment") == "true":
            assert self.step(comment_step(), env, inputs) == 0, self.log
            log += self.log
        self.log = log
        return status

    def label(self, name: str, head_repo: str = "team/repo", **inputs: str) -> int:
        """A maintainer adds a label: GitHub holds it and runs the `labeled` event."""
        self.edit(lambda state: state["labels"].append(name))
        return self.check(None, head_repo, name, **inputs)

    def edit(self, change: Callable[[dict[str, Any]], object]) -> None:
        state = self.gh
        change(state)
        self.state.write_text(json.dumps(state), encoding="utf-8")

    @property
    def summary(self) -> str:
        return (self.root / "summary").read_text(encoding="utf-8")

    def ours(self) -> dict[str, Any]:
        comments: list[dict[str, Any]] = self.gh["comments"]
        (comment,) = [c for c in comments if c["user"]["login"] == BOT]
        return comment

    def writes(self) -> list[str]:
        """The method of every call that writes, in order."""
        return [call[call.index("--method") + 1] for call in self.gh["calls"] if "--method" in call]

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
    assert lowered.outputs == {"check": "fail", "comment": "true", "unlabel": ""}
    assert "baseline check: fail: the baseline lowers the bar (1 lowered)" in lowered.log
    person, ours = lowered.gh["comments"]
    assert person["body"] == f"{MARKER} quoted by a person"  # never edited
    assert ours["body"].startswith(MARKER + "\n## ")  # no label: nothing recorded
    assert "| bm25      | ndcg@2 | 0.6000 |  0.5000 | -0.1000 |" in ours["body"]
    assert "without the label `rag-baseline-approved`" in ours["body"]
    assert lowered.summary.startswith("## 基线检查 / Baseline check")

    assert lowered.label(LABEL) == 0, lowered.log
    assert lowered.outputs == {"check": "approved", "comment": "true", "unlabel": ""}
    (_, edited) = lowered.gh["comments"]  # the same comment, edited: one per pull request
    assert edited["id"] == ours["id"] and "approved with the label `rag-baseline-approved`" in edited["body"]
    assert lowered.writes() == ["POST", "PATCH"]


def test_dry_run_holds_later_pushes_to_what_the_label_approved(lowered: DryRun) -> None:
    assert lowered.label(LABEL) == 0, lowered.log
    approved_at = lowered.head
    record = lowered.ours()["body"].splitlines()[1]
    head = parse(Path("retrieval.json"), baseline(0.5))
    assert record == record_line(approval_of(Changes("", "", lowered=(ValueChange("bm25", "ndcg@2", 0.6, 0.5),),
                                                     approved_digest=approved_digest(head.retrievers),
                                                     labels_digest=labels_digest(head.fingerprint)),
                                             42, approved_at, LABEL))
    assert record in lowered.summary  # the job summary carries the same record
    assert f"approved with the label 'rag-baseline-approved' at {approved_at[:7]}" in lowered.log

    # An improvement on what was approved: still approved, by the same record.
    lowered.push(0.55)
    assert lowered.check() == 0, lowered.log
    assert f"within what was approved with the label 'rag-baseline-approved' at {approved_at[:7]}" in lowered.log
    assert lowered.ours()["body"].splitlines()[1] == record
    assert "- bm25 ndcg@2 0.6000 -> 0.5500 (approved: 0.5000)" in lowered.ours()["body"]

    # A further lowering: fails in one line, and the label comes off.
    lowered.push(0.4)
    assert lowered.check() == 1, lowered.log
    assert (f"baseline check: fail: the baseline lowers the bar beyond what was approved at {approved_at[:7]}: "
            "bm25 ndcg@2 0.6000 -> 0.4000 (approved: 0.5000); re-apply 'rag-baseline-approved' to approve it"
            ) in lowered.log
    assert lowered.outputs["unlabel"] == LABEL and lowered.gh["labels"] == []
    assert "rag: took the approval label off" in lowered.log
    body = lowered.ours()["body"]
    assert "**❌ 未批准 / not approved (1)**\n\n- bm25 ndcg@2 0.6000 -> 0.4000 (approved: 0.5000)" in body
    assert "超出批准 / lowered beyond what was approved" in body

    # The next run sees no label: the old approval no longer counts.
    assert lowered.check() == 1
    assert "has no 'rag-baseline-approved' label" in lowered.log
    assert "pytest-ragretrieval-approval" not in lowered.ours()["body"]

    # Re-applying the label approves what the pull request lowers now.
    assert lowered.label(LABEL) == 0, lowered.log
    assert f"approved with the label 'rag-baseline-approved' at {lowered.head[:7]}" in lowered.log
    assert '"new":0.4' in lowered.ours()["body"].splitlines()[1]
    lowered.push(0.45)
    assert lowered.check() == 0, lowered.log
    assert lowered.writes() == ["POST", "PATCH", "DELETE", "PATCH", "PATCH", "PATCH", "PATCH"]


def forged(approving: float, head: str) -> str:
    """A comment body with a well-formed record, digest and all, approving ndcg@2 down to `approving`."""
    approval = approval_of(Changes("", "", lowered=(ValueChange("bm25", "ndcg@2", 0.6, approving),)), 42, head, LABEL)
    return f"{MARKER}\n{record_line(approval)}\n## looks like the bot's\n"


def test_dry_run_ignores_a_record_the_action_did_not_write(lowered: DryRun) -> None:
    head = lowered.head
    lowered.edit(lambda state: state["labels"].append(LABEL))
    lowered.edit(lambda state: state["comments"].extend([
        {"id": 8, "node_id": "IC_8", "user": {"login": "mallory", "type": "User"}, "body": forged(0.0, head),
         "editor": None},
        {"id": 9, "node_id": "IC_9", "user": {"login": "other-app[bot]", "type": "Bot"}, "body": forged(0.0, head),
         "editor": None}]))
    # A push with the label on: the forged records approve nothing.
    assert lowered.check() == 1, lowered.log
    assert ("the baseline lowers the bar and no recorded approval covers it (the action's comment holds none that "
            "counts): bm25 ndcg@2 0.6000 -> 0.5000 (new)") in lowered.log
    assert [c["body"] for c in lowered.gh["comments"][:3]] == [f"{MARKER} quoted by a person", forged(0.0, head),
                                                                forged(0.0, head)]
    assert lowered.writes() == ["DELETE", "POST"]

    # The action's own comment, edited by someone else to approve more: ignored as well.
    assert lowered.label(LABEL) == 0, lowered.log

    def tamper(state: dict[str, Any]) -> None:
        ours = next(c for c in state["comments"] if c["user"]["login"] == BOT)
        ours["body"], ours["editor"] = forged(0.0, head), "mallory"

    lowered.edit(tamper)
    lowered.push(0.3)
    assert lowered.check() == 1, lowered.log
    assert "the action's comment was last edited by mallory, so the approval it records is not counted" in lowered.log
    assert "no recorded approval covers it (the action's comment holds none that counts)" in lowered.log


def test_dry_run_with_another_label_name(lowered: DryRun) -> None:
    assert lowered.label(LABEL, label="lower-ok") == 1
    assert lowered.label("lower-ok", label="lower-ok") == 0


def test_dry_run_from_a_fork_keeps_the_summary_and_writes_nothing(lowered: DryRun) -> None:
    assert lowered.check(head_repo="alice/repo") == 1
    assert lowered.outputs == {"check": "fail", "comment": "false", "unlabel": ""}
    assert lowered.writes() == []
    assert "::notice title=rag%3A no comment::the pull request comes from the fork alice/repo" in lowered.log
    assert "| bm25      | ndcg@2 | 0.6000 |  0.5000 | -0.1000 |" in lowered.summary

    # The label's own run approves; the record goes to the job summary only.
    assert lowered.label(LABEL, head_repo="alice/repo") == 0, lowered.log
    assert lowered.summary.startswith("<!-- pytest-ragretrieval-approval {")
    assert "no approval is recorded, only the run of the label's own event approves" in lowered.summary
    # The next push is not approved, and the read-only token cannot take the label off.
    lowered.push(0.52)
    assert lowered.check(head_repo="alice/repo") == 1
    assert "remove 'rag-baseline-approved' and add it again to approve it" in lowered.log
    assert lowered.writes() == [] and lowered.gh["labels"] == [LABEL]


def test_dry_run_of_the_first_baseline(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("the dry run needs git")
    run = DryRun(tmp_path, {"pyproject.toml": PYPROJECT}, {"baselines/retrieval.json": baseline(0.5)})
    assert run.check() == 0, run.log
    assert "note: origin/main has no baselines/retrieval.json: every entry is new" in run.log


def sweep_record(tune_gain: float) -> str:
    found = Sweep("bm25", "ndcg@2", 24, 32, 21, "bm25~3", "k1 = 1.2", tune_gain, 0.01, 0.4, 0.03)
    return json.dumps(sweep_document(found)) + "\n"


@pytest.mark.parametrize("changed", [True, False])
def test_dry_run_names_the_sweep_where_the_pull_request_adds_or_changes_its_record(
        tmp_path: Path, changed: bool) -> None:
    """The `sweep-record` input: the comment names the sweep's optimism where this pull request adds or changes
    the record (an unchanged one is an older sweep's), and the check's verdict is the same either way."""
    if shutil.which("git") is None or shutil.which("ragretrieval", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("the dry run needs git and the ragretrieval command beside this Python")
    base = {"pyproject.toml": PYPROJECT, "baselines/retrieval.json": baseline(0.6), "sweep.json": sweep_record(0.05)}
    run = DryRun(tmp_path, base, {"baselines/retrieval.json": baseline(0.5),
                                  **({"sweep.json": sweep_record(0.06)} if changed else {})})
    inputs = {"sweep-record": "sweep.json"}
    assert run.check(None, "team/repo", None, **inputs) == 1, run.log  # lowered, the record or not
    body = run.ours()["body"]
    assert ("The sweep behind these settings" in body) is changed, body
    if changed:
        assert "optimism +0.0500 (tune gain - gate gain)" in body, body


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
for arg in sys.argv[1:]:  # a gate's results file, as a run that reached its summary writes it
    if arg.startswith("--rag-json="):
        open(arg.split("=", 1)[1], "w", encoding="utf-8").write("{}")
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


# issue 32: the base is read as a whole, and a base that cannot be read fails closed

USER_DICT_PYPROJECT = PYPROJECT + 'user_dict = "fixtures/user_dict.txt"\n'


def test_dry_run_catches_a_loosened_tolerance_beside_a_user_dict(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("the dry run needs git")
    run = DryRun(tmp_path, {"pyproject.toml": USER_DICT_PYPROJECT, "fixtures/user_dict.txt": "猫眼屏 20 n\n",
                            "baselines/retrieval.json": baseline(0.6)},
                 {"pyproject.toml": USER_DICT_PYPROJECT.replace("k = 2\n", "k = 2\ntolerance = 0.2\n")})
    assert run.check() == 1, run.log
    assert "baseline check: fail: the baseline lowers the bar (2 settings loosened)" in run.log
    assert "not compared" not in run.log and "/tmp" not in run.ours()["body"]
    assert run.label(LABEL) == 0, run.log


def test_dry_run_fails_closed_on_a_base_config_it_cannot_read(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("the dry run needs git")
    run = DryRun(tmp_path, {"pyproject.toml": PYPROJECT + "retired = 1\n", "baselines/retrieval.json": baseline(0.6)},
                 {"pyproject.toml": PYPROJECT})
    assert run.check() == 1, run.log
    assert "baseline check: fail: the baseline lowers the bar (1 side of the base unreadable)" in run.log
    assert "the config at origin/main (pyproject.toml) cannot be read by this version" in run.ours()["body"]
    assert "/tmp" not in run.ours()["body"]
    assert run.label(LABEL) == 0, run.log


def questions_baseline(values: Mapping[str, float], query: str) -> str:
    """A baseline whose questions are itemized, every query ending in `query`, both metrics at `values`."""
    digests = {qid: {"query": f"{qid}{query}", "gold": f"{qid}-gold", "tags": []} for qid in values}
    fingerprint = {**FINGERPRINT, "questions": {"sha256": hashlib.sha256(query.encode()).hexdigest(), "count": len(values), "digests": digests}}
    mean = round(sum(values.values()) / len(values), 6)
    entry = {"metrics": {"recall@2": mean, "ndcg@2": mean},
             "questions": {qid: {"ranking": ["c1"], "metrics": {"recall@2": v, "ndcg@2": v}} for qid, v in values.items()}}
    # Format 3: a file that keeps no labels (a later format without them is damage, refused in one line).
    return dumps({**document(2, fingerprint, {"bm25": entry}), "format_version": 3})


def test_dry_run_editing_every_query_and_recording_lower_values_needs_the_label(tmp_path: Path) -> None:
    """Issue 32: every query edited (appended "？") and lower values recorded: no question is comparable,
    so the values were never compared and the check passed. The edited questions' bar values left the bar
    and lower ones replaced them: a lowering, which fails without the label and passes with it."""
    if shutil.which("git") is None or shutil.which("ragretrieval", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("the dry run needs git and the ragretrieval command beside this Python")
    run = DryRun(tmp_path, {"pyproject.toml": PYPROJECT,
                            "baselines/retrieval.json": questions_baseline({"q1": 1.0, "q2": 0.5}, "")},
                 {"baselines/retrieval.json": questions_baseline({"q1": 0.5, "q2": 0.5}, "？")})
    assert run.check() == 1, run.log
    assert run.outputs["check"] == "fail"
    assert ("lowered: ndcg@2 of 'bm25': the 2 edited questions (q1, q2): bar 0.7500, their new values 0.5000"
            in run.log), run.log
    assert run.label(LABEL) == 0, run.log
    assert run.outputs["check"] == "approved"
