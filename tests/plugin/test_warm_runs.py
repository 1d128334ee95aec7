"""A warm run reads tokens from the cache: it never loads the tokenizer."""
from __future__ import annotations

import pytest
from projects import RUN, write_project

BM25 = """
[tool.ragretrieval.retrievers.bm25]
type = "bm25"
"""
REPORT = """
import sys


def pytest_unconfigure(config):
    print("jieba loaded:", "jieba" in sys.modules)
"""


def test_a_warm_run_never_imports_jieba(pytester: pytest.Pytester) -> None:
    write_project(pytester.path, retrievers=BM25)
    pytester.makeconftest(REPORT)
    cold = pytester.runpytest_subprocess("--rag-update-baseline", "-s", *RUN)
    cold.stdout.fnmatch_lines(["jieba loaded: True"])
    warm = pytester.runpytest_subprocess("--rag-eval", "-s", "--rag-cache=readonly", *RUN)
    warm.assert_outcomes(passed=4)
    warm.stdout.fnmatch_lines(["jieba loaded: False"])
