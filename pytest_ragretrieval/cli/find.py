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
from .common import FAILED, PROG, Result, UsageError, fold, preview


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    find = commands.add_parser(
        "find", parents=[common], help="list chunks whose text contains KEYWORD (for labelling)",
        description="Print `id<TAB>first 40 characters` of every chunk containing KEYWORD, in corpus order. "
        "ASCII letters match either case; other characters (CJK, full-width) must match exactly.",
    )
    find.add_argument("keyword", metavar="KEYWORD")


def run(args: argparse.Namespace) -> Result:
    return run_find(load_config(args.config, Path.cwd()), args.keyword)


def matching(chunks: Sequence[Chunk], keyword: str) -> list[Chunk]:
    """Chunks containing `keyword`, in corpus order; ASCII letters match either case."""
    wanted = fold(keyword)
    return [chunk for chunk in chunks if wanted in fold(chunk.text)]


def run_find(config: Config, keyword: str) -> Result:
    if not keyword.strip():
        raise UsageError("KEYWORD must not be empty")
    path = config.chunks_file(f"{PROG} find")
    hits = matching(load_chunks(path), keyword)
    if not hits:
        return Result(err=[f"{PROG}: no chunk contains {keyword!r} in {display(path)}"], code=FAILED)
    return Result(out=[f"{chunk.id}\t{preview(chunk.text)}" for chunk in hits])
