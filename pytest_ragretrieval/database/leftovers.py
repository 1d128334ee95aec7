"""Embedded servers left behind by killed runs: each run marks its folder, and later runs reclaim orphans.

A run that is killed (SIGKILL, a CI runner torn down) cannot stop its embedded Postgres: the
server keeps running and its folder (about 40 MB) stays in the temporary directory. So each
embedded server's folder holds `owner.lock`, locked (flock) by the run for as long as it lives;
the kernel drops the lock when that process dies, however it dies. A later run finds the
folders whose lock it can take, stops their postmaster (after checking, from postmaster.pid,
that the process is that folder's postgres) and removes them. A folder whose lock is held
belongs to a live run and is never touched; a folder without the marker is not ours to judge.
Where flock does not exist (Windows) nothing is marked and nothing is reclaimed.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
import time
from contextlib import suppress
from pathlib import Path
from typing import IO, Any

PREFIX = "rag-eval-pg-"
MARKER = "owner.lock"
STOP_SECONDS = 10.0


def mark(folder: Path) -> IO[str] | None:
    """Lock `folder` as this process's for as long as the returned file stays open.

    The lock file is written and locked under another name, then renamed into place, so a
    reclaiming run never sees the marker unlocked.
    """
    try:
        import fcntl
    except ImportError:
        return None
    temporary = folder / f".{MARKER}.{os.getpid()}"
    handle = temporary.open("w", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        os.replace(temporary, folder / MARKER)
    except OSError:
        handle.close()
        with suppress(OSError):
            temporary.unlink()
        return None
    return handle


def _claim(folder: Path) -> IO[str] | None:
    """The marker, locked by us, when its owner is gone; None when it lives (or there is no marker)."""
    import fcntl

    try:
        handle = (folder / MARKER).open("r+", encoding="utf-8")
    except OSError:
        return None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    if not (folder / MARKER).exists():
        handle.close()
        return None
    return handle


def _postmaster(data: Path) -> tuple[int, Path | None] | None:
    """(pid, socket folder) from postmaster.pid, or None without one."""
    try:
        lines = (data / "postmaster.pid").read_text(encoding="utf-8", errors="replace").splitlines()
        pid = abs(int(lines[0]))  # negative: a standalone backend, initdb's
    except (OSError, ValueError, IndexError):
        return None
    if not pid:
        return None
    socket_dir = Path(lines[4].strip()) if len(lines) > 4 and lines[4].strip() else None
    return pid, socket_dir


def _is_that_postgres(process: Any, data: Path) -> bool:
    """Whether `process` is the postgres serving `data`: pids are reused, so the pid alone proves nothing."""
    import psutil

    try:
        if "postgres" not in process.name():
            return False
        try:
            return Path(process.cwd()).resolve() == data.resolve()
        except psutil.AccessDenied:
            return str(data) in process.cmdline()
    except (psutil.Error, OSError):
        return False


def stop_postmaster(data: Path) -> None:
    """Stop the folder's postmaster (fast shutdown, then kill) and wait until it is gone."""
    import signal

    import psutil

    found = _postmaster(data)
    if found is None:
        return
    try:
        process = psutil.Process(found[0])
    except psutil.Error:
        return
    if not _is_that_postgres(process, data):
        return
    for sent in (signal.SIGINT, signal.SIGKILL):
        with suppress(psutil.Error):
            process.send_signal(sent)
        deadline = time.monotonic() + STOP_SECONDS
        while time.monotonic() < deadline:
            try:
                if process.status() == psutil.STATUS_ZOMBIE:
                    return
            except psutil.Error:
                return
            time.sleep(0.1)


def reclaim(folder: Path | None = None) -> list[Path]:
    """Stop and remove the embedded servers in `folder` (the temporary directory) whose owner is gone."""
    candidates = [
        path for path in sorted(Path(folder or tempfile.gettempdir()).glob(PREFIX + "*"))
        if path.is_dir() and not path.is_symlink() and (path / MARKER).exists()
    ]
    if not candidates:
        return []
    try:
        import fcntl  # noqa: F401
    except ImportError:
        return []
    if importlib.util.find_spec("psutil") is None:  # imported only once a server is found gone: 0.1 s
        return []
    reclaimed = []
    for candidate in candidates:
        handle = _claim(candidate)
        if handle is None:
            continue
        with handle:
            found = _postmaster(candidate / "data")
            stop_postmaster(candidate / "data")
            shutil.rmtree(candidate, ignore_errors=True)
            if found is not None and found[1] is not None and candidate not in found[1].parents:
                with suppress(OSError):
                    found[1].rmdir()
        if not candidate.exists():
            reclaimed.append(candidate)
    return reclaimed
