"""max-T: the family's adjusted p from one resample applied to every item together.

The exact case is enumerated here in plain Python with exact fractions, apart from the code under
test; the properties hold on generated data for both resampling methods."""
from __future__ import annotations

from fractions import Fraction
from itertools import product

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_ragretrieval.scoring.stats import RESAMPLES, Method, bootstrap_p, holm, maxt, randomization_p

TESTS = {"randomization": randomization_p, "bootstrap": bootstrap_p}


def test_three_items_over_five_questions_enumerated_by_hand() -> None:
    """All 32 sign flips of 5 questions, applied to the 3 items together. An item's p in a flip is the
    share of the 32 flips whose mean is at most that flip's; its adjusted p is the share of flips in
    which the smallest p among it and the items after it (in order of p) is at most its own p."""
    a = [Fraction(-1), Fraction(-1), Fraction(-1, 2), Fraction(-1, 4), Fraction(1, 4)]
    b = [Fraction(-1, 2), Fraction(-1, 2), Fraction(-1, 2), Fraction(0), Fraction(1, 4)]  # moves with a
    c = [Fraction(1, 2), Fraction(-1), Fraction(-1, 4), Fraction(0), Fraction(0)]
    items = [a, b, c]
    flips = list(product([1, -1], repeat=5))
    means = [[sum(s * x for s, x in zip(flip, item)) for item in items] for flip in flips]  # x 5: same order
    observed = [sum(item) for item in items]
    own = [sum(1 for row in means if row[j] <= observed[j]) for j in range(3)]
    assert own == [3, 4, 12]  # a: only flips keeping -1, -1, -1/2 reach -1/2; unadjusted 3/32, 4/32, 12/32
    counts = [[sum(1 for other in means if other[j] <= row[j]) for j in range(3)] for row in means]
    steps = [[0, 1, 2], [1, 2], [2]]  # a, b, c by own p
    expected: list[float] = []
    for j, rest in zip([0, 1, 2], steps):
        reached = sum(1 for row in counts if min(row[i] for i in rest) <= own[j])
        expected.append(max([reached, *expected]) / 32)
    assert expected == [3 / 32, 8 / 32, 12 / 32]
    arrays = [np.array([float(x) for x in item]) for item in items]
    assert maxt(arrays, "randomization") == expected
    unadjusted = [randomization_p(item) for item in arrays]
    assert unadjusted == [3 / 32, 4 / 32, 12 / 32]
    # Holm pays for three independent tests: a 9/32 where max-T, seeing b move with a, says 3/32.
    assert holm(unadjusted) == [0.28125, 0.28125, 0.375]


def test_an_all_zero_item_leaves_the_family_and_items_must_share_their_questions() -> None:
    assert maxt([np.zeros(6), np.zeros(6)], "randomization") == [None, None]
    assert maxt([], "bootstrap") == []
    with pytest.raises(ValueError, match="same questions"):
        maxt([np.ones(5), np.ones(6)], "randomization")


def test_random_draws_carry_the_plus_one_of_the_single_item_test() -> None:
    drop = -np.linspace(0.05, 1.0, 40)
    assert maxt([drop, drop / 2], "randomization") == [1 / (RESAMPLES + 1)] * 2


values = st.integers(-8, 8).map(lambda step: step / 8)
"""Per-question differences as metrics make them: steps, many ties, many zeros."""


@st.composite
def families(draw: st.DrawFn) -> list[np.ndarray]:
    n = draw(st.integers(2, 16))  # up to 13 every flip is drawn, above that 9,999 random ones
    m = draw(st.integers(1, 4))
    return [np.array(draw(st.lists(values, min_size=n, max_size=n))) for _ in range(m)]


@pytest.mark.parametrize("method", ["randomization", "bootstrap"])
@settings(max_examples=40, deadline=None)
@given(family=families())
def test_unadjusted_at_most_maxt_at_most_holm(method: Method, family: list[np.ndarray]) -> None:
    adjusted = maxt(family, method)
    members = [j for j, item in enumerate(family) if item.any()]
    assert [j for j, p in enumerate(adjusted) if p is not None] == members
    unadjusted = [round(TESTS[method](family[j]), 6) for j in members]
    bounded = holm(unadjusted)
    for j, raw, bound in zip(members, unadjusted, bounded, strict=True):
        p = adjusted[j]
        assert p is not None and raw <= p <= bound + 1e-6


@pytest.mark.parametrize("method", ["randomization", "bootstrap"])
@settings(max_examples=30, deadline=None)
@given(family=families(), copies=st.integers(1, 4))
def test_one_item_or_identical_items_get_the_single_item_p(method: Method, family: list[np.ndarray],
                                                           copies: int) -> None:
    item = family[0]
    expected = round(TESTS[method](item), 6) if item.any() else None
    assert maxt([item] * copies, method) == [expected] * copies


@pytest.mark.parametrize("method", ["randomization", "bootstrap"])
@settings(max_examples=30, deadline=None)
@given(family=families(), where=st.integers(0, 4))
def test_an_all_zero_item_changes_no_other_p(method: Method, family: list[np.ndarray], where: int) -> None:
    where = min(where, len(family))
    widened = [*family[:where], np.zeros(family[0].size), *family[where:]]
    found = maxt(widened, method)
    assert found[where] is None
    assert found[:where] + found[where + 1:] == maxt(family, method)
