"""Documents mode's corpus and eval set in one call: the documents read, cut by the chunker (and by each
named chunking), and the eval set read against them. The gate and `ragretrieval merge` load them alike, so
a merged run is the session's.

Chunkings side by side: a named chunking's chunk ids are `<doc>#<name>#<n>` (a document id holds no '#',
so they never meet the default's `<doc>#<n>`), and the session's corpus is every chunking's chunks
together. The labels rule (evalset/gold_text.py) judges each chunk on its own, so one pass over them all
labels each chunking as alone; `chunking_share` then gives a chunking's retrievers its chunks and its labels.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from .chunkers import Chunker, chunk_documents
from .documents import Document, documents_digest, load_documents
from .jsonl import load_evalset
from .records import Chunk, Question


def documents_corpus(
    documents: Path, chunker: Chunker, root: Path, evalset: Path, named: Mapping[str, Chunker] | None = None,
    *, recorded: str | None = None,
) -> tuple[tuple[Chunk, ...], tuple[Question, ...]]:
    """The chunks cut from `documents` by `chunker` and by each of `named` (`[chunkings.NAME]`), and the
    questions of `evalset`, gold placed in the documents and labelled in every chunking; `recorded`: the
    documents' digest the baseline recorded (`recorded_digest`), which says whether they are `unedited`."""
    found = load_documents(documents)
    chunks = list(chunk_documents(found, chunker, root))
    for name, other in (named or {}).items():
        chunks.extend(replace(chunk, id=f"{chunk.doc}#{name}#{chunk.id.rpartition('#')[2]}")
                      for chunk in chunk_documents(found, other, root))
    return tuple(chunks), load_evalset(evalset, chunks, documents=found, unedited=unedited(found, recorded))


def unedited(documents: Sequence[Document], recorded: str | None) -> bool:
    """Whether the documents are as the gold's author saw them: no baseline recorded a digest of them (the
    gold is being written against these), or the one it recorded is theirs today. Then a gold span must hold
    its `text` at its offsets; after an edit, its text is found again where it moved."""
    return recorded is None or recorded == documents_digest(documents)


def recorded_digest(fingerprint: Mapping[str, Any] | None) -> str | None:
    """The documents' digest a baseline's fingerprint recorded (`chunks.documents.sha256`), or None."""
    chunks = (fingerprint or {}).get("chunks")
    found = chunks.get("documents") if isinstance(chunks, Mapping) else None
    digest = found.get("sha256") if isinstance(found, Mapping) else None
    return digest if isinstance(digest, str) else None


def budget_warnings(budgets: Iterable[int], chunks: Sequence[Chunk], chunkings: Mapping[str, str]) -> list[str]:
    """One line for each budget (`@<n>c`) that fewer than half of a chunking's chunks fit in: a prompt of
    `n` characters then takes no chunk for most rankings, and its metrics say little. `chunkings`: each
    chunking read (`chunking_of`'s name) and how a line names it."""
    found = []
    for name, label in chunkings.items():
        lengths = sorted(len(chunk.text) for chunk in chunks if chunking_of(chunk.id) == name)
        for budget in sorted(set(budgets)):
            fit = sum(1 for length in lengths if length <= budget)
            if lengths and 2 * fit < len(lengths):
                found.append(f"budget {budget}c: {fit} of {label}'s {len(lengths)} chunks fit in {budget} characters "
                             f"(its median chunk has {lengths[len(lengths) // 2]}), so the budget metrics at "
                             f"{budget}c score little there; raise the budget or cut smaller chunks")
    return found


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
