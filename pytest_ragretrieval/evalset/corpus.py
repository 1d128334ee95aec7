"""Documents mode's corpus and eval set in one call: the documents read, cut by the chunker (and by each
named chunking), and the eval set read against them. The gate and `ragretrieval merge` load them alike, so
a merged run is the session's.

Loading is cached by digest (`cached_corpus`): a run whose documents, eval set, chunkers, code and
recorded digest are those of the run before reads the chunks and the labelled questions back from
`<cache>/corpus/` instead of cutting and labelling again.

Chunkings side by side: a named chunking's chunk ids are `<doc>#<name>#<n>` (a document id holds no '#',
so they never meet the default's `<doc>#<n>`), and the session's corpus is every chunking's chunks
together. The labels rule (evalset/gold_text.py) judges each chunk on its own, so one pass over them all
labels each chunking as alone; `chunking_share` then gives a chunking's retrievers its chunks and its labels.
"""
from __future__ import annotations

import functools
import gc
import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import msgspec

from ..files.paths import write_atomic
from .chunkers import Chunker, chunk_documents
from .documents import SUFFIXES, Document, documents_digest, load_documents
from .jsonl import load_evalset
from .records import Chunk, Question

CacheMode = Literal["readwrite", "readonly", "off"]
VERSION = 1
"""The cached entry's layout; a change is a miss."""


class _Entry(msgspec.Struct):
    key: str
    chunks: tuple[Chunk, ...]
    questions: tuple[Question, ...]


def documents_corpus(
    documents: Path, chunker: Chunker, root: Path, evalset: Path, named: Mapping[str, Chunker] | None = None,
    *, recorded: str | None = None, cache: Path | None = None, mode: CacheMode = "readwrite",
) -> tuple[tuple[Chunk, ...], tuple[Question, ...]]:
    """The chunks cut from `documents` by `chunker` and by each of `named` (`[chunkings.NAME]`), and the
    questions of `evalset`, gold placed in the documents and labelled in every chunking; `recorded`: the
    documents' digest the baseline recorded (`recorded_digest`), which says whether they are `unedited`.
    With a `cache` folder, read back from there when nothing that decides them changed (`cached_corpus`)."""
    def load() -> tuple[tuple[Chunk, ...], tuple[Question, ...]]:
        return _documents_corpus(documents, chunker, root, evalset, named or {}, recorded)

    chunkers = [chunker, *(named or {}).values()]
    if cache is None or mode == "off" or any(c.type == "python" for c in chunkers):
        return load()
    described = [chunker.described(), {name: c.described() for name, c in (named or {}).items()}]
    return cached_corpus(cache, mode, [documents, evalset], [described, recorded], load)


def cached_corpus(
    cache: Path, mode: CacheMode, paths: Sequence[Path], settings: Any,
    load: Callable[[], tuple[tuple[Chunk, ...], tuple[Question, ...]]],
) -> tuple[tuple[Chunk, ...], tuple[Question, ...]]:
    """`load()`, or what it gave the last time the files at `paths` held these bytes, under these `settings`
    (chunkers, recorded digest), this package's evalset code and the Python and rapidfuzz versions: one entry
    per pair of paths under `<cache>/corpus/`, replaced on a miss (never written in `readonly` mode); a
    damaged entry is a miss. A `python` chunker's cuts are never cached (its code is the team's)."""
    try:
        key = _key(paths, settings)
    except OSError:
        return load()  # a file that cannot be read: loading says which, in one line
    name = hashlib.sha256(json.dumps([str(path) for path in paths]).encode()).hexdigest()[:16]
    where = cache / "corpus" / f"{name}.msgpack"
    collecting = gc.isenabled()
    gc.disable()  # tens of thousands of objects, none of them garbage: no collection while they are made
    try:
        entry = msgspec.msgpack.decode(where.read_bytes(), type=_Entry)
        if entry.key == key:
            return entry.chunks, entry.questions
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        pass
    finally:
        if collecting:
            gc.enable()
    chunks, questions = load()
    if mode == "readwrite":
        try:
            where.parent.mkdir(parents=True, exist_ok=True)
            ignore = where.parent / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# chunks and labels of local runs, read back while their inputs hold\n*\n",
                                  encoding="utf-8")
            write_atomic(where, msgspec.msgpack.encode(_Entry(key, chunks, questions)))
        except OSError:
            pass  # a cache that cannot be written costs the next run its time, nothing else
    return chunks, questions


def _key(paths: Sequence[Path], settings: Any) -> str:
    """The digest of everything that decides the chunks and the labels (see `cached_corpus`)."""
    import platform

    found = hashlib.sha256(json.dumps([VERSION, platform.python_version(), _rapidfuzz(), _code(), settings],
                                      sort_keys=True).encode())
    for path in paths:
        files = sorted(f for f in path.rglob("*") if f.suffix in SUFFIXES and f.is_file()) if path.is_dir() else [path]
        for file in files:
            found.update(file.relative_to(path).as_posix().encode() + b"\0" if path.is_dir() else b"\0")
            found.update(hashlib.sha256(file.read_bytes()).digest())
        found.update(b"\1")
    return found.hexdigest()


@functools.cache
def _code() -> str:
    """This package's evalset modules and the core and file helpers they read, file by file (read once a
    process)."""
    package = Path(__file__).resolve().parent.parent
    found = hashlib.sha256()
    for folder in ("evalset", "core", "files"):
        for path in sorted((package / folder).glob("*.py")):
            found.update(f"{folder}/{path.name}".encode() + b"\0" + path.read_bytes())
    return found.hexdigest()


def _rapidfuzz() -> str | None:
    from importlib import metadata  # here: importing it loads the email package, which loads socket

    try:
        return metadata.version("rapidfuzz")
    except metadata.PackageNotFoundError:
        return None


def _documents_corpus(
    documents: Path, chunker: Chunker, root: Path, evalset: Path, named: Mapping[str, Chunker], recorded: str | None,
) -> tuple[tuple[Chunk, ...], tuple[Question, ...]]:
    found = load_documents(documents)
    chunks = list(chunk_documents(found, chunker, root))
    for name, other in named.items():
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
