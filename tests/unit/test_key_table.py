"""The array-at-a-time table answers as a dict would, collisions and absent keys included."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_ragretrieval.retrievers.key_table import EMPTY, KeyTable, mixed

KEYS = st.integers(min_value=0, max_value=2**64 - 2)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(KEYS, st.floats(allow_nan=False), max_size=300), st.lists(KEYS, max_size=300))
def test_lookups_equal_a_dicts(table: dict[int, float], others: list[int]) -> None:
    keys = np.array(list(table), dtype=np.uint64)
    built = KeyTable.build(keys, np.array(list(table.values()), dtype=np.float64), -7.5)
    queries = list(table) + others
    assert built.get(np.array(queries, dtype=np.uint64)).tolist() == [table.get(key, -7.5) for key in queries]


def test_keys_sharing_a_home_slot_are_all_found() -> None:
    """Keys chosen to start in the same few slots: long runs of linear probing."""
    candidates = np.arange(1, 200_000, dtype=np.uint64)
    keys = candidates[(mixed(candidates) & np.uint64(1023)) < np.uint64(4)][:300]
    built = KeyTable.build(keys, keys.astype(np.float64), np.inf)
    assert built.slots.size == 1024
    assert built.get(keys).tolist() == keys.astype(np.float64).tolist()
    assert np.isinf(built.get(keys + np.uint64(200_000))).all()


def test_an_empty_table_misses_everything() -> None:
    built = KeyTable.build(np.zeros(0, dtype=np.uint64), np.zeros(0), np.nan)
    assert np.isnan(built.get(np.array([0, 5], dtype=np.uint64))).all()


@pytest.mark.parametrize(("keys", "message"), [([1, EMPTY], "empty slot"), ([3, 4, 3], "not distinct")])
def test_the_marker_and_repeated_keys_are_refused(keys: list[int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        KeyTable.build(np.array(keys, dtype=np.uint64), np.zeros(len(keys)), 0.0)
