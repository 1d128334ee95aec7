"""Which labelled containers a run removes: its owner gone on this machine, or too old to be anyone's."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_ragretrieval.database.reclaim import (
    PID_LABEL,
    RUN_LABEL,
    STALE_AFTER,
    Owner,
    machine_id,
    orphaned,
    owner_alive,
    reclaim,
    reclaimed_note,
    remove_run,
)

LINUX = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="start times come from Linux's /proc")
ME = Owner("mine", machine_id(), os.getpid(), Owner.here().started, "here")


def dead_pid() -> int:
    """The pid of a child that has exited and been reaped: no process has it (until reused, which a test can't outrun)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def other(pid: int, *, machine: str = ME.machine, started: str = "") -> Owner:
    return Owner("other", machine, pid, started, "there")


def test_owner_labels_round_trip() -> None:
    here = Owner.here()
    assert Owner.from_labels(here.labels()) == here
    assert here.pid == os.getpid() and len(here.run) == 12 and here.run != Owner.here().run


@pytest.mark.parametrize("age", [1.0, 10 * STALE_AFTER])
def test_our_own_run_is_never_reclaimed(age: float) -> None:
    assert not orphaned(ME.labels(), 0.0, ME, age)


def test_a_live_owner_here_keeps_its_container_however_old() -> None:
    assert not orphaned(other(os.getpid(), started=ME.started).labels(), 0.0, ME, 10 * STALE_AFTER)


def test_a_dead_owner_here_loses_its_container_however_young() -> None:
    assert orphaned(other(dead_pid(), started="1").labels(), 0.0, ME, 1.0)


@LINUX
def test_a_reused_pid_counts_as_dead() -> None:
    """Our pid, but a start time that is not ours: the owner died and the pid went to another process."""
    reused = other(os.getpid(), started="1")
    assert ME.started not in ("", "1") and owner_alive(reused) is False
    assert orphaned(reused.labels(), 0.0, ME, 1.0)


@LINUX
def test_a_zombie_owner_counts_as_dead() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        while Path(f"/proc/{child.pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z":
            pass
        assert owner_alive(other(child.pid, started="1")) is False
    finally:
        child.wait()


@pytest.mark.parametrize(("age", "gone"), [(STALE_AFTER - 1, False), (STALE_AFTER + 1, True)])
def test_owners_elsewhere_are_judged_by_age(age: float, gone: bool) -> None:
    """Another machine (or pid namespace) sharing the engine: its processes cannot be seen from here."""
    elsewhere = other(os.getpid(), machine="another-boot/pid:[1]")
    assert orphaned(elsewhere.labels(), 1000.0, ME, 1000.0 + age) is gone


@pytest.mark.parametrize(
    "labels",
    [{RUN_LABEL: "x"}, {**other(dead_pid()).labels(), PID_LABEL: "not a pid"}],
)
def test_incomplete_labels_are_judged_by_age(labels: dict[str, str]) -> None:
    assert not orphaned(labels, 0.0, ME, STALE_AFTER - 1) and orphaned(labels, 0.0, ME, STALE_AFTER + 1)


class FakeApi:
    """The two calls reclaim makes, with one container that vanishes before its removal."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows
        self.removed: list[str] = []
        self.filters: list[dict[str, str]] = []

    def containers(self, all: bool, filters: dict[str, str]) -> list[dict[str, Any]]:
        assert all
        self.filters.append(filters)
        return self.rows

    def remove_container(self, container_id: str, force: bool, v: bool) -> None:
        import docker

        assert force and v
        if container_id == "vanished":
            raise docker.errors.NotFound("no such container")
        self.removed.append(container_id)


def client(api: FakeApi) -> Any:
    return type("Client", (), {"api": api})()


def test_reclaim_counts_only_what_it_removed() -> None:
    dead = other(dead_pid()).labels()
    api = FakeApi(
        [
            {"Id": "a", "Labels": dead, "Created": 0},
            {"Id": "vanished", "Labels": dead, "Created": 0},
            {"Id": "mine", "Labels": ME.labels(), "Created": 0},
            {"Id": "young", "Labels": {RUN_LABEL: "x"}, "Created": 5},
        ]
    )
    assert reclaim(client(api), ME, now=10.0) == 1 and api.removed == ["a"]
    assert api.filters == [{"label": RUN_LABEL}]
    assert reclaimed_note(1) == "removed 1 pgvector container(s) left by runs that are gone (killed, or older than 6 h)"


def test_remove_run_asks_for_that_run_only() -> None:
    api = FakeApi([{"Id": "a"}, {"Id": "vanished"}])
    remove_run(client(api), "abc")
    assert api.filters == [{"label": f"{RUN_LABEL}=abc"}] and api.removed == ["a"]
