"""`fail_on = ["metric", "question"]`: a lost hit fails its own item even when the averages hold."""
from __future__ import annotations

import pytest
from projects import GOLD, RUN, set_rankings, write_project

SETTINGS = 'fail_on = ["metric", "question"]\ntolerance = 0.5'
TABLE = '[tool.ragretrieval.retrievers.table]\ntype = "python"\nfactory = "table_retriever:make"\n'


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    write_project(pytester.path, settings=SETTINGS, retrievers=TABLE)
    set_rankings(pytester.path, dict(GOLD, q05=[]))
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    return pytester


def test_one_item_per_answerable_question(project: pytest.Pytester) -> None:
    result = project.runpytest("--rag-eval", "--collect-only", "-q", *RUN)
    result.stdout.fnmatch_lines(
        ["rag::table::ndcg@3", "rag::table::question::q01", "rag::table::question::q05", "9 tests collected*"]
    )
    assert "question::q06" not in result.stdout.str()


def test_a_lost_hit_fails_while_the_averages_hold(project: pytest.Pytester) -> None:
    set_rankings(project.path, dict(GOLD, q02=["error-002"], q05=["refund-002"]))
    result = project.runpytest("--rag-eval", *RUN)
    result.assert_outcomes(passed=8, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*rag::table::question::q02*",
            "question q02 (ORDER-2024 是什么错误) was a hit within 3 for 'table' and is no longer one",
            "  before: error-001",
            "  now:    error-002",
            "  relevant: error-001",
        ]
    )


def test_questions_select_with_minus_k(project: pytest.Pytester) -> None:
    project.runpytest("--rag-eval", "-k", "question and q01", *RUN).assert_outcomes(passed=1)
