"""One way to show a value, a difference and a p-value, wherever a line, table or report shows one."""
from __future__ import annotations

import pytest

from pytest_ragretrieval.core.values import fmt, p_clause, p_value, signed
from pytest_ragretrieval.gate.checks import MetricCheck
from pytest_ragretrieval.record.report import conclusion
from pytest_ragretrieval.record.types import Comparison, PairComparison
from pytest_ragretrieval.report.conclusions import _metrics
from pytest_ragretrieval.report.terminal import comparison_lines
from pytest_ragretrieval.scoring.metrics import MetricSpec


def test_values_and_differences_have_four_decimals_and_a_stand_in_for_none() -> None:
    assert fmt(0.726234) == "0.7262" and fmt(1.0) == "1.0000" and fmt(None) == "—"
    assert signed(0.0) == "+0.0000" and signed(-0.273766) == "-0.2738" and signed(None) == ""


@pytest.mark.parametrize(("p", "cell", "clause"), [
    (0.27, "0.2700", "p = 0.2700"),
    (0.0001, "0.0001", "p = 0.0001"),
    (0.00009999, "< 0.0001", "p < 0.0001"),
    (0.00005, "< 0.0001", "p < 0.0001"),  # f"{p:.4f}" would round this one up to 0.0001
    (0.0, "< 0.0001", "p < 0.0001"),
])
def test_a_p_value_below_what_four_decimals_show_reads_below_it(p: float, cell: str, clause: str) -> None:
    assert p_value(p) == cell
    assert p_clause(p) == clause


def test_a_missing_p_value_and_other_relations() -> None:
    assert p_value(None) == "—"
    assert p_clause(0.0384, "≤") == "p ≤ 0.0384"
    assert p_clause(0.00001, "≤") == "p < 0.0001"


TINY = 0.00002
PAIR = PairComparison("hybrid", "vector", "recall@5", 0.24, 20, 30, 3, TINY, (0.15, 0.33))


def test_every_place_that_shows_a_p_value_uses_the_one_rule() -> None:
    check = MetricCheck("table", MetricSpec("ndcg", 3), 0.0, "randomization", 0.05)
    assert check._test_text(Comparison(1.0, 0.9, -0.1, TINY, (-0.12, -0.08))) == (
        "randomization test p < 0.0001 < alpha 0.05, 95% CI of the mean difference [-0.1200, -0.0800]"
    )
    assert conclusion([PAIR], 0.05) == "hybrid vs vector: recall@5 +0.2400 (p < 0.0001, significant)"
    assert _metrics([PAIR]) == "recall@5 (p < 0.0001)"
    assert "hybrid vs vector  recall@5  +0.2400  < 0.0001  [+0.1500, +0.3300]  20/30/3" in comparison_lines(
        (PAIR,), "randomization"
    )
