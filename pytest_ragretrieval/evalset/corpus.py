"""Documents mode's corpus and eval set in one call: the documents read, cut by the chunker, and the eval set
read against both. The gate and `ragretrieval merge` load them alike, so a merged run is the session's."""
from __future__ import annotations

from pathlib import Path

from .chunkers import Chunker, chunk_documents
from .documents import load_documents
from .jsonl import load_evalset
from .records import Chunk, Question


def documents_corpus(
    documents: Path, chunker: Chunker, root: Path, evalset: Path,
) -> tuple[tuple[Chunk, ...], tuple[Question, ...]]:
    """The chunks cut from `documents` and the questions of `evalset`, gold placed in the documents."""
    found = load_documents(documents)
    chunks = chunk_documents(found, chunker, root)
    return chunks, load_evalset(evalset, chunks, documents=found)
