"""Containers left by runs that are gone: the labels that name a container's owner, and their removal.

testcontainers' reaper (Ryuk) removes a killed run's containers only where it runs; with
`TESTCONTAINERS_RYUK_DISABLED=true` (podman, locked-down CI) they would stay for ever. So every
container we start carries labels naming its run and owner process, and a run that starts one
first removes those whose owner is provably gone (same machine, process dead, whatever the
age) or, when that cannot be told (another machine, unknown liveness, labels missing), that are
older than `STALE_AFTER`, GitHub's job limit.
"""
from __future__ import annotations

import os
import secrets
import socket
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import docker

LABEL = "org.pytest-ragretrieval"
RUN_LABEL = f"{LABEL}.run"
MACHINE_LABEL = f"{LABEL}.machine"
PID_LABEL = f"{LABEL}.pid"
STARTED_LABEL = f"{LABEL}.pid-started"
HOST_LABEL = f"{LABEL}.host"
STALE_AFTER = 6 * 3600.0
STALE_WORDS = "6 h"


@dataclass(frozen=True)
class Owner:
    """The process that started a container: enough for a later run on the same machine to tell it is gone."""

    run: str
    machine: str
    pid: int
    started: str
    host: str

    @classmethod
    def here(cls) -> Owner:
        pid = os.getpid()
        return cls(secrets.token_hex(6), machine_id(), pid, _start_ticks(pid) or "", socket.gethostname())

    def labels(self) -> dict[str, str]:
        return {
            RUN_LABEL: self.run,
            MACHINE_LABEL: self.machine,
            PID_LABEL: str(self.pid),
            STARTED_LABEL: self.started,
            HOST_LABEL: self.host,
        }

    @classmethod
    def from_labels(cls, labels: Mapping[str, str]) -> Owner | None:
        """None when a label is missing or malformed: such a container is judged by its age alone."""
        try:
            pid = int(labels[PID_LABEL])
            return cls(labels[RUN_LABEL], labels[MACHINE_LABEL], pid, labels[STARTED_LABEL], labels[HOST_LABEL])
        except (KeyError, ValueError):
            return None


def machine_id() -> str:
    """Boot id and pid namespace on Linux (two CI containers on one kernel differ); the host name elsewhere."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        return f"{boot}/{os.readlink('/proc/self/ns/pid')}"
    except OSError:
        return f"host:{socket.gethostname()}"


def _start_ticks(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux), against pid reuse; None where unknown or gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    return None if fields[0] in ("Z", "X") else fields[19]


def owner_alive(owner: Owner) -> bool | None:
    """True or False when we can tell; None when we cannot (then the age decides)."""
    if Path("/proc/self/stat").exists():
        if not Path(f"/proc/{owner.pid}").exists():
            return False
        ticks = _start_ticks(owner.pid)
        if ticks is None:
            return False  # a zombie: killed, not yet reaped
        return ticks == owner.started if owner.started else None
    if sys.platform == "win32":
        return None  # os.kill would terminate the process there
    try:
        os.kill(owner.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return None  # a process has that pid, but without start times it may be another one


def orphaned(labels: Mapping[str, str], created: float, me: Owner, now: float) -> bool:
    """Whether a labelled container belongs to no live run: its owner is gone here, or it is too old to be anyone's."""
    if labels.get(RUN_LABEL) == me.run:
        return False
    owner = Owner.from_labels(labels)
    if owner is not None and owner.machine == me.machine:
        alive = owner_alive(owner)
        if alive is not None:
            return not alive
    return now - created > STALE_AFTER


def reclaim(client: docker.DockerClient, me: Owner, *, now: float | None = None) -> int:
    """Remove labelled containers left by runs that are gone; how many were removed."""
    import docker

    now = time.time() if now is None else now
    removed = 0
    for row in client.api.containers(all=True, filters={"label": RUN_LABEL}):
        if not orphaned(row.get("Labels") or {}, float(row.get("Created") or now), me, now):
            continue
        try:
            client.api.remove_container(row["Id"], force=True, v=True)
        except docker.errors.APIError:
            continue  # removed meanwhile by another run, or being removed
        removed += 1
    return removed


def remove_run(client: docker.DockerClient, run: str) -> None:
    """Remove every container of one run, including one created while an interrupt cut its start short."""
    import docker

    for row in client.api.containers(all=True, filters={"label": f"{RUN_LABEL}={run}"}):
        try:
            client.api.remove_container(row["Id"], force=True, v=True)
        except docker.errors.NotFound:
            pass


def reclaimed_note(count: int) -> str:
    """The run-header line that says what reclaim removed."""
    return f"removed {count} pgvector container(s) left by runs that are gone (killed, or older than {STALE_WORDS})"
