"""Without the gate's flags the plugin adds nothing and imports nothing heavy."""
from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("numpy", "jieba", "rank_bm25", "psycopg", "torch", "sentence_transformers", "openai", "testcontainers", "scipy")


def test_importing_the_plugin_imports_nothing_heavy() -> None:
    code = (
        "import sys, pytest_ragretrieval.plugin; "
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""


def test_a_plain_run_loads_only_the_plugin_module(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_modules=f"""
import sys

def test_nothing_heavy_loaded():
    assert "pytest_ragretrieval.plugin" in sys.modules
    assert "pytest_ragretrieval.glue.session" not in sys.modules
    assert [m for m in {HEAVY!r} if m in sys.modules] == []
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:hypothesispytest")
    result.assert_outcomes(passed=1)


def test_the_marker_is_registered_without_the_flags(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--markers", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["@pytest.mark.rag_eval: an item of the retrieval gate (pytest-ragretrieval)"])


def test_the_options_are_one_group(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["retrieval evaluation gate (pytest-ragretrieval):", "  --rag-eval*"])
