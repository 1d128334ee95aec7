"""A spare data folder: `initdb` run on a forked process while the corpus is embedded.

A cold embedded run otherwise runs `initdb` (about 0.6 s of CPU, seconds on a busy machine) after
the embedding, since the kept folder it goes into is named by the vectors. The spare is made
beside, in `<cache>/spare-databases/<pid>-<random>/data`, and the kept folder takes it by a rename
(one file system: the cache folder's). A spare nobody took is removed when the run closes; one a
killed run left is removed by the next run that makes one (its process is gone).
"""
from __future__ import annotations

import os
import secrets
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from ..files.paths import write_atomic
from ..retrievers.parallel import BESIDE, Child, ChildFailed, fork, forkable, result

FOLDER = "spare-databases"
SECONDS = 120.0
"""How long `initdb` may take on the forked process before it is killed and the run makes its own."""


@dataclass(frozen=True)
class Spare:
    """A folder whose `data` a forked process is filling with `initdb`."""

    folder: Path
    child: Child
    deadline: float

    def take(self, target: Path) -> bool:
        """Move the finished data folder to `target` (absent or empty); False, and the spare is
        removed, when the process failed or the move did."""
        try:
            result(self.child, self.deadline)
            os.rename(self.folder / "data", target)
        except (ChildFailed, OSError):
            shutil.rmtree(self.folder, ignore_errors=True)
            return False
        shutil.rmtree(self.folder, ignore_errors=True)
        return True

    def discard(self) -> None:
        """Wait for `initdb` to end (killing it would leave its own children writing), then remove the folder."""
        try:
            result(self.child, self.deadline)
        except (ChildFailed, OSError):
            pass
        shutil.rmtree(self.folder, ignore_errors=True)


def prepare(cache_dir: Path, initdb: Callable[[Path], None]) -> Spare | None:
    """Start `initdb(folder / "data")` on a forked process; None where forking is unsafe or the cache
    folder cannot be written. Spares whose process is gone (a killed run's) are removed first."""
    if not forkable():
        return None
    root = cache_dir / FOLDER
    _remove_orphans(root)
    folder = root / f"{os.getpid()}-{secrets.token_hex(4)}"
    try:
        folder.mkdir(parents=True)
        if not (root / ".gitignore").exists():
            write_atomic(root / ".gitignore", "# initdb'd folders a run prepares, never committed\n*\n")
    except OSError:
        return None
    return Spare(folder, fork(partial(_made, initdb, folder / "data"), nice=BESIDE), time.monotonic() + SECONDS)


def _made(initdb: Callable[[Path], None], data: Path) -> bytes:
    initdb(data)
    return b""


def _remove_orphans(root: Path) -> None:
    try:
        found = list(root.iterdir())
    except OSError:
        return
    for path in found:
        owner = path.name.split("-", 1)[0]
        if path.is_dir() and owner.isdigit() and not _alive(int(owner)):
            shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
