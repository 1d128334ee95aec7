"""Reclaiming embedded-server folders: only marked ones whose owner is gone, and never another process."""
from __future__ import annotations

import os
from pathlib import Path

from pytest_ragretrieval.database.leftovers import MARKER, PREFIX, mark, reclaim


def folder(tmp_path: Path, name: str) -> Path:
    path = tmp_path / (PREFIX + name)
    (path / "data").mkdir(parents=True)
    return path


def test_only_marked_folders_whose_owner_is_gone_are_reclaimed(tmp_path: Path) -> None:
    live = folder(tmp_path, "live")
    held = mark(live)
    dead = folder(tmp_path, "dead")
    (dead / MARKER).write_text("12345\n", encoding="utf-8")
    unmarked = folder(tmp_path, "unmarked")
    try:
        assert reclaim(tmp_path) == [dead]
        assert live.exists() and unmarked.exists() and not dead.exists()
    finally:
        assert held is not None
        held.close()
    assert reclaim(tmp_path) == [live]


def test_a_postmaster_pid_naming_another_process_is_not_signalled(tmp_path: Path) -> None:
    orphan = folder(tmp_path, "orphan")
    (orphan / MARKER).write_text("12345\n", encoding="utf-8")
    (orphan / "data" / "postmaster.pid").write_text(f"{os.getpid()}\n{orphan / 'data'}\n", encoding="utf-8")
    assert reclaim(tmp_path) == [orphan]
    assert not orphan.exists()
