"""Integer keys to float values in two numpy arrays, looked up a whole array of keys at a time.

A Python dict looks its keys up one by one, and in a table as large as jieba's dictionary (half a
million keys, tens of megabytes) each lookup waits for a few cache misses: about 300 ns. Looked up
as arrays the loads of different keys overlap, about 40 ns a key. Open addressing with linear
probing, no deletion: a key lies in the run of used slots that starts at its home slot.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

EMPTY = np.uint64(2**64 - 1)
"""A free slot's key; no key may equal it."""
LOAD = 0.4
"""The most used slots per slot: short runs."""


def mixed(keys: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser (Steele, Lea and Flood 2014): keys built of code points, which differ
    only in a few bits, spread over the whole table. uint64 arithmetic wraps, as intended."""
    x = keys.astype(np.uint64, copy=True)
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


@dataclass(frozen=True)
class KeyTable:
    """A read-only map of uint64 keys to float64 values; `missing` for a key it lacks."""

    slots: np.ndarray
    values: np.ndarray
    missing: float

    @classmethod
    def build(cls, keys: np.ndarray, values: np.ndarray, missing: float) -> KeyTable:
        """The table of distinct `keys` (uint64, none equal to EMPTY) and their `values`."""
        keys = np.asarray(keys, dtype=np.uint64)
        if keys.size and (keys == EMPTY).any():
            raise ValueError("a key equals the empty slot's marker")
        ordered = np.sort(keys)
        if (ordered[1:] == ordered[:-1]).any():
            raise ValueError("the keys are not distinct")
        size = 1 << max(3, int(np.ceil(np.log2(max(1, keys.size) / LOAD))))
        slots = np.full(size, EMPTY, dtype=np.uint64)
        stored = np.full(size, missing, dtype=np.float64)
        where = (mixed(keys) & np.uint64(size - 1)).astype(np.int64)
        pending = np.arange(keys.size)
        while pending.size:
            # Each free slot takes the first pending key that reaches it; the others move one on.
            at = where[pending]
            free = slots[at] == EMPTY
            candidates = np.flatnonzero(free)
            taken, first = np.unique(at[candidates], return_index=True)
            placed = pending[candidates[first]]
            slots[taken] = keys[placed]
            stored[taken] = values[placed]
            waiting = np.ones(pending.size, dtype=bool)
            waiting[candidates[first]] = False
            pending = pending[waiting]
            where[pending] = (where[pending] + 1) & (size - 1)
        return cls(slots, stored, missing)

    def get(self, keys: np.ndarray) -> np.ndarray:
        """The value of each of `keys` (uint64), `missing` where the table lacks it."""
        keys = np.asarray(keys, dtype=np.uint64)
        found = np.full(keys.size, self.missing, dtype=np.float64)
        where = (mixed(keys) & np.uint64(self.slots.size - 1)).astype(np.int64)
        active = np.arange(keys.size)
        while active.size:
            at = where[active]
            there = self.slots[at]
            hit = there == keys[active]
            found[active[hit]] = self.values[at[hit]]
            active = active[~hit & (there != EMPTY)]
            where[active] = (where[active] + 1) & (self.slots.size - 1)
        return found
