"""The docker-mode tests' switch: skip without an engine, fail under RAG_EVAL_REQUIRE_DOCKER=1; the bounded wait."""
from __future__ import annotations

import pytest
from docker_engine import REQUIRE, engine_or_skip

from pytest_ragretrieval.database.docker import bounded_wait


@pytest.mark.parametrize("value", [None, "", "0"])
def test_no_engine_skips_with_the_reason(no_docker: str, monkeypatch: pytest.MonkeyPatch, value: str | None) -> None:
    if value is None:
        monkeypatch.delenv(REQUIRE, raising=False)
    else:
        monkeypatch.setenv(REQUIRE, value)
    with pytest.raises(pytest.skip.Exception, match=rf"no Docker engine answered at {no_docker} \(from DOCKER_HOST\); start Docker.*docker-standin.sh"):
        engine_or_skip()


def test_no_engine_fails_when_docker_is_required(no_docker: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REQUIRE, "1")
    with pytest.raises(pytest.fail.Exception, match=rf"RAG_EVAL_REQUIRE_DOCKER=1 but no Docker engine answered at {no_docker}"):
        engine_or_skip()


def test_bounded_wait_lowers_testcontainers_budget_for_one_start() -> None:
    from testcontainers.core.config import testcontainers_config as config

    saved = config.max_tries
    with bounded_wait(3 * config.sleep_time):
        assert config.max_tries == min(saved, 3) and config.timeout <= 3 * config.sleep_time
    assert config.max_tries == saved
