"""Paths: inputs read with one-line reasons, outputs checked before the run, files written with the usual mode."""
from __future__ import annotations

import os
import stat
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_ragretrieval.files.paths import (
    STALE_AFTER_S,
    Unreadable,
    display,
    output_problem,
    read_input,
    remove_stale_temporaries,
    write_atomic,
)


def test_a_new_file_gets_the_mode_the_umask_gives(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        from pytest_ragretrieval.files import paths

        paths._umask.cache_clear()
        write_atomic(tmp_path / "a.json", "{}\n")
    finally:
        os.umask(old)
        paths._umask.cache_clear()
    assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == 0o640


def test_an_existing_file_keeps_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "a.json"
    target.write_text("old\n")
    target.chmod(0o600)
    write_atomic(target, "new\n")
    assert target.read_text() == "new\n" and stat.S_IMODE(target.stat().st_mode) == 0o600


def test_a_fifo_is_refused_without_blocking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(Unreadable, match="^is not a regular file$"):
        read_input(tmp_path / "pipe")


def test_an_output_in_a_folder_that_cannot_be_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Checked with os.access, so root (which may write anywhere) is simulated by refusing access."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "locked").mkdir()
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != tmp_path / "locked")
    assert output_problem(tmp_path / "locked" / "sub" / "r.md", {}) == "locked is not writable; give another path"
    assert output_problem(tmp_path / "free" / "r.md", {}) is None


def test_an_output_that_is_an_input_by_another_name(tmp_path: Path) -> None:
    (tmp_path / "chunks.jsonl").write_text("{}\n")
    (tmp_path / "link.jsonl").symlink_to("chunks.jsonl")
    os.link(tmp_path / "chunks.jsonl", tmp_path / "hard.jsonl")
    inputs = {"the chunks file": tmp_path / "chunks.jsonl"}
    for name in ("link.jsonl", "hard.jsonl", "./chunks.jsonl"):
        assert output_problem(tmp_path / name, inputs) == "is the chunks file, which writing would overwrite; give another path"


def test_display_keeps_a_path_on_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert display(tmp_path / "a\nb.json") == "a\\nb.json"
    assert display(tmp_path / "差旅 报销.json") == "差旅 报销.json"


def left(folder: Path, name: str, age_s: float) -> Path:
    """A file as a killed writer leaves it, last touched `age_s` ago."""
    path = folder / name
    path.write_bytes(b"half")
    then = time.time() - age_s
    os.utime(path, (then, then))
    return path


def test_a_killed_writers_temporary_file_is_removed_by_the_next_write(tmp_path: Path) -> None:
    stale = left(tmp_path, ".retrieval.json.k3_x9a0q.tmp", STALE_AFTER_S + 60)
    recent = left(tmp_path, ".retrieval.json.b7c2d4e1.tmp", 5)  # perhaps a concurrent writer's
    other = left(tmp_path, ".results.json.a1b2c3d4.tmp", STALE_AFTER_S + 60)  # another target's
    mine = [left(tmp_path, name, STALE_AFTER_S + 60)
            for name in (".retrieval.json.backup.tmp", "retrieval.json.a1b2c3d4.tmp", ".retrieval.json.A1B2C3D4.tmp")]
    write_atomic(tmp_path / "retrieval.json", "{}\n")
    assert not stale.exists()
    assert recent.exists() and other.exists() and all(path.exists() for path in mine)
    assert (tmp_path / "retrieval.json").read_text(encoding="utf-8") == "{}\n"


def test_without_a_target_every_stale_temporary_file_of_the_folder_goes(tmp_path: Path) -> None:
    gone = [left(tmp_path, name, STALE_AFTER_S + 60) for name in (".a.pack.abcdefgh.tmp", ".b.pack.12345678.tmp")]
    kept = [left(tmp_path, ".c.pack.abcdefgh.tmp", 1), left(tmp_path, "notes.tmp", STALE_AFTER_S + 60)]
    (tmp_path / ".d.pack.abcdefgh.tmp").mkdir()
    assert remove_stale_temporaries(tmp_path) == 2
    assert not any(path.exists() for path in gone) and all(path.exists() for path in kept)
    assert (tmp_path / ".d.pack.abcdefgh.tmp").is_dir()
    assert remove_stale_temporaries(tmp_path / "missing") == 0


def _update(target: str, text: str, barrier: Any, results: Any) -> None:
    """One updater: read the file, wait until the other has read it too, then write over what it read."""
    from pytest_ragretrieval.files.paths import ChangedSince, snapshot

    read = snapshot(Path(target))
    barrier.wait(timeout=20)
    try:
        write_atomic(Path(target), text, since=read)
    except ChangedSince:
        results.put(("refused", text))
    else:
        results.put(("wrote", text))


def test_of_two_concurrent_updates_one_writes_and_the_other_refuses(tmp_path: Path) -> None:
    """Two processes read one baseline, then both replace it: old code let both write, so the first
    update was lost while both said they wrote. Now the second compares the file with what it read,
    under a lock on the folder, and refuses."""
    import multiprocessing

    target = tmp_path / "retrieval.json"
    target.write_text("old\n")
    context = multiprocessing.get_context("fork")
    barrier, results = context.Barrier(2), context.Queue()
    workers = [context.Process(target=_update, args=(str(target), text, barrier, results)) for text in ("a\n", "b\n")]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=30)
    outcomes = sorted(results.get(timeout=5) for _ in workers)
    assert [what for what, _ in outcomes] == ["refused", "wrote"]
    assert target.read_text() == next(text for what, text in outcomes if what == "wrote")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["retrieval.json"], "no lock file, no temporary left"


def test_a_write_since_missing_never_replaces_a_file(tmp_path: Path) -> None:
    from pytest_ragretrieval.files.paths import MISSING, ChangedSince, snapshot

    target = tmp_path / "evalset.jsonl.bak"
    assert snapshot(target) == MISSING
    target.write_text("kept\n")
    with pytest.raises(ChangedSince):
        write_atomic(target, "new\n", since=MISSING)
    assert target.read_text() == "kept\n" and sorted(p.name for p in tmp_path.iterdir()) == ["evalset.jsonl.bak"]
    write_atomic(target, "new\n", since=snapshot(target))
    assert target.read_text() == "new\n"


def test_merge_writes_no_baseline_another_run_wrote_meanwhile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`ragretrieval merge --update-baseline` writes through the same check: one error line, exit 1, the other
    run's file kept."""
    from pytest_ragretrieval.cli.common import Result
    from pytest_ragretrieval.cli.merge import writer
    from pytest_ragretrieval.files.paths import snapshot

    monkeypatch.chdir(tmp_path)
    target = tmp_path / "baselines" / "retrieval.json"
    target.parent.mkdir()
    target.write_text("read by this run\n")
    read = snapshot(target)
    target.write_text("written by another run\n")
    result = Result()
    written = writer(result)
    written(target, "this run's update\n", read)
    assert written.failed and result.out == []
    assert result.err == ["ragretrieval: error: baselines/retrieval.json not written: another run wrote it after this "
                          "one read it (two updates at once), so this run's update would drop that one's; run "
                          "`ragretrieval merge` again to update it as it is now"]
    assert target.read_text() == "written by another run\n"
