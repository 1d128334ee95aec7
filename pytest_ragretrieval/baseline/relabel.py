"""Re-anchoring: gold ids that left the corpus moved to the chunks that hold their recorded text.

When a re-chunking removes a labelled id, the eval set cannot load. Instead of stopping with
"unknown chunk id", the gate finds, for each such label, where the text the baseline recorded
for it went (`anchor.py`) and fails with the proposal and the command that applies it;
`ragretrieval relabel` prints the eval set's changes as a diff and `--apply` writes them. Only
ids absent from the corpus move; a label's grade goes to every chunk it moves to (the higher
grade wins where the question already grades one); a grade-0 judgment of a chunk that is gone
is dropped (no text is recorded for it). `relevant_text` snippets are not ids: they follow their
text by themselves.
"""
from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import FixtureError
from ..evalset.jsonl import records
from ..evalset.records import Chunk
from ..paths import display
from .anchor import Anchor, Matcher


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

    @property
    def chunks(self) -> tuple[str, ...]:
        return self.anchor.chunks if self.anchor is not None else ()

    @property
    def lost(self) -> bool:
        """Nowhere to go, and no judgment to drop: only a person can relabel it."""
        return self.grade > 0 and not self.chunks

    @property
    def ambiguous(self) -> bool:
        return self.anchor is not None and bool(self.anchor.ambiguous)

    def __str__(self) -> str:
        head = f"{self.question}: {self.old} -> "
        if self.grade == 0 and not self.chunks:
            return head + "(dropped: a grade-0 judgment of a chunk no longer in the corpus)"
        if self.anchor is None:
            return head + f"? (the baseline records no text for it; label it by hand at {self.where})"
        if not self.chunks:
            return head + f"? ({self.anchor}; label it by hand at {self.where})"
        return head + f"{', '.join(self.chunks)} ({self.anchor})"


@dataclass(frozen=True)
class Plan:
    """Every label of the eval set at `path` whose chunk id the corpus no longer holds."""

    path: Path
    moves: tuple[Move, ...]

    @property
    def ambiguous(self) -> tuple[Move, ...]:
        return tuple(move for move in self.moves if move.ambiguous)

    @property
    def lost(self) -> tuple[Move, ...]:
        return tuple(move for move in self.moves if move.lost)

    def lines(self, command: str) -> list[str]:
        """The proposal block, as the gate fails with it and `relabel` prints it."""
        count = len(self.moves)
        lines = [f"{display(self.path)}: {count} gold label{'s' if count != 1 else ''} name{'s' if count == 1 else ''} "
                 "a chunk id no longer in the corpus; where the text the baseline recorded for "
                 f"{'it' if count == 1 else 'them'} went:"]
        lines += [f"  {move}" for move in self.moves]
        if self.lost:
            lines.append(f"label {', '.join(sorted({m.question for m in self.lost}))} by hand first, then run "
                         f"`{command}` to see the rest")
        elif self.ambiguous:
            lines.append(f"check the ambiguous ones, then apply it with `{command} --apply --accept-ambiguous` "
                         f"(see the diff with `{command}`)")
        else:
            lines.append(f"apply it with `{command} --apply` (see the diff with `{command}`)")
        return lines


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


def plan(path: Path, chunks: Sequence[Chunk], recorded: Mapping[str, str]) -> Plan:
    """Where every absent gold id of the eval set at `path` went, in file order."""
    known = {chunk.id for chunk in chunks}
    matcher = Matcher(chunks)
    found: dict[str, Anchor] = {}
    moves = []
    for where, record in records(path):
        qid = str(record.get("id", ""))
        for old, grade in _labels(record.get("relevant", [])):
            if old in known:
                continue
            anchor = None
            if grade > 0 and old in recorded:
                if old not in found:
                    found[old] = matcher.anchor(recorded[old])
                anchor = found[old]
            moves.append(Move(qid, where, old, grade, anchor))
    return Plan(path, tuple(moves))


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
        record["relevant"] = _moved(record["relevant"], moves)
        lines[index] = bom + json.dumps(record, ensure_ascii=False) + line[len(body):]
    return "".join(lines)


def anchoring_error(problem: FixtureError, found: Plan | None, config_path: str | None, why: str) -> FixtureError:
    """What the gate fails with when a gold id is unknown: the proposal, or today's line and why
    there is none (`why`: no baseline, or one that records no gold texts)."""
    if found is None or not found.moves:
        return FixtureError(f"{problem}; {why}, so where it went cannot be found: relabel it by hand")
    return FixtureError("\n".join(found.lines(command(config_path))))
