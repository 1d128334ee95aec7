"""Documents mode's corpus and eval set in one call: the documents read, cut by the chunker (and by each
named chunking), and the eval set read against them. The gate and `ragretrieval merge` load them alike, so
a merged run is the session's.

Chunkings side by side: a named chunking's chunk ids are `<doc>#<name>#<n>` (a document id holds no '#',
so they never meet the default's `<doc>#<n>`), and the session's corpus is every chunking's chunks
together. The labels rule (evalset/gold_text.py) judges each chunk on its own, so one pass over them all
labels each chunking as alone; `chunking_share` then gives a chunking's retrievers its chunks and its labels.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from .chunkers import Chunker, chunk_documents
from .documents import load_documents
from .jsonl import load_evalset
from .records import Chunk, Question


def documents_corpus(
    documents: Path, chunker: Chunker, root: Path, evalset: Path, named: Mapping[str, Chunker] | None = None,
) -> tuple[tuple[Chunk, ...], tuple[Question, ...]]:
    """The chunks cut from `documents` by `chunker` and by each of `named` (`[chunkings.NAME]`), and the
    questions of `evalset`, gold placed in the documents and labelled in every chunking."""
    found = load_documents(documents)
    chunks = list(chunk_documents(found, chunker, root))
    for name, other in (named or {}).items():
        chunks.extend(replace(chunk, id=f"{chunk.doc}#{name}#{chunk.id.rpartition('#')[2]}")
                      for chunk in chunk_documents(found, other, root))
    return tuple(chunks), load_evalset(evalset, chunks, documents=found)


def chunking_of(chunk_id: str) -> str:
    """The chunking a chunk id belongs to: "" (the default) for `<doc>#<n>`, NAME for `<doc>#NAME#<n>`."""
    parts = chunk_id.split("#")
    return parts[1] if len(parts) == 3 else ""


def chunking_share(
    name: str, chunks: Sequence[Chunk], questions: Sequence[Question],
) -> tuple[tuple[Chunk, ...], tuple[Question, ...]]:
    """The chunks of chunking `name` and each question's labels in it: what its retrievers read and are
    scored by (the gold spans are shared)."""
    def mine(chunk_id: str) -> bool:
        return chunking_of(chunk_id) == name

    return (tuple(chunk for chunk in chunks if mine(chunk.id)),
            tuple(replace(q, relevance={cid: grade for cid, grade in q.relevance.items() if mine(cid)},
                          snippet_ids=frozenset(filter(mine, q.snippet_ids)),
                          machine_labels=frozenset(filter(mine, q.machine_labels))) for q in questions))
