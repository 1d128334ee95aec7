"""The one rule for numbers and metric keys (files/jsontext.py) that every reader applies (issue 32)."""
from __future__ import annotations

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_ragretrieval.files.jsontext import cutoff, fits_float, metric_key_problem
from pytest_ragretrieval.scoring.metrics import metric_order


@pytest.mark.parametrize(("value", "fits"), [
    (0, True), (-1, True), (10**308, True), (int(sys.float_info.max), True), (-int(sys.float_info.max), True),
    (int(sys.float_info.max) * 2, False), (10**309, False), (-(10**309), False), (10**4299, False),
    (0.5, True), (float("inf"), False), (float("nan"), False), (sys.float_info.max, True),
])
def test_an_integer_fits_when_a_float_holds_it(value: int | float, fits: bool) -> None:
    assert fits_float(value) is fits


@given(st.integers(min_value=-(10**320), max_value=10**320))
def test_fits_float_never_raises_and_agrees_with_float(value: int) -> None:
    try:
        expected = abs(float(value)) != float("inf")
    except OverflowError:
        expected = False
    assert fits_float(value) is expected


@pytest.mark.parametrize(("key", "found"), [
    ("ndcg@5", 5), ("recall@20", 20), ("mrr", None), ("hit_rate@999999999", 999999999),
])
def test_metric_keys_that_parse(key: str, found: int | None) -> None:
    assert metric_key_problem(key) is None
    assert cutoff(key) == found


@pytest.mark.parametrize("key", [
    "ndcg@\u00b2", "ndcg@\u0665", "ndcg@\uff15", "ndcg@", "ndcg@5 ", "NDCG@5", "ndcg@1234567890", "ndcg@" + "5" * 5001,
    "", "@5", "nd cg@5", "ndcg@5@5", "ndcg\n@5", "ndcg@0", "ndcg@05", "5ndcg@5",
])
def test_metric_keys_that_do_not_parse_are_one_line_and_never_raise(key: str) -> None:
    problem = metric_key_problem(key)
    assert problem is not None and "\n" not in problem and len(problem) < 300
    assert cutoff(key) is None
    assert metric_order(key)[1] == 0  # sorting a bad key never raises
