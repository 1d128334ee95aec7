"""Paths as the user sees them, and files written so that readers never see half of one."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def display(path: Path) -> str:
    """A path as the user would type it: relative to the working directory when below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def write_atomic(path: Path, data: bytes | str) -> None:
    """Write beside the target, flush to disk, then rename: readers see the old file or the new.

    Used for baselines, results, reports and cache entries, so a crash or a parallel run never
    leaves a half-written file behind. Text is written as UTF-8 with `\\n` line ends.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(payload)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
