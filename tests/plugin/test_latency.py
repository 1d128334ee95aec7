"""Latency: p50/p95 per retriever in the results, and `max_latency_ms` as its own item."""
from __future__ import annotations

import json

import pytest
from projects import RUN, retriever, write_project

SLOW = "import time\n\ndef make(ctx):\n    def retrieve(query, k):\n        time.sleep(0.03)\n        return []\n    return retrieve\n"


def project(pytester: pytest.Pytester, limit: float) -> None:
    pytester.makepyfile(slow=SLOW)
    write_project(
        pytester.path,
        retrievers=retriever("slow", "python", factory="slow:make", max_latency_ms=limit),
    )


def test_a_p95_above_the_limit_fails_the_latency_item(pytester: pytest.Pytester) -> None:
    project(pytester, 5)
    result = pytester.runpytest("--rag-update-baseline", "--rag-json", "r.json", *RUN)
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines(["*rag::slow::latency*", "p95 latency of 'slow' is * ms, above max_latency_ms = 5 (p50 * ms)"])
    latency = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))["retrievers"]["slow"]["latency_ms"]
    assert 30 <= latency["p50"] <= latency["p95"]


def test_a_generous_limit_passes(pytester: pytest.Pytester) -> None:
    project(pytester, 60000)
    result = pytester.runpytest("--rag-update-baseline", "-k", "latency", *RUN)
    result.assert_outcomes(passed=1)
