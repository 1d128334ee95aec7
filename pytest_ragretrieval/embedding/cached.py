"""The one cache every embedder goes through: only misses reach the model."""
from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..cache import Cache
from ..errors import RagError
from ..paths import display
from ..progress import Output, Progress
from .base import Embedder, check_vectors
from .prompts import Side


@dataclass(frozen=True)
class EmbedStats:
    """Distinct texts served from the cache and sent to the model: the last call, and in total."""

    hits: int = 0
    embedded: int = 0
    total_hits: int = 0
    total_embedded: int = 0


class CachedEmbedder:
    """Embeds through the cache: only misses reach the model, in one batched call per embed().

    Entries live in the `embeddings` namespace of the embedder's id, keyed by the text itself
    (the file name is its sha256), as `.npy` float32; so each text embeds once per embedder. When
    the embedder's sides differ (prompts, input types), the key is the side and the text.
    """

    def __init__(self, embedder: Embedder, cache: Cache, out: Output | None = None, what: str = "texts") -> None:
        self.embedder = embedder
        self.id = embedder.id
        self.namespace = cache.namespace("embeddings", embedder.id, ext="npy")
        self.out = out
        self.what = what
        self.dimension: int | None = None
        self.stats = EmbedStats()

    def embed(self, texts: Sequence[str], label: str | None = "embedding", side: Side = "passage") -> np.ndarray:
        """Vectors for `texts` as `side`, in order; `label` names the progress line, None keeps it quiet."""
        texts = list(texts)
        unique = list(dict.fromkeys(texts))
        key = self.embedder.prompts.key
        vectors: dict[str, np.ndarray] = {}
        for text in unique:
            cached = self._read(key(text, side))
            if cached is not None:
                vectors[text] = cached
        misses = [text for text in unique if text not in vectors]
        if misses and self.namespace.mode == "readonly":
            raise self.namespace.miss_error(len(misses), self.what)
        if misses:
            fresh = check_vectors(self.id, self._run(misses, len(vectors), label, side), len(misses), self.dimension)
            self.dimension = fresh.shape[1]
            for text, vector in zip(misses, fresh, strict=True):
                vectors[text] = vector
                self.namespace.put(key(text, side), _to_bytes(vector))
        self.stats = EmbedStats(
            hits=len(unique) - len(misses),
            embedded=len(misses),
            total_hits=self.stats.total_hits + len(unique) - len(misses),
            total_embedded=self.stats.total_embedded + len(misses),
        )
        if not texts:
            return np.zeros((0, self.dimension or 0), dtype=np.float32)
        return np.stack([vectors[text] for text in texts])

    def _read(self, text: str) -> np.ndarray | None:
        """A cached vector, checked against the others; an unreadable entry counts as a miss."""
        data = self.namespace.get(text)
        if data is None:
            return None
        try:
            vector = np.load(io.BytesIO(data), allow_pickle=False)
        except (ValueError, OSError, EOFError):
            return None
        if (
            vector.ndim != 1
            or vector.dtype != np.float32
            or (self.dimension is not None and vector.shape[0] != self.dimension)
            or not np.isfinite(vector).all()
        ):
            raise RagError(
                f"cache {display(self.namespace.folder)} holds an invalid vector for embedder {self.id!r} "
                f"(shape {vector.shape}, dtype {vector.dtype}, expected dimension {self.dimension or 'd'}); "
                "delete that folder to embed again"
            )
        self.dimension = vector.shape[0]
        return np.asarray(vector, dtype=np.float32)

    def _run(self, misses: list[str], hits: int, label: str | None, side: Side) -> object:
        if self.out is None or label is None:
            return self._call(misses, side)
        with Progress(self.out, f"{label} with {self.id}", len(misses)) as bar:
            if hits:
                bar.note = f"{hits} cached"
            vectors = self._call(misses, side)
            bar.advance(len(misses))
        return vectors

    def _call(self, misses: list[str], side: Side) -> object:
        try:
            return self.embedder.embed(misses, side)
        except RagError:
            raise
        except Exception as exc:
            detail = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise RagError(f"embedder {self.id!r} raised {type(exc).__name__}: {detail}") from exc


def _to_bytes(vector: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(vector, dtype=np.float32), allow_pickle=False)
    return buffer.getvalue()
