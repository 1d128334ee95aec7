"""Sharded runs: `--rag-shard I/N` runs the questions of shard I of N, and `ragretrieval merge` judges
the N partial records once.

A question belongs to shard `sha256(id) mod N + 1` (the digest of its id's UTF-8 bytes, read as one
big-endian number): the same id lands in the same shard on every machine and in every run, whatever
the eval set's order, and a question added to the set moves no other question.
"""
from __future__ import annotations

import argparse
import hashlib
import re
from dataclasses import dataclass

MAX_SHARDS = 1000
"""More shards than any CI matrix runs; a typo such as 1/30000 is refused rather than run."""
_SPEC = re.compile(r"([0-9]{1,4})/([0-9]{1,4})")


def shard_of(question_id: str, count: int) -> int:
    """The shard (1 to count) that runs the question `question_id`."""
    return int.from_bytes(hashlib.sha256(question_id.encode("utf-8")).digest(), "big") % count + 1


@dataclass(frozen=True, order=True)
class Shard:
    """Shard `index` of `count`, 1-based as CI matrices count."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def holds(self, question_id: str) -> bool:
        return shard_of(question_id, self.count) == self.index


def parse_shard(text: str) -> Shard:
    """An option's argparse `type=`: `I/N` with 1 <= I <= N <= MAX_SHARDS."""
    found = _SPEC.fullmatch(text.strip())
    if found is None or not 1 <= int(found[1]) <= int(found[2]) <= MAX_SHARDS:
        raise argparse.ArgumentTypeError(
            f"expected I/N, shard I of N with 1 <= I <= N <= {MAX_SHARDS} (such as 2/4), got {text!r}"
        )
    return Shard(int(found[1]), int(found[2]))
