"""pytest-xdist's verdicts folders: those of gone owners are reclaimed, live ones and unknown ones stay."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_ragretrieval.database.reclaim import STALE_AFTER, _start_ticks
from pytest_ragretrieval.glue import xdist_folder as scratch


@pytest.fixture
def tmpdir_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    return tmp_path


def dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    return int(done.stdout)


def folder(root: Path, name: str, age: float = 0.0) -> Path:
    path = root / name
    path.mkdir()
    if age:
        moment = time.time() - age
        os.utime(path, (moment, moment))
    return path


def test_a_folder_is_named_after_this_process_and_survives_reclaiming(tmpdir_here: Path) -> None:
    made = scratch.make_folder()
    assert made.parent == tmpdir_here
    assert made.name.startswith(f"{scratch.PREFIX}{scratch._machine()}-{os.getpid()}-{_start_ticks(os.getpid()) or ''}-")
    assert scratch.reclaim() == 0 and made.is_dir()


def test_the_folders_of_gone_owners_are_reclaimed(tmpdir_here: Path) -> None:
    machine = scratch._machine()
    gone = folder(tmpdir_here, f"{scratch.PREFIX}{machine}-{dead_pid()}-123-abcdefgh")
    reused = folder(tmpdir_here, f"{scratch.PREFIX}{machine}-{os.getppid()}-1-abcdefgh")  # a live pid, another start time
    mine = folder(tmpdir_here, f"{scratch.PREFIX}{machine}-{os.getpid()}-{_start_ticks(os.getpid())}-abcdefgh")
    elsewhere = folder(tmpdir_here, f"{scratch.PREFIX}00000000-{dead_pid()}-1-abcdefgh")
    elsewhere_old = folder(tmpdir_here, f"{scratch.PREFIX}00000000-1-1-zyxwvuts", age=STALE_AFTER + 60)
    legacy = folder(tmpdir_here, f"{scratch.PREFIX}k3j_9x0a")
    legacy_old = folder(tmpdir_here, f"{scratch.PREFIX}q1w2e3r4", age=STALE_AFTER + 60)
    other = folder(tmpdir_here, "rag-eval-verdicts-of-someone-else", age=STALE_AFTER + 60)
    assert scratch.reclaim() == 4
    assert {path.name for path in tmpdir_here.iterdir()} == {mine.name, elsewhere.name, legacy.name, other.name}
    assert not gone.exists() and not reused.exists() and not elsewhere_old.exists() and not legacy_old.exists()


def test_a_file_with_the_prefix_is_left_alone(tmpdir_here: Path) -> None:
    (tmpdir_here / f"{scratch.PREFIX}{scratch._machine()}-{dead_pid()}-1-abcdefgh").write_text("not ours")
    assert scratch.reclaim() == 0
