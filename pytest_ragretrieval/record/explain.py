"""Why a question missed, as data: the tokens each bm25 retriever saw, the gold chunks' ranks in every
ranking the retriever reads, and a fusion's scores against the k-th. Built by `labels/explain.py`, shown
by `ragretrieval explain` and the HTML report's per-question view (hence here, beside `report.py`)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class GoldTokens:
    """One gold chunk's tokens, and the query's distinct tokens it also holds (in query order); `plain` the
    same without the user dictionary (None where none is configured)."""

    chunk: str
    tokens: tuple[str, ...]
    shared: tuple[str, ...]
    plain: tuple[str, ...] | None = None
    plain_shared: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Tokens:
    """The query and the gold chunks as one bm25 retriever's tokenizer cut them."""

    retriever: str
    tokenizer: str
    """Its name, and the user dictionary's path where one is configured."""
    query: tuple[str, ...]
    gold: tuple[GoldTokens, ...]
    plain_query: tuple[str, ...] | None = None
    """The query's tokens without the user dictionary; None where none is configured."""
    plain_ranks: Mapping[str, int | None] | None = field(default=None, hash=False)
    """Each gold chunk's rank by the same bm25 without the user dictionary (None where it does not rank it),
    where the ranking was computed here."""


@dataclass(frozen=True)
class Ranks:
    """Where one ranking puts the gold chunks: 1-based ranks, None where a chunk is not in it."""

    retriever: str
    type: str
    origin: str
    """Where the ranking came from: computed here, a run file, a results file."""
    depth: int
    """How many ids of the ranking are known."""
    whole: bool
    """Whether that is the whole ranking (a chunk not in it was not returned), or only its top (recorded)."""
    ranks: Mapping[str, int | None] = field(hash=False)
    scores: Mapping[str, float] = field(default_factory=dict, hash=False)
    """bm25: each gold chunk's score (those it scores above 0)."""
    kth: tuple[str, float] | None = None
    """bm25: the k-th chunk and its score."""

    def shown(self, chunk: str) -> str:
        """The chunk's rank as every explanation shows it: `-` where the whole ranking lacks it, `>N` where
        only its top N is known, `?` where none of it is."""
        rank = self.ranks.get(chunk)
        if rank is not None:
            return str(rank)
        if self.whole:
            return "-"
        return f">{self.depth}" if self.depth else "?"

    @property
    def known(self) -> str:
        """Where the ranking came from and how much of it is known."""
        if self.whole:
            return f"{self.origin}, {self.depth} ranked"
        return f"{self.origin}, top {self.depth} recorded" if self.depth else self.origin

    def missed(self, chunk: str, k: int) -> bool | None:
        """Whether the ranking lacks `chunk` within the top k; None where too little of it is known to say."""
        rank = self.ranks.get(chunk)
        if rank is not None:
            return rank > k
        return True if self.whole or self.depth >= k else None


@dataclass(frozen=True)
class Fusion:
    """A hybrid's reciprocal rank fusion for the gold chunks and the k-th: sum of weight / (rrf_k + rank)
    over the sources that rank a chunk within `depth`."""

    rrf_k: int
    depth: int
    sources: tuple[str, ...]
    weights: tuple[float, ...]
    scores: Mapping[str, float] = field(hash=False)
    kth: tuple[str, float] | None
    lower_bounds: tuple[str, ...] = ()
    """Sources known to fewer than `depth` ranks: a chunk they rank below what is known counts 0 here, so
    the scores are lower bounds."""

    @property
    def rule(self) -> str:
        """How the scores are summed, with each source's weight."""
        weights = ", ".join(f"{source} {weight:g}" for source, weight in zip(self.sources, self.weights, strict=True))
        return f"sum of weight / ({self.rrf_k} + rank) over the sources' top {self.depth}; weights {weights}"


@dataclass(frozen=True)
class Explanation:
    """One question under one retriever."""

    question: str
    query: str
    retriever: str
    type: str
    k: int
    gold: tuple[tuple[str, int], ...]
    """(chunk id, grade) of its gold chunks, best grade first."""
    ranks: tuple[Ranks, ...]
    """The retriever's own ranking first, then each ranking it reads, sources of sources included."""
    fusion: Fusion | None = None
    tokens: tuple[Tokens, ...] = ()
    """One per bm25 retriever among `ranks`."""
    notes: tuple[str, ...] = ()

    @property
    def missed(self) -> tuple[str, ...] | None:
        """The gold chunks the retriever did not rank within k; None where its ranking is not known that deep."""
        found = [(chunk, self.ranks[0].missed(chunk, self.k)) for chunk, _ in self.gold]
        if any(missed is None for _, missed in found):
            return None
        return tuple(chunk for chunk, missed in found if missed)


def ordinal(n: int) -> str:
    """`5th`, as the explanations name the k-th chunk."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
