"""`--rag-json /abs/existing.json` (a space, not `=`): pytest chooses its rootdir before this plugin
is loaded and would take the path for a test path, moving the run's rootdir (and the config it
reads). That is one line naming the option and the fix; `=`, or a path that moves nothing, runs."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from projects import write_project


def pytest_in(folder: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest", "--rag-eval", "-q", "-p", "no:cacheprovider", *argv]
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=300)


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    folder = pytester.path / "project"
    folder.mkdir()
    write_project(folder)
    (pytester.path / "elsewhere").mkdir()
    (pytester.path / "elsewhere" / "results.json").write_text("{}")
    (folder / "results.json").write_text("{}")
    return folder


def test_an_existing_path_after_a_space_that_moves_the_rootdir_is_one_line(project: Path) -> None:
    target = project.parent / "elsewhere" / "results.json"
    done = pytest_in(project, "--rag-json", str(target))
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert [line for line in done.stderr.splitlines() if line.strip()] == [
        f"ERROR: --rag-json {target}: pytest took this existing path for a test path when it chose its rootdir "
        f"({project.parent} instead of {project}); write --rag-json={target}, with '='"
    ]
    assert target.read_text() == "{}"


def test_with_equals_the_rootdir_stays_and_the_file_is_written(project: Path) -> None:
    target = project.parent / "elsewhere" / "results.json"
    done = pytest_in(project, f"--rag-json={target}")
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert target.read_text().startswith('{\n  "comparable"')


def test_a_path_inside_the_project_after_a_space_moves_nothing_and_runs(project: Path) -> None:
    done = pytest_in(project, "--rag-json", "results.json", "--rag-report", str(project / "report.md"))
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert (project / "results.json").read_text().startswith('{\n  "comparable"')
