"""The end-to-end tier: real databases and real models. Every test here is marked `e2e`."""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent


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
