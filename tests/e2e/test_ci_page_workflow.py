"""docs/ci.md's workflow, as a team copies it, run on a knowledge-base repository that is not a Python package.

The page's workflow file is read from the page; its steps run in order as the runner runs them: the
action's step expanded into action.yml's steps (their `if:` and `env:` evaluated from the page's `with:`,
the inputs' defaults and the contexts GitHub sets), every `run:` step run with `bash -eo pipefail` and
the scripts under action/, the steps of GitHub's own actions (checkout, setup-python, cache, upload)
taken as done. The repository holds the sample's fixtures, a baseline and a pyproject.toml with only
`[tool.ragretrieval]`, on a pull-request branch of a bare origin. No network: `pip` is a stand-in that
resolves what it is given without installing it (`pip install --dry-run --no-index --no-deps
--no-build-isolation`, so a repository that cannot be built fails as it would on GitHub), the plugin
being installed already; `gh` is tests/tools/fake_gh.py.
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
from composite import ACTION, ROOT, Step, load

CI_PAGE = ROOT / "docs" / "ci.md"
FAKE_GH = ROOT / "tests" / "tools" / "fake_gh.py"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
CONTEXT = re.compile(r"\b(?:inputs|steps|github)\.[\w.-]+")
KNOWLEDGE_BASE = """\
[tool.ragretrieval]
chunks = "fixtures/chunks.jsonl"
evalset = "fixtures/evalset.jsonl"
baseline = "baselines/retrieval.json"
k = 5
metrics = ["recall", "ndcg"]
tokenizer = "jieba"

[tool.ragretrieval.retrievers.bm25]
type = "bm25"
"""
"""The team's settings, and nothing else: no [project], no [build-system], no package."""
PIP = """#!/usr/bin/env bash
# pip as the runner's, without the network: resolves and builds what it is asked to install, installs nothing.
set -euo pipefail
[ "$1" = install ] || { echo "pip stand-in: only install" >&2; exit 2; }
shift
exec "{python}" -m pip install --dry-run --no-index --no-deps --no-build-isolation --quiet "$@"
"""


def page_workflow() -> dict[str, Any]:
    """The page's one-step workflow file, as the team pastes it."""
    yaml = pytest.importorskip("yaml")
    text = CI_PAGE.read_text(encoding="utf-8")
    (source,) = [s for s in re.findall(r"^```yaml\n(.*?)^```$", text, re.S | re.M)
                 if s.startswith("# .github/workflows/rag-eval.yml")]
    workflow: dict[Any, Any] = yaml.safe_load(source)
    return workflow


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=cwd,
                          check=True, capture_output=True, text=True, timeout=60)
    return done.stdout.strip()


class Runner:
    """The runner of one job on a knowledge-base repository: its contexts, its outputs, its logs."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.work = root / "work"
        origin = root / "origin.git"
        git(root, "init", "-q", "--bare", "-b", "main", str(origin))
        git(root, "clone", "-q", f"file://{origin}", str(self.work))
        git(self.work, "switch", "-q", "-c", "main")
        (self.work / "fixtures").mkdir()
        for name in ("chunks.jsonl", "evalset.jsonl"):
            shutil.copy2(ROOT / "fixtures" / name, self.work / "fixtures" / name)
        (self.work / "pyproject.toml").write_text(KNOWLEDGE_BASE, encoding="utf-8")
        self.bin = root / "bin"
        self.bin.mkdir()
        pip = self.bin / "pip"
        pip.write_text(PIP.replace("{python}", sys.executable), encoding="utf-8")
        gh = self.bin / "gh"
        gh.write_text(f"#!{sys.executable}\n" + FAKE_GH.read_text(encoding="utf-8"), encoding="utf-8")
        for tool in (pip, gh):
            tool.chmod(0o755)
        (root / "gh-state.json").write_text(json.dumps({"comments": [], "labels": [], "calls": []}), encoding="utf-8")
        # The team's first baseline, recorded locally and committed with the fixtures (docs/ci.md, step 1).
        recorded = subprocess.run([sys.executable, "-m", "pytest", "--rag-update-baseline", "-p", "no:cacheprovider"],
                                  cwd=self.work, env=self.env(), capture_output=True, text=True, timeout=300)
        assert recorded.returncode == 0, recorded.stdout[-2000:] + recorded.stderr[-2000:]
        git(self.work, "add", "-A")
        git(self.work, "commit", "-q", "-m", "eval set, first baseline")
        git(self.work, "push", "-q", "origin", "main")
        git(self.work, "switch", "-q", "-c", "pull-request")
        with (self.work / "fixtures" / "evalset.jsonl").open("a", encoding="utf-8") as evalset:
            evalset.write(json.dumps({"id": "q-new", "query": "报销住宿标准", "relevant": []}, ensure_ascii=False) + "\n")
        git(self.work, "commit", "-q", "-am", "one more question")
        git(self.work, "update-ref", "-d", "refs/remotes/origin/main")  # a shallow checkout's refs
        event = {"action": "synchronize", "pull_request": {
            "number": 42, "labels": [], "head": {"sha": git(self.work, "rev-parse", "HEAD"),
                                                 "repo": {"full_name": "team/knowledge-base"}},
            "base": {"repo": {"full_name": "team/knowledge-base"}}}}
        (root / "event.json").write_text(json.dumps(event), encoding="utf-8")
        self.contexts: dict[str, str] = {
            "github.event_name": "pull_request", "github.event.pull_request.number": "42",
            "github.server_url": "https://github.invalid", "github.repository": "team/knowledge-base",
            "github.run_id": "99", "github.token": "ghs_fake",
        }
        self.log: list[str] = []
        self.failed = False

    def env(self) -> dict[str, str]:
        """What the runner sets for every step."""
        path = os.pathsep.join([str(self.bin), str(Path(sys.executable).parent), os.environ.get("PATH", "")])
        return {
            "PATH": path, "HOME": os.environ.get("HOME", str(self.root)), "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(self.root / "event.json"),
            "GITHUB_BASE_REF": "main", "GITHUB_REPOSITORY": "team/knowledge-base", "GITHUB_ACTION_PATH": str(ROOT),
            "GITHUB_STEP_SUMMARY": str(self.root / "summary"), "FAKE_GH_STATE": str(self.root / "gh-state.json"),
            "HF_HUB_OFFLINE": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            # The package under test where it is put on the path rather than installed (a worktree).
            **({"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}),
        }

    def value(self, expression: str) -> str:
        """One `${{ }}` of the contexts the action's steps read."""
        return self.contexts[expression.strip()]

    def holds(self, condition: str) -> bool:
        """An `if:` as GitHub reads the ones action.yml writes: contexts compared with strings, `!cancelled()`."""
        python = EXPRESSION.sub(lambda m: m.group(1), condition).replace("!cancelled()", "True")
        python = CONTEXT.sub(lambda m: repr(self.contexts.get(m.group(0), "")), python)
        python = python.replace("&&", " and ").replace("||", " or ").replace("!=", " != ")
        allowed = re.fullmatch(r"[\s\w'!=\[\]{}:/.,\"-]*", python)
        assert allowed, condition
        held: bool = eval(python, {"__builtins__": {}}, {"True": True, "true": True})  # noqa: S307 (checked above)
        return held

    def run(self, step: Step) -> int:
        """A `run:` step: its env: evaluated, bash -eo pipefail, the work tree as cwd; outputs read back."""
        output = self.root / "output"
        output.write_text("", encoding="utf-8")
        values = {name: EXPRESSION.sub(lambda m: self.value(m.group(1)), str(value))
                  for name, value in step.get("env", {}).items()}
        script = self.root / "step.sh"
        script.write_text(EXPRESSION.sub(lambda m: self.value(m.group(1)), step["run"]), encoding="utf-8")
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=self.work,
                              env={**self.env(), "GITHUB_OUTPUT": str(output), **values},
                              capture_output=True, text=True, timeout=300)
        self.log.append(f"--- {step.get('name', step['run'][:40])}: rc {done.returncode}\n{done.stdout}{done.stderr}")
        if "id" in step:
            self.contexts[f"steps.{step['id']}.outcome"] = "success" if done.returncode == 0 else "failure"
            for line in output.read_text(encoding="utf-8").splitlines():
                name, _, text = line.partition("=")
                self.contexts[f"steps.{step['id']}.outputs.{name}"] = text
        return done.returncode

    def action(self, with_: Mapping[str, str]) -> dict[str, int]:
        """The composite action's steps, as the runner expands `uses:`: each step's status by its name."""
        action = load(ACTION)
        unknown = set(with_) - set(action["inputs"])
        assert not unknown, f"the page's step gives inputs the action does not take: {unknown}"
        for name, spec in action["inputs"].items():
            self.contexts[f"inputs.{name}"] = str(with_.get(name, spec["default"]))
        self.contexts["inputs.token"] = "ghs_fake"
        statuses = {}
        for step in action["runs"]["steps"]:
            condition = str(step.get("if", "true"))
            # GitHub adds `success() &&` to a condition that names no status function: a failure skips it.
            if (self.failed and "!cancelled()" not in condition) or not self.holds(condition):
                continue
            if "run" in step:
                statuses[step.get("name", step["run"][:40])] = status = self.run(step)
                self.failed = self.failed or status != 0
            elif step.get("id") == "upload":  # actions/upload-artifact, taken as done: its output
                self.contexts["steps.upload.outcome"] = "success"
                self.contexts["steps.upload.outputs.artifact-url"] = "https://github.invalid/artifacts/1"
        return statuses


def test_the_ci_pages_workflow_reaches_the_gate_on_a_knowledge_base_repository(tmp_path: Path) -> None:
    """577255f's page gave the action `install: -e .`, which fails on a repository that is not a Python
    package ("Multiple top-level packages discovered in a flat-layout") before the gate could run."""
    if shutil.which("git") is None or shutil.which("ragretrieval", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("the run needs git and the ragretrieval command beside this Python")
    runner = Runner(tmp_path)
    (job,) = page_workflow()["jobs"].values()
    ran: dict[str, int] = {}
    for step in job["steps"]:
        uses = str(step.get("uses", ""))
        if re.fullmatch(r"your-org/pytest-ragretrieval@v\d+", uses):
            ran.update(runner.action({name: str(value) for name, value in (step.get("with") or {}).items()}))
        elif "run" in step:
            ran[step.get("name", step["run"][:40])] = runner.run(step)
        else:
            assert uses.startswith(("actions/checkout@", "actions/cache@")), f"a step the test cannot run: {uses}"
    log = "\n".join(runner.log)
    assert ran.get("Install the plugin") == 0, log
    assert ran.get("Run the retrieval gate") == 0, log
    assert all(status == 0 for status in ran.values()), (ran, log)
    assert "bm25" in (tmp_path / "work" / "reports" / "rag-eval.md").read_text(encoding="utf-8")
    assert runner.contexts["steps.baseline.outputs.check"] == "pass", log
