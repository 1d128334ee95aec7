"""The spare data folder (database/spare.py): `initdb` on a forked process while the corpus is
embedded, taken by a cold run's kept folder, removed when nobody takes it; without a server
(`initdb` is a function the tests give)."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from pytest_ragretrieval.database import kept as kept_module
from pytest_ragretrieval.database import spare as spare_module
from pytest_ragretrieval.database.kept import claim, key
from pytest_ragretrieval.database.settings import IndexSettings
from pytest_ragretrieval.database.spare import FOLDER, prepare
from pytest_ragretrieval.evalset.records import Chunk

DIGEST = key([Chunk("a", "退款三天到账")], np.ones((1, 2), dtype=np.float32), IndexSettings())


def made(data: Path) -> None:
    """What `initdb` leaves that the start looks at."""
    data.mkdir(parents=True, exist_ok=True)
    (data / "PG_VERSION").write_text("16\n")
    (data / "made-by").write_text(str(os.getpid()))


def failing(data: Path) -> None:
    raise RuntimeError("initdb: could not create directory")


def stuck(data: Path) -> None:
    threading.Event().wait(60)


def spares(cache: Path) -> list[str]:
    return sorted(path.name for path in (cache / FOLDER).iterdir() if path.is_dir())


def test_a_cold_kept_folder_takes_the_spare_instead_of_running_initdb(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spare = prepare(tmp_path, made)
    assert spare is not None
    kept = claim(tmp_path, DIGEST, spare)
    assert kept is not None and kept.schema is None

    def initdb(data: Path) -> None:
        raise AssertionError("initdb ran although the spare was there")

    monkeypatch.setattr(kept_module, "initdb", initdb)
    monkeypatch.setattr(kept_module, "_pg_ctl", lambda data, args, until: None)
    kept.start()
    assert (kept.data / "PG_VERSION").read_text() == "16\n"
    assert (kept.data / "made-by").read_text() != str(os.getpid()), "made by the forked process"
    assert spares(tmp_path) == []
    kept.handle.close()


def test_a_spare_that_failed_means_initdb_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spare = prepare(tmp_path, failing)
    assert spare is not None
    kept = claim(tmp_path, DIGEST, spare)
    assert kept is not None
    monkeypatch.setattr(kept_module, "initdb", made)
    monkeypatch.setattr(kept_module, "_pg_ctl", lambda data, args, until: None)
    kept.start()
    assert (kept.data / "made-by").read_text() == str(os.getpid())
    assert spares(tmp_path) == []
    kept.handle.close()


def test_a_spare_nobody_took_is_removed_once_initdb_ended(tmp_path: Path) -> None:
    spare = prepare(tmp_path, made)
    assert spare is not None
    spare.discard()
    assert spares(tmp_path) == []
    assert (tmp_path / FOLDER / ".gitignore").read_text().endswith("*\n")


def test_a_killed_runs_spare_is_removed_by_the_next_one_a_live_runs_is_not(tmp_path: Path) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True).stdout.strip()
    (tmp_path / FOLDER / f"{gone}-0a0b0c0d" / "data").mkdir(parents=True)
    (tmp_path / FOLDER / f"{os.getppid()}-01020304").mkdir()
    spare = prepare(tmp_path, made)
    assert spare is not None
    assert spares(tmp_path) == sorted([f"{os.getppid()}-01020304", spare.folder.name])
    spare.discard()


def test_no_spare_beside_another_thread_or_where_the_cache_cannot_be_written(tmp_path: Path) -> None:
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert prepare(tmp_path, made) is None
    finally:
        stop.set()
        thread.join()
    (tmp_path / "file").write_text("")
    assert prepare(tmp_path / "file", made) is None


def test_a_stuck_initdb_is_given_up_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spare_module, "SECONDS", 0.2)
    spare = prepare(tmp_path, stuck)
    assert spare is not None
    assert not spare.take(tmp_path / "target")
    assert not (tmp_path / "target").exists() and spares(tmp_path) == []
