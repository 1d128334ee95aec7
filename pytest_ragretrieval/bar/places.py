"""A chunker change judged (the Verdicts page, "A chunker change"): the approved rankings at the places their
chunks were recorded at, today's rankings at today's, both scored by the gold spans.

A format-5 baseline keeps, for every chunk of a recorded or approved ranking, its document, start, end and
the document's digest (`fingerprint.chunks.places`). Across a change of `[chunker]` a chunk id names another
stretch of text, so chunk-id metrics compare nothing but on the questions whose approved top-k chunks keep
their exact places; the span metrics compare the two chunkings on every question asked alike with the same
gold spans, each ranking at its own chunking's places. Pure: fingerprints and places in, places and question
ids out.
"""
from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..baseline.fingerprint import recorded_places
from ..baseline.since import Since
from ..baseline.since import asked_alike as same_query
from ..core.values import listed
from ..evalset.records import Span
from .exam import Exam

LISTED = 10
"""Questions named in the header's line; the rest are counted."""


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

    def kept(self, ids: Collection[str]) -> bool:
        """Every chunk of `ids` sits today where it was recorded."""
        return all(cid in self.places and self.today.get(cid) == self.places[cid] for cid in ids)

    def on(self, spans: bool, approved: Mapping[str, Sequence[str]], k: int) -> frozenset[str]:
        """The questions a metric compares: a span metric (`spans`) those asked alike with the same gold spans;
        a chunk-id metric the comparable ones (gold unchanged) whose approved top k keeps its exact places,
        where a chunk id still means what the bar ranked."""
        if spans:
            return self.asked
        return frozenset(qid for qid in self.comparable if self.kept(approved.get(qid, ())[:k]))

    def since(self, found: Since, approved: Mapping[str, Mapping[str, Sequence[str]]], k: int) -> Since:
        """`found` as the header says it across this change: a question asked alike with the same gold spans is
        no edited one (its labels moved with the chunks), no gold text is to review, and one line per retriever
        (`approved`: its approved rankings) says on which questions each kind of metric compares."""
        edited = tuple((qid, why) for qid, why in found.questions.edited if qid not in self.asked)
        lines = []
        for name, rankings in approved.items():
            chunk = self.on(False, rankings, k)
            left = sorted(self.asked - chunk)
            spans = len(self.asked & set(rankings))
            shown = f" ({listed(left, limit=LISTED)})" if left else ""
            lines.append(f"{name} across the chunker change ({'; '.join(self.changes)}): span metrics compared on "
                         f"{spans} question{'s' if spans != 1 else ''}, the approved rankings at their recorded "
                         f"places, today's at today's; chunk-id metrics on the {len(chunk)} whose approved top k "
                         f"kept its places, not comparable on {len(left)}{shown}")
        return replace(found, questions=replace(found.questions, edited=edited), labels="", rechunk="\n".join(lines))


def rechunk(found: Since, old: Mapping[str, Any], new: Mapping[str, Any], today: Mapping[str, Span] | None,
            ) -> Rechunk | None:
    """The chunker change between the baseline's fingerprint `old` (the base revision's in a pull request's CI)
    and today's `new`, at `today`'s places; None without one, or where `old` keeps no places (format 4)."""
    recorded = recorded_places(old)
    if not found.chunker or not recorded or today is None:
        return None
    if _documents(old) == _documents(new):
        places = {cid: span for cid, (span, _) in recorded.items()}
    else:  # an edited document's recorded places are not today's text: its chunks have none
        digests = {span.doc: digest for span, digest in recorded_places(new).values()}
        places = {cid: span for cid, (span, digest) in recorded.items() if digests.get(span.doc) == digest}
    return Rechunk(tuple(map(str, found.chunker)), places, today, asked_alike(old, new), found.questions.comparable)


def asked_alike(old: Mapping[str, Any], new: Mapping[str, Any]) -> frozenset[str]:
    """Questions both fingerprints itemize asked as before and with the same gold spans."""
    then, now = Exam.of_baseline(old, "the base's exam"), Exam.of_baseline(new, "the head's exam")
    return frozenset(qid for qid in same_query(old, new) if _spans(then, qid) == _spans(now, qid))


def _spans(exam: Exam | None, qid: str) -> list[tuple[str, int, int, int]]:
    if exam is None or qid not in exam:
        return []
    return sorted((span.doc, span.start, span.end, span.grade) for span in exam[qid].spans)
