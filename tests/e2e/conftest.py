"""The end-to-end tier: real databases and real models. Every test here is marked `e2e`."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
SAMPLE = ("pyproject.toml", "fixtures", "baselines", ".rag-cache")
"""What a copy of the bundled sample holds: its settings, inputs, baseline and committed caches."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[Any]:
    """A Docker SDK client; session-scoped, so asked for first, a skip costs no torch import."""
    from docker_engine import engine_or_skip

    client = engine_or_skip()
    yield client
    client.close()


@pytest.fixture
def docker_clean(docker_engine: Any) -> Iterator[Any]:
    """The engine, with leftovers of killed runs reclaimed first and no container of this process after the test."""
    from docker_engine import containers_of

    from pytest_ragretrieval.database.reclaim import Owner, reclaim

    reclaim(docker_engine, Owner.here())
    assert containers_of(docker_engine, os.getpid()) == [], "a container of this process was left by an earlier test"
    yield docker_engine
    left = containers_of(docker_engine, os.getpid())
    for container_id in left:
        docker_engine.api.remove_container(container_id, force=True, v=True)
    assert left == [], "the test left a container behind"


@pytest.fixture(scope="session")
def warm_sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled sample after an embedded run: its seeded database kept in its cache folder.

    A copy of it (`sample` in test_sample_changes.py) lets a run whose chunks and vectors are the
    sample's start Postgres on that database instead of paying an `initdb` and a seeding, seconds
    each time; a run that changes either seeds its own, as a user's would. The cold path stays
    covered: the README's run in the repository, `--rag-cache=off`, edited chunks, and
    tests/e2e/test_kept_database.py. A run that kept nothing is tried again; should none keep it,
    the copies are cold, only slower.
    """
    folder = tmp_path_factory.mktemp("warm-sample")
    for name in SAMPLE:  # without the databases a run in the repository may have kept: this machine's
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, folder / name, ignore=shutil.ignore_patterns("databases"))
        else:
            shutil.copy2(source, folder / name)
    command = [sys.executable, "-m", "pytest", "--rag-eval", "-m", "rag_eval", "--rag-db=embedded", "-p", "no:cacheprovider"]
    for _ in range(3):
        done = subprocess.run(command, cwd=folder, env=dict(os.environ, HF_HUB_OFFLINE="1"),
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
        kept = list((folder / ".rag-cache" / "databases").glob("*/seeded.json"))
        if kept and not (kept[0].parent / "in-use").exists():
            break
    return folder
