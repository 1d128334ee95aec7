"""SIGTERM at every phase of a gate run (configure, collection, run, report) ends it with the plugin's own
line and a non-zero status, never pytest's KeyboardInterrupt banner with a source location, and leaves
no process behind. Each run blocks in the team's code at that phase and says so through a file: that is
when the signal is sent."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from projects import RUN, documents_config, retriever, write_distribution, write_documents_project

GUARD = 60
"""Seconds before a run counts as hung: a guard, not a measure of speed."""
CHUNKER = '''
import os
import time
from pathlib import Path


def split(text):
    if os.environ.get("RAG_TEST_PHASE") == "configure":
        Path(os.environ["RAG_TEST_BLOCKED"]).write_text(str(os.getpid()), encoding="utf-8")
        time.sleep(120)
    return [(0, len(text))]
'''
BLOCKING = '''
import os
import time
from pathlib import Path


def make(ctx):
    def retrieve(query, k):
        Path(os.environ["RAG_TEST_BLOCKED"]).write_text(str(os.getpid()), encoding="utf-8")
        time.sleep(120)
        return []

    return retrieve
'''
COLLECTED = '''
import os
import time
from pathlib import Path

if os.environ.get("RAG_TEST_PHASE") == "collection":
    Path(os.environ["RAG_TEST_BLOCKED"]).write_text(str(os.getpid()), encoding="utf-8")
    time.sleep(120)
'''
REPORTING = '''
import os
import time
from pathlib import Path


def pytest_sessionfinish():
    if os.environ.get("RAG_TEST_PHASE") == "report":
        Path(os.environ["RAG_TEST_BLOCKED"]).write_text(str(os.getpid()), encoding="utf-8")
        time.sleep(120)
'''
SLOW_FORMAT = {
    "slow_format.py": '''
import os
import time
from pathlib import Path

from pytest_ragretrieval.report.formats import FileFormat

SLOW = FileFormat("slow", "--rag-slow", "rag_slow", "a report that takes its time", __name__)


def render(data):
    Path(os.environ["RAG_TEST_BLOCKED"]).write_text(str(os.getpid()), encoding="utf-8")
    time.sleep(3)
    return "slow report\\n"
''',
}
"""A report format from an entry point whose rendering takes 3 s: a signal then comes while the results are
written."""
STOPPED = "rag: interrupted: no results, reports or baseline written"
AFTER = "rag: interrupted (SIGTERM) after the results were written: what was written is whole"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    tables = retriever("bm25", "bm25") + retriever("blocking", "python", factory="blocking:make")
    config = documents_config(["recall@2"], tables).replace('type = "sentences"\nsize = 1',
                                                             'type = "python"\npython = "chunker:split"')
    write_documents_project(tmp_path, config)
    for name, text in (("chunker.py", CHUNKER), ("blocking.py", BLOCKING), ("test_collected.py", COLLECTED),
                       ("conftest.py", REPORTING)):
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def terminated(project: Path, phase: str, *flags: str, path: str = "") -> tuple[int, str, int]:
    """The gate run blocked at `phase`, sent SIGTERM: its status, its output, the pid that blocked."""
    blocked = project / "blocked"
    environment = dict(os.environ, RAG_TEST_PHASE=phase, RAG_TEST_BLOCKED=str(blocked))
    if path:
        environment["PYTHONPATH"] = os.pathsep.join(filter(None, [path, os.environ.get("PYTHONPATH")]))
    process = subprocess.Popen([sys.executable, "-m", "pytest", *flags, *RUN], cwd=project, env=environment,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + GUARD
        while not blocked.exists():
            assert process.poll() is None, process.communicate()[0]
            assert time.monotonic() < deadline, f"the run never blocked at {phase}"
            time.sleep(0.05)
        time.sleep(0.2)  # into the sleep
        process.send_signal(signal.SIGTERM)
        output = process.communicate(timeout=GUARD)[0]
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return process.returncode, output, int(blocked.read_text(encoding="utf-8"))


def assert_plugins_line_only(output: str, line: str) -> None:
    assert line in output, output
    for pytests in ("KeyboardInterrupt", "signals.py", "Traceback", "INTERNALERROR", "--full-trace"):
        assert pytests not in output, output


def gone(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True


def test_sigterm_while_the_teams_chunker_runs_at_configure_time(project: Path) -> None:
    code, output, chunker = terminated(project, "configure", "--rag-eval", "-m", "rag_eval")
    assert code == pytest.ExitCode.INTERRUPTED, output
    assert_plugins_line_only(output, STOPPED)
    assert chunker != 0 and gone(chunker)  # the chunker's own process, not left behind


def test_sigterm_during_collection(project: Path) -> None:
    code, output, _ = terminated(project, "collection", "--rag-eval", "-m", "rag_eval")
    assert code == pytest.ExitCode.INTERRUPTED, output
    assert_plugins_line_only(output, STOPPED)


def test_sigterm_during_the_run(project: Path) -> None:
    code, output, _ = terminated(project, "run", "--rag-eval", "-m", "rag_eval", "--rag-json", "out.json")
    assert code == pytest.ExitCode.INTERRUPTED, output
    assert_plugins_line_only(output, STOPPED)
    assert not (project / "out.json").exists()


def test_sigterm_after_the_results_were_written(project: Path) -> None:
    code, output, _ = terminated(project, "report", "--rag-eval", "-m", "rag_eval", "--rag-json", "out.json",
                                 "-k", "not blocking")
    assert code == pytest.ExitCode.INTERRUPTED, output
    assert_plugins_line_only(output, AFTER)
    assert (project / "out.json").exists()


def test_sigterm_while_the_results_are_written_is_held_until_they_are_whole(project: Path) -> None:
    site = write_distribution(project / "site", "slow-format", {"pytest_ragretrieval.formats": {
        "slow": "slow_format:SLOW"}}, SLOW_FORMAT)
    code, output, _ = terminated(project, "writing", "--rag-eval", "-m", "rag_eval", "-k", "not blocking",
                                 "--rag-slow", "slow.txt", path=str(site))
    assert code == pytest.ExitCode.INTERRUPTED, output
    assert_plugins_line_only(output, "rag: interrupted (SIGTERM) while the results were written: what was "
                                     "written is whole; the run ends as interrupted")
    assert (project / "slow.txt").read_text(encoding="utf-8") == "slow report\n"
