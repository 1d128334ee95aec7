"""The fault tier: the gate run against a misbehaving server, killed by signals, and cleaned up after.

Every test here is marked `faults`. Runs happen in subprocesses with a guard timeout: the
guard catches a hang, it does not measure speed.
"""
from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.faults)
