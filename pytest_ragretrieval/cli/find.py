"""`ragretrieval find KEYWORD`: the tutorial's `find_ids`, for labelling."""
from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..config.settings import Config, load_config
from ..evalset.jsonl import load_chunks
from ..evalset.records import Chunk
from ..files.paths import display
from .common import FAILED, ONE_LINE, PROG, Result, UsageError, fold

CONTEXT = 20
"""Characters shown either side of a match."""
MATCHES = 3
"""Matches shown per chunk; the rest are counted."""


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    find = commands.add_parser(
        "find", parents=[common], help="list chunks whose text contains KEYWORD (for labelling)",
        description="Print `id<TAB>each match in context` (the match with up to 20 characters either side, "
        "... where the text goes on; at most 3 matches a chunk) for every chunk containing KEYWORD, in corpus "
        "order. ASCII letters match either case; other characters (CJK, full-width) must match exactly.",
    )
    find.add_argument("keyword", metavar="KEYWORD")


def run(args: argparse.Namespace) -> Result:
    return run_find(load_config(args.config, Path.cwd()), args.keyword)


def matching(chunks: Sequence[Chunk], keyword: str) -> list[Chunk]:
    """Chunks containing `keyword`, in corpus order; ASCII letters match either case."""
    wanted = fold(keyword)
    return [chunk for chunk in chunks if wanted in fold(chunk.text)]


def in_context(text: str, keyword: str, around: int = CONTEXT, most: int = MATCHES) -> str:
    """Each match of `keyword` with `around` characters either side, on one line: a chunk that opens
    with its heading shows where the keyword is, not the heading. Overlapping windows are joined."""
    folded, wanted = fold(text), fold(keyword)
    windows: list[tuple[int, int]] = []
    start = folded.find(wanted)
    while start >= 0:
        window = (max(0, start - around), min(len(text), start + len(wanted) + around))
        if windows and window[0] <= windows[-1][1]:
            windows[-1] = (windows[-1][0], window[1])
        else:
            windows.append(window)
        start = folded.find(wanted, start + len(wanted))
    shown = [("..." if begin else "") + text[begin:end] + ("..." if end < len(text) else "")
             for begin, end in windows[:most]]
    more = f" (+{len(windows) - most} more)" if len(windows) > most else ""
    return " ".join(shown).translate(ONE_LINE) + more


def run_find(config: Config, keyword: str) -> Result:
    if not keyword.strip():
        raise UsageError("KEYWORD must not be empty")
    path = config.chunks_file(f"{PROG} find")
    hits = matching(load_chunks(path), keyword)
    if not hits:
        return Result(err=[f"{PROG}: no chunk contains {keyword!r} in {display(path)}"], code=FAILED)
    return Result(out=[f"{chunk.id}\t{in_context(chunk.text, keyword)}" for chunk in hits])
