"""The corpus as documents (`documents = "kb/docs.jsonl"` or a folder of `.md`/`.txt` files), before a chunker
cuts them (evalset/chunkers.py)."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import FixtureError
from ..files.paths import display
from .lines import records

DOCUMENT_KEYS = frozenset({"id", "text", "metadata"})
SUFFIXES = (".md", ".txt")
"""The files a documents folder holds; others (images, notes) are left out."""


@dataclass(frozen=True)
class Document:
    """One document: its id (a folder's file: the path relative to the folder, with '/'), its text."""

    id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)


def load_documents(path: Path) -> tuple[Document, ...]:
    """Read the documents: a JSON Lines file of {id, text, metadata?}, or every `.md`/`.txt` file under a folder."""
    found = _folder(path) if path.is_dir() else _lines(path)
    if not found:
        raise FixtureError(f"{display(path)}: no documents")
    return found


def _lines(path: Path) -> tuple[Document, ...]:
    found: list[Document] = []
    seen: dict[str, str] = {}
    for where, record in records(path):
        unknown = sorted(set(record) - DOCUMENT_KEYS)
        if unknown:
            raise FixtureError(f"{where}: unknown field {unknown[0]!r}; allowed fields: id, metadata, text")
        doc, text, metadata = record.get("id"), record.get("text"), record.get("metadata", {})
        if not isinstance(doc, str) or not doc.strip() or "#" in doc or any(ord(c) < 32 for c in doc):
            raise FixtureError(f"{where}: field 'id' must be a non-empty one-line string without '#' "
                               "(chunk ids are <id>#<n>)")
        if not isinstance(text, str):
            raise FixtureError(f"{where}: field 'text' must be a string")
        if not isinstance(metadata, dict):
            raise FixtureError(f"{where}: field 'metadata' must be an object")
        if doc in seen:
            raise FixtureError(f"{where}: duplicate document id {doc!r} (first at {seen[doc]})")
        seen[doc] = where
        found.append(Document(doc, text, metadata))
    return tuple(found)


def _folder(path: Path) -> tuple[Document, ...]:
    found: list[Document] = []
    for file in sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES and p.is_file()):
        doc = file.relative_to(path).as_posix()
        if "#" in doc:
            raise FixtureError(f"{display(file)}: a document's name must not hold '#' (chunk ids are <id>#<n>); "
                               "rename it")
        try:
            text = file.read_bytes().decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise FixtureError(f"{display(file)}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
        except OSError as exc:
            raise FixtureError(f"{display(file)}: cannot be read ({exc.strerror})") from None
        found.append(Document(doc, text))
    return tuple(found)


def documents_digest(documents: Sequence[Document]) -> str:
    """What the fingerprint records of the documents: one digest over ids, texts and metadata."""
    rows = [[d.id, d.text, dict(d.metadata)] for d in sorted(documents, key=lambda d: d.id)]
    return hashlib.sha256(json.dumps(rows, ensure_ascii=False, sort_keys=True).encode()).hexdigest()
