"""No `rag-eval-verdicts-*` folder is left in TMPDIR: without `-n` none is made (pytest-xdist
installed or not), and one a SIGKILLed `-n` run left is reclaimed by the next gate run (issue 21, item 11)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from projects import write_project

pytest.importorskip("xdist")

WAITING = '''
import time
from pathlib import Path


def make(ctx):
    def retrieve(query, k):
        Path("started").write_text("yes")
        deadline = time.monotonic() + 120
        while not Path("go").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        return []
    return retrieve
'''
RETRIEVER = '[tool.ragretrieval.retrievers.waiting]\ntype = "python"\nfactory = "waiting_retriever:make"\n'


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    write_project(pytester.path, retrievers=RETRIEVER)
    (pytester.path / "waiting_retriever.py").write_text(WAITING, encoding="utf-8")
    (pytester.path / "tmp").mkdir()
    return pytester.path


def start(folder: Path, *argv: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "TMPDIR": str(folder / "tmp")}
    command = [sys.executable, "-m", "pytest", "--rag-eval", "-q", "-p", "no:cacheprovider", *argv]
    return subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def killed_while_running(folder: Path, *argv: str) -> None:
    """SIGKILL to the whole run (controller and workers) once the retriever is waiting."""
    process = start(folder, *argv)
    deadline = time.monotonic() + 120
    while not (folder / "started").exists():
        assert process.poll() is None and time.monotonic() < deadline, "the run never reached the retriever"
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=60)
    (folder / "started").unlink()


def leftovers(folder: Path) -> list[str]:
    return sorted(path.name for path in (folder / "tmp").iterdir() if path.name.startswith("rag-eval-verdicts-"))


def test_a_killed_run_without_n_leaves_no_folder(project: Path) -> None:
    killed_while_running(project)
    assert leftovers(project) == []


def test_a_killed_run_with_n_leaves_one_that_the_next_run_reclaims(project: Path) -> None:
    killed_while_running(project, "-n", "2")
    assert len(leftovers(project)) == 1  # made under -n, and SIGKILL skipped its removal
    (project / "go").write_text("")
    assert start(project).wait(timeout=300) in (0, 1)
    assert leftovers(project) == []
