"""A chunker change judged (the Verdicts page, "A chunker change"): the approved rankings at the places their
chunks were recorded at, today's rankings at today's, both scored by the gold spans.

A format-5 baseline keeps, for every chunk of a recorded or approved ranking, its document, start, end and
the document's digest (`fingerprint.chunks.places`). Across a change of `[chunker]` a chunk id names another
stretch of text, so chunk-id metrics compare nothing but on the questions whose approved top-k chunks keep
their exact places; the span metrics compare the two chunkings on every question asked alike with the same
gold spans, each ranking at its own chunking's places. A document edited since is mapped through its diff
(`carried`): a recorded place or gold span whose both ends fall in text the edit kept moves with it. Pure:
fingerprints, places and texts in, places and question ids out.
"""
from __future__ import annotations

import bisect
import itertools
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from difflib import SequenceMatcher
from typing import Any

from ..baseline.fingerprint import recorded_places
from ..baseline.since import Since
from ..baseline.since import asked_alike as same_query
from ..core.values import listed
from ..evalset.records import Span
from .exam import Exam

LISTED = 10
"""Questions named in the header's line; the rest are counted."""

Edit = tuple[tuple[int, int, int], ...]
"""One document's edit: the runs of text it kept, (old start, new start, length), in order, and last the two
texts' lengths with length 0."""


CHARACTERS = 10_000_000
"""The largest product of two changed stretches' lengths diffed character by character (difflib's matcher is
quadratic: about 0.05 s here); a larger changed stretch keeps no run, its places lost."""


def edit(old: str, new: str) -> Edit:
    """The runs of `old` that `new` keeps: the common head and tail, then a diff by lines of what is between, and
    by characters inside each changed block of lines (difflib, no junk heuristic)."""
    runs: list[tuple[int, int, int]] = []
    _stretch(old, new, (0, len(old), 0, len(new)), runs, lines=True)
    return (*runs, (len(old), len(new), 0))


def _stretch(old: str, new: str, where: tuple[int, int, int, int], runs: list[tuple[int, int, int]],
             lines: bool) -> None:
    """The runs of `old[o1:o2]` kept in `new[n1:n2]`, appended in order."""
    o1, o2, n1, n2 = where
    head = _common(old[o1:o2], new[n1:n2])
    if head:
        runs.append((o1, n1, head))
    o1, n1 = o1 + head, n1 + head
    tail = _common(old[o1:o2][::-1], new[n1:n2][::-1])
    o2, n2 = o2 - tail, n2 - tail
    if o1 < o2 and n1 < n2:
        if lines:
            _lines(old, new, (o1, o2, n1, n2), runs)
        elif (o2 - o1) * (n2 - n1) <= CHARACTERS:
            blocks = SequenceMatcher(None, old[o1:o2], new[n1:n2], autojunk=False).get_matching_blocks()
            runs.extend((a + o1, b + n1, n) for a, b, n in blocks if n)
    if tail:
        runs.append((o2, n2, tail))


def _lines(old: str, new: str, where: tuple[int, int, int, int], runs: list[tuple[int, int, int]]) -> None:
    """`old[o1:o2]` against `new[n1:n2]` line by line; each replaced block of lines by characters."""
    o1, o2, n1, n2 = where
    before, after = old[o1:o2].splitlines(keepends=True), new[n1:n2].splitlines(keepends=True)
    at = list(itertools.accumulate(map(len, before), initial=o1))
    to = list(itertools.accumulate(map(len, after), initial=n1))
    for tag, a1, a2, b1, b2 in SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag == "equal":
            runs.append((at[a1], to[b1], at[a2] - at[a1]))
        elif tag == "replace":
            _stretch(old, new, (at[a1], at[a2], to[b1], to[b2]), runs, lines=False)


def _common(a: str, b: str) -> int:
    """The length of the longest common prefix of `a` and `b` (slices compared in C, halving)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def edits(before: Mapping[str, str], today: Mapping[str, str]) -> dict[str, Edit]:
    """Each document whose text `before` (the base's, read where the baseline was recorded) differs from today's:
    its edit."""
    return {doc: edit(text, today[doc]) for doc, text in before.items() if doc in today and today[doc] != text}


def carried(span: Span, runs: Edit, whole: bool = False) -> Span | None:
    """`span` moved through its document's edit: where both its ends fall in kept runs (a start inside or at a
    run's start, an end inside or at a run's end), and with `whole` (a gold span) in one run, its text kept;
    else None: the text at an end (or inside) changed. A place that began (ended) its document still does: text
    added before the first kept character (after the last) is the edge chunk's, as a chunker cutting the new
    text gives it."""
    starts = [a for a, _, _ in runs]
    first, last = bisect.bisect_right(starts, span.start) - 1, bisect.bisect_left(starts, span.end) - 1
    if first < 0 or last < 0:
        return None
    (a, b, n), (c, d, m), (size, new_size, _) = runs[first], runs[last], runs[-1]
    if not (a <= span.start < a + n and c < span.end <= c + m) or (whole and first != last):
        return None
    return replace(span, start=0 if span.start == 0 else span.start - a + b,
                   end=new_size if span.end == size else span.end - c + d)


def _documents(fingerprint: Mapping[str, Any]) -> Any:
    chunks = fingerprint.get("chunks")
    return chunks.get("documents", {}).get("sha256") if isinstance(chunks, Mapping) else None


@dataclass(frozen=True)
class Rechunk:
    """What a chunker change leaves comparable: the bar's chunks at their recorded places (those whose document
    is unchanged), today's places, and the questions asked alike with the same gold spans."""

    changes: tuple[str, ...]
    places: Mapping[str, Span] = field(hash=False)
    today: Mapping[str, Span] = field(hash=False)
    asked: frozenset[str]
    """Questions whose query and gold spans both sides share: the span metrics' comparable questions."""
    comparable: frozenset[str] = frozenset()
    """The questions whose query and graded gold both sides share (`Since`)."""
    lost: frozenset[str] = frozenset()
    """The bar's chunks in an edited document whose place the edit did not keep (`carried`), or whose old text
    could not be read: a question whose approved top k holds one leaves the span metrics' comparison."""

    def mapped(self, approved: Mapping[str, Sequence[str]], k: int) -> frozenset[str]:
        """The questions asked alike whose approved top k holds no place lost to an edit."""
        return frozenset(qid for qid in self.asked if not self.lost.intersection(approved.get(qid, ())[:k]))

    def kept(self, ids: Collection[str]) -> bool:
        """Every chunk of `ids` sits today where it was recorded."""
        return all(cid in self.places and self.today.get(cid) == self.places[cid] for cid in ids)

    def on(self, spans: bool, approved: Mapping[str, Sequence[str]], k: int) -> frozenset[str]:
        """The questions a metric compares: a span metric (`spans`) those asked alike with the same gold spans;
        a chunk-id metric the comparable ones (gold unchanged) whose approved top k keeps its exact places,
        where a chunk id still means what the bar ranked."""
        if spans:
            return self.mapped(approved, k)
        return frozenset(qid for qid in self.comparable if self.kept(approved.get(qid, ())[:k]))

    def since(self, found: Since, approved: Mapping[str, Mapping[str, Sequence[str]]], k: int) -> Since:
        """`found` as the header says it across this change: a question asked alike with the same gold spans is
        no edited one (its labels moved with the chunks), no gold text is to review, and one line per retriever
        (`approved`: its approved rankings) says on which questions each kind of metric compares."""
        edited = tuple((qid, why) for qid, why in found.questions.edited if qid not in self.asked)
        lines = []
        for name, rankings in approved.items():
            chunk, mapped = self.on(False, rankings, k), self.mapped(rankings, k)
            left, gone = sorted(mapped - chunk), sorted(self.asked - mapped)
            spans = len(mapped & set(rankings))
            shown = f" ({listed(left, limit=LISTED)})" if left else ""
            moved = (f"; {len(gone)} leave as edited, an approved place in an edited document not carried "
                     f"through its edit ({listed(gone, limit=LISTED)})" if gone else "")
            lines.append(f"{name} across the chunker change ({'; '.join(self.changes)}): span metrics compared on "
                         f"{spans} question{'s' if spans != 1 else ''}, the approved rankings at their recorded "
                         f"places, today's at today's; chunk-id metrics on the {len(chunk)} whose approved top k "
                         f"kept its places, not comparable on {len(left)}{shown}{moved}")
        return replace(found, questions=replace(found.questions, edited=edited), labels="", rechunk="\n".join(lines))


def rechunk(found: Since, old: Mapping[str, Any], new: Mapping[str, Any], today: Mapping[str, Span] | None,
            moved: Mapping[str, Edit] | None = None) -> Rechunk | None:
    """The chunker change between the baseline's fingerprint `old` (the base revision's in a pull request's CI)
    and today's `new`, at `today`'s places; None without one, or where `old` keeps no places (format 4).
    `moved`: each edited document's edit, through which its recorded places are carried."""
    recorded = recorded_places(old)
    if not found.chunker or not recorded or today is None:
        return None
    digests = None if _documents(old) == _documents(new) else {
        span.doc: digest for span, digest in recorded_places(new).values()}
    places, lost = placed(recorded, digests, moved or {})
    return Rechunk(tuple(map(str, found.chunker)), places, today, asked_alike(old, new, moved),
                   found.questions.comparable, lost)


def placed(recorded: Mapping[str, tuple[Span, str]], digests: Mapping[str, str] | None, moved: Mapping[str, Edit],
           ) -> tuple[dict[str, Span], frozenset[str]]:
    """The recorded places as they sit in today's documents (`digests`, each one's short digest today; None:
    none edited), an edited document's carried through its edit (`moved`), and the chunks whose place is lost:
    not carried, or in an edited document whose old text could not be read."""
    places: dict[str, Span] = {}
    lost: set[str] = set()
    for cid, (span, digest) in recorded.items():
        if digests is None or digests.get(span.doc) == digest:
            places[cid] = span
        elif (found := carried(span, moved[span.doc]) if span.doc in moved else None) is not None:
            places[cid] = found
        else:
            lost.add(cid)
    return places, frozenset(lost)


def asked_alike(old: Mapping[str, Any], new: Mapping[str, Any], moved: Mapping[str, Edit] | None = None,
                ) -> frozenset[str]:
    """Questions both fingerprints itemize asked as before and with the same gold spans, the old ones carried
    through their documents' edits (`moved`): a span whose text an edit changed is no longer the same."""
    then, now = Exam.of_baseline(old, "the base's exam"), Exam.of_baseline(new, "the head's exam")
    return frozenset(qid for qid in same_query(old, new) if _spans(then, qid, moved or {}) == _spans(now, qid, {}))


def _spans(exam: Exam | None, qid: str, moved: Mapping[str, Edit]) -> list[tuple[str, int, int, int]] | None:
    if exam is None or qid not in exam:
        return []
    found = [carried(span, moved[span.doc], whole=True) if span.doc in moved else span for span in exam[qid].spans]
    if any(span is None for span in found):
        return None
    return sorted((span.doc, span.start, span.end, span.grade) for span in found if span is not None)
