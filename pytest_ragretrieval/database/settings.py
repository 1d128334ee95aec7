"""What the config sets about the database the run seeds: where it comes from (`db`) and how its table
is searched (`index`). Here, below the config and the retrievers, so that the servers need neither."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

DbMode = Literal["auto", "docker", "embedded", "url"]
"""`db`, `--rag-db`: where the database comes from (`auto` picks one of the others)."""
IndexKind = Literal["exact", "hnsw"]
"""How the seeded table is searched: `index = "exact"` or `"hnsw"` in the config."""


@dataclass(frozen=True)
class IndexSettings:
    """`exact` scans every row (deterministic); `hnsw` evaluates an ANN index like production."""

    kind: IndexKind = "exact"
    m: int = 16
    ef_construction: int = 64
    ef_search: int = 40

    @property
    def fingerprint(self) -> dict[str, object]:
        if self.kind == "exact":
            return {"kind": "exact"}
        return {"kind": self.kind, "m": self.m, "ef_construction": self.ef_construction, "ef_search": self.ef_search}
