"""Phase times: each phase counts its own time, without the phases nested inside it."""
from __future__ import annotations

import pytest

from pytest_ragretrieval.core.timing import Phases


def test_nested_phases_are_counted_once(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([0.0, 1.0, 4.0, 5.0, 6.0, 8.0, 8.0, 10.0])
    monkeypatch.setattr("pytest_ragretrieval.core.timing.time.perf_counter", lambda: next(clock))
    phases = Phases()
    with phases.phase("run vector"):  # 0 .. 8
        with phases.phase("database start"):  # 1 .. 4
            pass
        with phases.phase("seeding"):  # 5 .. 6
            pass
    with phases.phase("run vector"):  # 8 .. 10
        pass
    assert phases.seconds == {"run vector": 4.0 + 2.0, "database start": 3.0, "seeding": 1.0}
    assert list(phases.seconds) == ["run vector", "database start", "seeding"]
    assert phases.line() == "rag: time: run vector 6.00s, database start 3.00s, seeding 1.00s; total 10.00s"
