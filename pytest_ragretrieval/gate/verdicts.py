"""Verdicts handed from pytest-xdist's controller, which runs and judges the gate, to the workers,
which only report them: no worker starts a database or runs a retriever, so `-n N` adds nothing
to the gate's own time and the controller's start-up overlaps the workers'."""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..paths import write_atomic
from .items import ItemKey


@dataclass(frozen=True)
class Verdict:
    """What one item reports: its status and the lines pytest shows for it."""

    status: str
    """passed, failed or skipped."""
    lines: tuple[str, ...]


def write(path: Path, verdicts: Mapping[ItemKey, Verdict]) -> None:
    """Atomically, so that a worker never reads half a file."""
    document = {key.nodeid: {"status": v.status, "lines": list(v.lines)} for key, v in sorted(verdicts.items())}
    write_atomic(path, json.dumps(document, ensure_ascii=False, indent=0))


def read(path: Path) -> dict[str, Verdict]:
    """Node id -> verdict; the file is the controller's own, so its shape is trusted."""
    document = json.loads(path.read_text(encoding="utf-8"))
    return {nodeid: Verdict(entry["status"], tuple(entry["lines"])) for nodeid, entry in document.items()}
