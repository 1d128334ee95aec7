"""The folder pytest-xdist's controller hands its verdicts to the workers in: made only under `-n`,
named after its owner process, and reclaimed once that owner is gone.

SIGKILL skips every clean-up, so a killed run's folder would stay in TMPDIR for ever. Its name
carries the machine (a hash of the boot id and pid namespace: TMPDIR may be shared between
containers), the owner's pid and the pid's start time (against pid reuse), so any later gate
run can tell it is an orphan; one that cannot be told (another machine) goes after
`STALE_AFTER`, as containers do.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import tempfile
import time
from pathlib import Path

from ..database.reclaim import STALE_AFTER, Owner, machine_id, owner_alive

PREFIX = "rag-eval-verdicts-"
_NAME = re.compile(rf"{PREFIX}(?P<machine>[0-9a-f]{{8}})-(?P<pid>[0-9]+)-(?P<started>[0-9]*)-[a-z0-9_]{{8}}")
_LEGACY = re.compile(rf"{PREFIX}[a-z0-9_]{{8}}")
"""Folders of versions that named no owner: gone after STALE_AFTER."""


def _machine() -> str:
    return hashlib.sha256(machine_id().encode("utf-8")).hexdigest()[:8]


def make_folder() -> Path:
    """A new verdicts folder in TMPDIR, named after this process."""
    me = Owner.here()
    return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{_machine()}-{me.pid}-{me.started}-"))


class VerdictsFolder:
    """One controller's folder: killed runs' ones reclaimed when it is set up, its own made on first
    need (only `-n` has one) and removed at the end."""

    def __init__(self) -> None:
        reclaim()
        self.path: Path | None = None

    def file(self) -> Path:
        """The verdicts file, its folder made now if not yet."""
        if self.path is None:
            self.path = make_folder()
        return self.path / "verdicts.json"

    def remove(self) -> None:
        if self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)


def _orphaned(name: str, modified: float, machine: str, now: float) -> bool:
    found = _NAME.fullmatch(name)
    if found is not None and found["machine"] == machine:
        owner = Owner("", machine, int(found["pid"]), found["started"], "")
        alive = owner_alive(owner) if owner.pid != os.getpid() else True
        if alive is not None:
            return not alive
    elif found is None and _LEGACY.fullmatch(name) is None:
        return False
    return now - modified > STALE_AFTER


def reclaim(folder: Path | None = None, now: float | None = None) -> int:
    """Remove the verdicts folders (this user's) whose owner is gone; returns how many. What cannot
    be read or removed is left as it is: this is tidying, never a reason to fail a run."""
    root = folder if folder is not None else Path(tempfile.gettempdir())
    moment = time.time() if now is None else now
    machine = _machine()
    removed = 0
    try:
        entries = [entry for entry in os.scandir(root) if entry.name.startswith(PREFIX)]
    except OSError:
        return 0
    for entry in entries:
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            continue
        if _orphaned(entry.name, info.st_mtime, machine, moment):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed += not os.path.exists(entry.path)
    return removed
