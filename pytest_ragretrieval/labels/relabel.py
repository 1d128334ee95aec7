"""Re-anchoring: gold ids that left the corpus moved to the chunks that hold their recorded text.

When a re-chunking removes a labelled id, the eval set cannot load. Instead of stopping with
"unknown chunk id", the gate finds, for each such label, where the text the baseline recorded
for it went (`anchor.py`) and fails with the proposal and the command that applies it;
`ragretrieval relabel` prints the eval set's changes as a diff and `--apply` writes them. Ids
absent from the corpus move, and so does a gold id the corpus still holds whose recorded text is
no longer in it and was found elsewhere (a chunker numbering per document gave the id to other
text); one whose text was only edited in place stays (the gate names it for review). A label's
grade goes to every chunk it moves to (the higher grade wins where the question already grades
one); a grade-0 judgment of a chunk that is gone, in `relevant` or in `not_relevant`, is dropped
(no text is recorded for it), and a machine label's provenance follows its judgment. A
`relevant_text` snippet follows its text by itself, unless no chunk holds it whole any more (a cut
through it): it is then looked for as any old text is, and its label becomes the ids of the chunks
holding it, graded 1 as the snippet graded them.

A recorded gold text is checked against the baseline's digest of its chunk
(`fingerprint.chunks.digests`, which covers the text with the chunk's document and metadata): a
text that no document and metadata of the chunks it went to give that digest for is not the text
recorded (an edited baseline), or the chunk's document or metadata changed too; the move is then
ambiguous, and says why.
"""
from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..baseline.fingerprint import chunk_record
from ..baseline.format import Baseline
from ..config.settings import Config
from ..core.errors import FixtureError
from ..core.values import LISTED, listed
from ..evalset.jsonl import records
from ..evalset.records import Chunk
from ..files.paths import display
from .anchor import Anchor, Matcher, squeezed
from .gold import recorded_gold


@dataclass(frozen=True)
class Move:
    """One label whose chunk id is no longer in the corpus, and where it goes."""

    question: str
    where: str
    """`file:line` of the question."""
    old: str
    grade: int
    anchor: Anchor | None
    """None: nothing recorded to look for (no text recorded for the id, or a grade-0 judgment)."""
    snippet: bool = False
    """`old` is a `relevant_text` snippet that no chunk holds whole, not a chunk id."""
    rejected: bool = False
    """`old` is listed in `not_relevant` (a grade-0 judgment), not in `relevant`."""
    kept: bool = False
    """The corpus still holds `old`, but not the text recorded for it."""
    unverified: bool = False
    """The recorded text of `old` does not match the baseline's digest of that chunk (see the module)."""

    @property
    def chunks(self) -> tuple[str, ...]:
        return self.anchor.chunks if self.anchor is not None else ()

    @property
    def dropped(self) -> bool:
        """A grade-0 judgment of a chunk that is gone: removed, since no text is recorded for it."""
        return self.grade == 0 and not self.chunks

    @property
    def lost(self) -> bool:
        """Nowhere to go, and no judgment to drop: only a person can relabel it."""
        return self.grade > 0 and not self.chunks

    @property
    def ambiguous(self) -> bool:
        return self.anchor is not None and (bool(self.anchor.ambiguous) or self.unverified)

    def __str__(self) -> str:
        shown = self.old if len(self.old) <= SHOWN else self.old[: SHOWN - 1] + "…"
        name = (f"relevant_text {shown!r}" if self.snippet else f"{self.old} (in not_relevant)" if self.rejected
                else f"{self.old} (its recorded text is no longer in it)" if self.kept else self.old)
        head = f"{self.question}: {name} -> "
        if self.dropped:
            return head + "(dropped: a grade-0 judgment of a chunk no longer in the corpus)"
        if self.anchor is None:
            return head + f"? (the baseline records no text for it; label it by hand at {self.where})"
        if not self.chunks:
            return head + f"? ({self.anchor}; label it by hand at {self.where})"
        why = str(self.anchor)
        if self.unverified:
            why += ("; " if self.anchor.ambiguous else "; ambiguous: ") + (
                f"the baseline's text of {self.old} is not the one its digest fingerprint.chunks.digests.{self.old} "
                "was recorded from with the document and metadata of any chunk it went to (the baseline was "
                "edited, or so were those)")
        return head + f"{listed(self.chunks)} ({why})"


@dataclass(frozen=True)
class Plan:
    """Every label of the eval set at `path` that names nothing in the corpus: a chunk id it no longer
    holds, a snippet no chunk holds whole."""

    path: Path
    moves: tuple[Move, ...]

    @property
    def ambiguous(self) -> tuple[Move, ...]:
        return tuple(move for move in self.moves if move.ambiguous)

    @property
    def lost(self) -> tuple[Move, ...]:
        return tuple(move for move in self.moves if move.lost)

    def lines(self, command: str, limit: int | None = None) -> list[str]:
        """The proposal block, as the gate fails with it (its first `limit` moves, then how many more) and
        `relabel` prints it (every move: its diff shows them all anyway)."""
        count = len(self.moves)
        lines = [f"{display(self.path)}: {count} gold label{'s' if count != 1 else ''} name{'s' if count == 1 else ''} "
                 f"what the corpus no longer holds; where {'its' if count == 1 else 'their'} text went:"]
        shown = self.moves if limit is None else self.moves[:limit]
        lines += [f"  {move}" for move in shown]
        if len(shown) < count:
            lines.append(f"  ... and {count - len(shown):,} more: `{command}` lists them all")
        if self.lost:
            lines.append(f"label {listed(sorted({m.question for m in self.lost}))} by hand first, then run "
                         f"`{command}` to see the rest")
        elif self.ambiguous:
            lines.append(f"check the ambiguous ones, then apply it with `{command} --apply --accept-ambiguous` "
                         f"(see the diff with `{command}`)")
        else:
            lines.append(f"apply it with `{command} --apply` (see the diff with `{command}`)")
        return lines


SHOWN = 24
"""Characters of a snippet shown in a proposal."""


def command(config_path: str | None) -> str:
    """The `ragretrieval relabel` command line for the settings this run read."""
    return "ragretrieval relabel" + (f" --config {shlex.quote(config_path)}" if config_path else "")


def _labels(value: Any) -> list[tuple[str, int]]:
    """(chunk id, grade) of a `relevant` value as the loader reads it; what it refuses is left to it."""
    if isinstance(value, list):
        return [(cid, 1) for cid in value if isinstance(cid, str)]
    if isinstance(value, dict):
        return [(cid, grade) for cid, grade in value.items()
                if isinstance(grade, int) and not isinstance(grade, bool)]
    return []


def plan(path: Path, chunks: Sequence[Chunk], recorded: Mapping[str, str], digests: Mapping[str, Any] | None = None,
         data: bytes | None = None) -> Plan:
    """Where every absent gold id of the eval set at `path` (its bytes `data` when given: what `--apply`
    rewrites) went, and every gold id whose recorded text left it, in file order; `digests` are the
    baseline's per-chunk digests the recorded texts are checked against."""
    known = {chunk.id: chunk for chunk in chunks}
    today = {chunk.id: squeezed(chunk.text) for chunk in chunks}
    by_doc = _by_doc(chunks)
    matcher = Matcher(chunks)
    found: dict[str, Anchor] = {}
    checked: dict[str, bool] = {}
    moves = []
    for where, record in records(path, data):
        qid = str(record.get("id", ""))
        for old, grade in _labels(record.get("relevant", [])):
            kept = old in known
            if kept and (grade == 0 or old not in recorded or squeezed(recorded[old]) in today[old]):
                continue
            anchor = None
            if grade > 0 and old in recorded:
                if old not in found:
                    found[old] = matcher.anchor(recorded[old])
                anchor = found[old]
            if kept and (anchor is None or anchor.chunks in ((), (old,))):
                continue  # edited in place, or found nowhere: the label stays, and the gate names it for review
            if anchor is not None and anchor.chunks and old not in checked:
                checked[old] = _verified(old, recorded[old], anchor, known, by_doc, digests or {})
            moves.append(Move(qid, where, old, grade, anchor, kept=kept, unverified=not checked.get(old, True)))
        rejected = record.get("not_relevant", [])
        for old in rejected if isinstance(rejected, list) else []:
            if isinstance(old, str) and old not in known:
                moves.append(Move(qid, where, old, 0, None, rejected=True))
        snippets = record.get("relevant_text", [])
        for snippet in snippets if isinstance(snippets, list) else []:
            if isinstance(snippet, str) and snippet.strip() and not any(snippet in c.text for c in chunks):
                moves.append(Move(qid, where, snippet, 1, matcher.anchor(snippet), snippet=True))
    return Plan(path, tuple(moves))


def unit_map(chunks: Sequence[Chunk], recorded: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    """The mapping a relabel applies after a re-chunk: every gold id the baseline recorded a text for whose
    text its id no longer holds (gone, or given to other text) -> the chunks that text went to, the one
    holding most of it first (ties in the text's order); ids found nowhere are left out."""
    known = {chunk.id: chunk.text for chunk in chunks}
    matcher: Matcher | None = None  # built only when a gold text left its id
    found: dict[str, tuple[str, ...]] = {}
    for old, text in sorted(recorded.items()):
        if old in known and squeezed(text) in squeezed(known[old]):
            continue
        matcher = matcher or Matcher(chunks)
        anchor = matcher.anchor(text)
        if anchor.chunks and anchor.chunks != (old,):
            order = sorted(range(len(anchor.chunks)), key=lambda i: -anchor.shares[i])
            found[old] = tuple(anchor.chunks[i] for i in order)
    return found


def units(config: Config, baseline: Baseline | None, chunks: Sequence[Chunk]) -> dict[str, tuple[str, ...]]:
    """`unit_map` in chunk-id mode (a chunks file, no documents) against `baseline`'s gold texts: what tells
    a lowering that only comes from the changed unit (`bar/units.py`); empty where documents are given (a
    chunker change is judged by places there) or no baseline records gold texts."""
    if config.documents is not None or baseline is None:
        return {}
    return unit_map(chunks, recorded_gold(baseline) or {})


def _by_doc(chunks: Sequence[Chunk]) -> dict[str | None, list[Chunk]]:
    found: dict[str | None, list[Chunk]] = {}
    for chunk in chunks:
        found.setdefault(chunk.doc, []).append(chunk)
    return found


def _verified(old: str, text: str, anchor: Anchor, known: Mapping[str, Chunk],
              by_doc: Mapping[str | None, Sequence[Chunk]], digests: Mapping[str, Any]) -> bool:
    """Whether `text`, the baseline's record of chunk `old`, gives the baseline's digest of `old` with the
    document and metadata of some chunk of the documents it went to (or of `old` itself, still in the
    corpus); True when the baseline holds no digest of `old` (a corpus too large to itemize)."""
    wanted = digests.get(old)
    if wanted is None:
        return True
    docs = {known[cid].doc for cid in anchor.chunks if cid in known} | ({known[old].doc} if old in known else set())
    seen: set[str] = set()
    for chunk in (chunk for doc in docs for chunk in by_doc.get(doc, ())):
        key = json.dumps([chunk.doc, dict(chunk.metadata)], sort_keys=True, ensure_ascii=False)
        if key not in seen:
            seen.add(key)
            if chunk_record(Chunk(old, text, chunk.doc, chunk.metadata)) == wanted:
                return True
    return False


def _moved(value: Any, moves: Sequence[Move]) -> Any:
    """A `relevant` value with each move applied, in place: the list form stays a list, the object
    form an object in its order; a chunk named twice keeps its first place and its highest grade."""
    by_id = {move.old: move for move in moves}
    pairs: list[tuple[str, int]] = []
    for cid, grade in _labels(value):
        move = by_id.get(cid)
        pairs += [(cid, grade)] if move is None else [(new, grade) for new in move.chunks]
    merged: dict[str, int] = {}
    for cid, grade in pairs:
        merged[cid] = max(grade, merged.get(cid, grade))
    return list(merged) if isinstance(value, list) else merged


def _unsnipped(record: dict[str, Any], moves: Sequence[Move]) -> None:
    """Snippets no chunk holds whole any more, turned into their chunks' ids graded 1 (an id already
    graded keeps the higher grade); `relevant_text` is removed when no snippet is left in it."""
    gone = {move.old for move in moves}
    left = [snippet for snippet in record["relevant_text"] if snippet not in gone]
    if left:
        record["relevant_text"] = left
    else:
        del record["relevant_text"]
    added = [cid for move in moves for cid in move.chunks]
    value = record.get("relevant", [])
    if isinstance(value, list):
        record["relevant"] = list(dict.fromkeys([*value, *added]))
        return
    merged = dict(value)
    for cid in added:
        merged[cid] = max(1, merged.get(cid, 1))
    record["relevant"] = merged


def _unrejected(record: dict[str, Any], moves: Sequence[Move]) -> None:
    """`not_relevant` without the chunks that are gone; removed when none is left."""
    gone = {move.old for move in moves}
    left = [cid for cid in record["not_relevant"] if cid not in gone]
    if left:
        record["not_relevant"] = left
    else:
        del record["not_relevant"]


def _provenance(record: dict[str, Any], before: Any, moves: Sequence[Move]) -> None:
    """`machine_labels` following their judgments: a moved label's provenance goes to each chunk it moved to
    (unless a person's judgment of that chunk was already on the line), a dropped one's is removed."""
    labels = record["machine_labels"]
    moved = {move.old: move.chunks for move in moves if not move.snippet}
    people = {cid for cid, _ in _labels(before)} - set(labels)
    found: dict[str, Any] = {}
    for cid, provenance in labels.items():
        for new in moved.get(cid, (cid,)):
            if new not in people:
                found.setdefault(new, provenance)
    if found:
        record["machine_labels"] = found
    else:
        del record["machine_labels"]


def rewritten(text: str, found: Plan) -> str:
    """The eval set's text with the plan applied; lines without a move are kept byte for byte."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
    by_line: dict[int, list[Move]] = {}
    for move in found.moves:
        if move.lost:
            continue
        by_line.setdefault(int(move.where.rpartition(":")[2]) - 1, []).append(move)
    for index, moves in by_line.items():
        line = lines[index]
        body = line.removesuffix("\n").removesuffix("\r")
        bom = "\ufeff" if index == 0 and body.startswith("\ufeff") else ""
        record = json.loads(body.removeprefix(bom))
        before = record.get("relevant", [])
        ids = [move for move in moves if not move.snippet and not move.rejected]
        if ids:
            record["relevant"] = _moved(record["relevant"], ids)
        rejected = [move for move in moves if move.rejected]
        if rejected:
            _unrejected(record, rejected)
        cut = [move for move in moves if move.snippet]
        if cut:
            _unsnipped(record, cut)
        if isinstance(record.get("machine_labels"), dict):
            _provenance(record, before, moves)
        lines[index] = bom + json.dumps(record, ensure_ascii=False) + line[len(body):]
    return "".join(lines)


def needs_record(found: Plan) -> Move | None:
    """The first label that is a gold id (graded 1 or more) that left the corpus: only the baseline's record
    of its text can say where it went. None when every move can be made without it."""
    return next((move for move in found.moves if not move.snippet and move.grade > 0), None)


def anchoring_error(problem: FixtureError, found: Plan, recorded: bool, config_path: str | None,
                    why: str) -> FixtureError:
    """What the gate fails with when a label names nothing in the corpus: the proposal; or today's line
    and why there is none (`why`: no baseline, or one that records no gold texts); or today's line
    alone when nothing was found anywhere (a mistyped id or snippet)."""
    if not recorded and needs_record(found):
        return FixtureError(f"{problem}; {why}, so where it went cannot be found: relabel it by hand")
    if not any(move.chunks or move.dropped for move in found.moves):
        return problem
    return FixtureError("\n".join(found.lines(command(config_path), LISTED)))
