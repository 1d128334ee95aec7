"""One content-addressed cache for model outputs (embeddings, rerank scores), safe to commit.

Layout: `<cache>/<kind>/<slug(model_id)>-<sha256(model_id)[:8]>/<2 hex>/<sha256(key_text)>.<ext>`,
plus `id.txt` in each namespace folder holding the full model id for humans. Every file is
written through a temporary file and `os.replace`, so a crash or a parallel run never leaves a
half-written entry behind.
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

from .errors import RagError
from .paths import display, write_atomic

MODES = ("readwrite", "readonly", "off")
RECORD_COMMAND = (
    "run pytest --rag-eval --rag-cache=readwrite where the model (or API key) is available, "
    "and commit/cache .rag-cache/"
)
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def slug(model_id: str) -> str:
    """A readable folder name; the hash suffix added by the caller keeps distinct ids apart."""
    return _UNSAFE.sub("_", model_id).strip("._")[:60] or "model"


class Cache:
    """The cache folder and its mode: `readwrite`, `readonly` (a miss is an error), or `off`."""

    def __init__(self, folder: Path, mode: str = "readwrite") -> None:
        if mode not in MODES:
            raise RagError(f"cache mode must be {', '.join(map(repr, MODES))}, got {mode!r}")
        self.folder = Path(folder)
        self.mode = mode

    def namespace(self, kind: str, model_id: str, ext: str = "bin") -> Namespace:
        """Entries of one kind ("embeddings", "rerank") from one model; ids never share a folder."""
        if not kind or _UNSAFE.search(kind):
            raise ValueError(f"cache kind must hold letters, digits, '.', '_' or '-' only, got {kind!r}")
        folder = self.folder / kind / f"{slug(model_id)}-{sha256(model_id)[:8]}"
        return Namespace(folder, kind, model_id, ext, self.mode)


class Namespace:
    def __init__(self, folder: Path, kind: str, model_id: str, ext: str, mode: str) -> None:
        self.folder = folder
        self.kind = kind
        self.model_id = model_id
        self.ext = ext
        self.mode = mode

    @property
    def readable(self) -> bool:
        return self.mode != "off"

    @property
    def writable(self) -> bool:
        return self.mode == "readwrite"

    def path(self, key_text: str) -> Path:
        digest = sha256(key_text)
        return self.folder / digest[:2] / f"{digest}.{self.ext}"

    def get(self, key_text: str) -> bytes | None:
        if not self.readable:
            return None
        try:
            return self.path(key_text).read_bytes()
        except FileNotFoundError:
            return None

    def put(self, key_text: str, data: bytes) -> None:
        if not self.writable:
            return
        marker = self.folder / "id.txt"
        if not marker.exists():
            write_atomic(marker, (self.model_id + "\n").encode("utf-8"))
        write_atomic(self.path(key_text), data)

    def miss_error(self, count: int, what: str = "texts") -> RagError:
        """What a readonly cache says when entries are missing: how many, for whom, and the fix."""
        return RagError(
            f"cache {display(self.folder)} is readonly and lacks {self.kind} for {count} {what} "
            f"from {self.model_id!r}; {RECORD_COMMAND}"
        )
