"""Where a gold chunk's recorded text went: the chunks of today's corpus that hold it.

Texts are compared with all whitespace removed (a re-chunker that trims or re-wraps at the cut
does not matter), and each candidate is a span of the old text it covers. Three steps, the first
that finds anything decides:

1. the old text inside the corpus's chunks joined in file order: the chunks that occurrence
   overlaps (the old chunk renamed, merged into a larger one, or cut into consecutive pieces);
2. chunks inside the old text (a split whose pieces lost or changed text at the cut): taken
   when together they cover CONTAINED of it;
3. fuzzy overlap (rapidfuzz's `partial_ratio`, the best alignment of the shorter text in the
   longer): chunks scoring FUZZY or more, compared only where they share SHARED of the trigrams.
   rapidfuzz's search grows with about the cube of the texts' length (two 18,000-character texts:
   minutes); where the shorter is over LONG characters, the alignment is the longest common
   subsequence's instead (rapidfuzz's bit-parallel Indel opcodes: milliseconds), scored by the
   same Indel ratio.

A candidate covering less than PIECE of the old text is never proposed. A proposal is ambiguous,
and `relabel --apply` refuses it without `--accept-ambiguous`, when the old text (or a part of
it) is found in two places (two candidates' spans overlap by more than half the shorter, their
scores within GAP) or when a fuzzy match scores below CERTAIN or covers less than CONTAINED.
"""
from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..evalset.records import Chunk

PIECE = 0.05
"""The least share of the old text a proposed chunk covers: smaller coincidences are not labels."""
CONTAINED = 0.9
"""Pieces (step 2) are taken when together they cover this share of the old text; a fuzzy proposal
covering less is ambiguous."""
FUZZY = 80.0
"""rapidfuzz `partial_ratio` (0-100) at or above which a chunk is a fuzzy candidate."""
CERTAIN = 95.0
"""A fuzzy proposal whose every chunk scores this or more is certain; below, it is ambiguous."""
SHARED = 0.2
"""The fuzzy step compares only chunks sharing this share of the shorter side's distinct trigrams: an
alignment scoring FUZZY changes at most a fifth of the characters, which leaves about half the trigrams."""
GAP = 5.0
LONG = 1000
"""Above this many characters on its shorter side, a pair is aligned by its longest common subsequence, not
by rapidfuzz's `partial_ratio` search (0.06 s for two 1,000-character texts, 3.8 s at 3,000)."""
BLOCK = 8
"""The least run of common characters that places an alignment of long texts (shorter ones are coincidence)."""
"""Two overlapping candidates whose scores differ by less than this are two places, not one and noise."""


def squeezed(text: str) -> str:
    """The text with every whitespace character removed."""
    return "".join(text.split())


@dataclass(frozen=True)
class Span:
    """A candidate: the part [start, end) of the (squeezed) old text that chunk `chunk` holds."""

    chunk: str
    start: int
    end: int
    score: float = 100.0


@dataclass(frozen=True)
class Anchor:
    """Where one old text went: the chunks, in the order of the old text, and the share each covers."""

    chunks: tuple[str, ...]
    shares: tuple[float, ...]
    covered: float
    """The share of the old text the chunks cover together."""
    how: str
    """`contained` (steps 1 and 2), `fuzzy` or `none`."""
    ambiguous: str = ""
    """Why the proposal is not certain; empty when it is."""
    score: float = 100.0
    """The lowest fuzzy score among the chunks (100 for contained ones)."""

    @property
    def found(self) -> bool:
        return bool(self.chunks)

    def __str__(self) -> str:
        if not self.chunks:
            return f"not found: no chunk holds {PIECE:.0%} or more of its text"
        share = f"{math.floor(self.covered * 100)}%"
        text = (f"text {share} contained" if self.how == "contained"
                else f"text {share} matched, fuzzy score {self.score:g}")
        return f"{text}; ambiguous: {self.ambiguous}" if self.ambiguous else text


class Matcher:
    """Today's corpus, prepared once for many old texts."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self.ids = [chunk.id for chunk in chunks]
        self.texts = [squeezed(chunk.text) for chunk in chunks]
        self.starts: list[int] = []
        offset = 0
        for text in self.texts:
            self.starts.append(offset)
            offset += len(text)
        self.joined = "".join(self.texts)
        self._grams: dict[str, list[int]] | None = None
        self._sizes: list[int] = []

    def anchor(self, old: str) -> Anchor:
        """Where `old` went; see the module's steps."""
        text = squeezed(old)
        if not text:
            return Anchor((), (), 0.0, "none")
        spans = self._inside_corpus(text)
        if spans:
            return _proposal(text, spans, "contained")
        spans = self._inside_text(text)
        if spans and _covered(spans) >= CONTAINED * len(text):
            return _proposal(text, spans, "contained")
        spans = self._fuzzy(text)
        return _proposal(text, spans, "fuzzy") if spans else Anchor((), (), 0.0, "none")

    def _inside_corpus(self, text: str) -> list[Span]:
        """Step 1: every occurrence of the old text in the joined corpus, as the chunks it overlaps."""
        spans = []
        at = self.joined.find(text)
        while at >= 0:
            first = bisect.bisect_right(self.starts, at) - 1
            index = first
            while index < len(self.ids) and self.starts[index] < at + len(text):
                start = max(self.starts[index], at) - at
                end = min(self.starts[index] + len(self.texts[index]), at + len(text)) - at
                if end > start:
                    spans.append(Span(self.ids[index], start, end))
                index += 1
            at = self.joined.find(text, at + 1)
        return [span for span in spans if span.end - span.start >= PIECE * len(text)]

    def _inside_text(self, text: str) -> list[Span]:
        """Step 2: every chunk of at least PIECE of the old text found inside it, at each place."""
        spans = []
        least = PIECE * len(text)
        for chunk_id, piece in zip(self.ids, self.texts, strict=True):
            if not piece or len(piece) < least or len(piece) > len(text):
                continue
            at = text.find(piece)
            while at >= 0:
                spans.append(Span(chunk_id, at, at + len(piece)))
                at = text.find(piece, at + 1)
        return spans

    def _fuzzy(self, text: str) -> list[Span]:
        """Step 3: chunks whose best alignment with the old text scores FUZZY or more, among those that
        share SHARED of the shorter text's trigrams (the others cannot score near FUZZY)."""
        spans = []
        for index in self._sharing(text):
            aligned = _aligned(text, self.texts[index])
            if aligned is None or aligned.end - aligned.start < PIECE * len(text):
                continue
            spans.append(Span(self.ids[index], aligned.start, aligned.end, round(aligned.score, 1)))
        return spans

    def _sharing(self, text: str) -> list[int]:
        """The chunks, by position, that share at least SHARED of the shorter side's distinct trigrams."""
        if self._grams is None:
            self._grams = {}
            self._sizes = []
            for index, piece in enumerate(self.texts):
                grams = _trigrams(piece)
                self._sizes.append(len(grams))
                for gram in grams:
                    self._grams.setdefault(gram, []).append(index)
        wanted = _trigrams(text)
        shared: dict[int, int] = {}
        for gram in wanted:
            for index in self._grams.get(gram, ()):
                shared[index] = shared.get(index, 0) + 1
        return sorted(index for index, count in shared.items()
                      if count >= SHARED * min(len(wanted), self._sizes[index]))


def _aligned(text: str, piece: str) -> Span | None:
    """The part of `text` that the best alignment of the shorter of the two in the longer covers, scoring
    FUZZY or more; None below. Up to LONG characters, rapidfuzz's `partial_ratio_alignment`; above, the
    longest common subsequence's runs of BLOCK or more characters place the shorter text in the longer,
    and the Indel ratio of the shorter with that window scores it."""
    from rapidfuzz import fuzz
    from rapidfuzz.distance import Indel

    if min(len(text), len(piece)) <= LONG:
        found = fuzz.partial_ratio_alignment(text, piece, score_cutoff=FUZZY)
        return None if found is None else Span("", found.src_start, found.src_end, found.score)
    runs = [op for op in Indel.opcodes(text, piece) if op.tag == "equal" and op.src_end - op.src_start >= BLOCK]
    if not runs:
        return None
    first, last = runs[0], runs[-1]
    if len(piece) <= len(text):
        start = max(0, first.src_start - first.dest_start)
        end = min(len(text), last.src_end + len(piece) - last.dest_end)
        score = Indel.normalized_similarity(text[start:end], piece) * 100
    else:
        window = piece[max(0, first.dest_start - first.src_start):last.dest_end + len(text) - last.src_end]
        start, end, score = 0, len(text), Indel.normalized_similarity(text, window) * 100
    return Span("", start, end, score) if score >= FUZZY else None


def _trigrams(text: str) -> set[str]:
    """The distinct 3-character substrings (the text itself when shorter)."""
    return {text[i:i + 3] for i in range(max(1, len(text) - 2))} if text else set()


def _covered(spans: Sequence[Span]) -> int:
    """How many characters of the old text the spans cover together."""
    total, reach = 0, 0
    for span in sorted(spans, key=lambda s: (s.start, s.end)):
        if span.end > reach:
            total += span.end - max(span.start, reach)
            reach = span.end
    return total


def _overlap(a: Span, b: Span) -> int:
    return max(0, min(a.end, b.end) - max(a.start, b.start))


def _proposal(text: str, spans: Sequence[Span], how: str) -> Anchor:
    """The candidates as one proposal: the best first; one that overlaps a kept one by more than half the
    shorter is a second place (ambiguous) when its score is within GAP, noise (dropped) otherwise."""
    kept: list[Span] = []
    places: list[Span] = []
    for span in sorted(spans, key=lambda s: (-s.score, -(s.end - s.start), s.start, s.chunk)):
        rival = next((k for k in kept if k.chunk != span.chunk
                      and 2 * _overlap(k, span) > min(k.end - k.start, span.end - span.start)), None)
        if rival is None:
            kept.append(span)
        elif rival.score - span.score < GAP:
            places.append(span)
    chosen = kept + places
    order: dict[str, int] = {}
    for span in sorted(chosen, key=lambda s: (s.start, s.chunk)):
        order.setdefault(span.chunk, len(order))
    ids = tuple(sorted(order, key=order.__getitem__))
    shares = tuple(_covered([s for s in chosen if s.chunk == cid]) / len(text) for cid in ids)
    covered = _covered(chosen) / len(text)
    score = min(span.score for span in chosen)
    reasons = []
    if places:
        reasons.append(f"the old text is found in {len(places) + 1} places")
    if how == "fuzzy" and score < CERTAIN:
        reasons.append(f"a fuzzy score below {CERTAIN:.0f}")
    if how == "fuzzy" and covered < CONTAINED:
        reasons.append(f"less than {CONTAINED:.0%} of the old text found")
    return Anchor(ids, shares, covered, how, "; ".join(reasons), score)
