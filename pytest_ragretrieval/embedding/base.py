"""The embedder contract, the settings every embedder is built from, and the check of what it returns."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..core.errors import RagError
from .prompts import Prompts, Side, resolve


class Embedder(Protocol):
    """Texts in, one float32 row per text out; `id` names the model (and its prompts) in fingerprints
    and the cache; `prompts` says what each side is told, so the cache knows whether sides differ.
    An embedder that computes in this process says so with `computes_here = True` (see `computes_here`)."""

    id: str
    prompts: Prompts

    def embed(self, texts: list[str], side: Side = "passage") -> np.ndarray: ...


@runtime_checkable
class Bounded(Protocol):
    """An embedder that reads only so much of a text. `bound` gives each text as the model reads it
    (an over-long one cut where reading stops, texts within the limit unchanged); the cache keys
    the cut text, so a cached run and a fresh one agree, and no time goes into the rest."""

    def bound(self, texts: list[str], side: Side) -> list[str]: ...


@runtime_checkable
class Loading(Protocol):
    """An embedder whose first `embed` loads a model (its weights, an engine): `load` does it now, so that
    the runner can do it before the first question is timed (`CachedEmbedder.load`); `loaded` says whether
    it is done. A server's embedder has nothing to load and does not implement it."""

    @property
    def loaded(self) -> bool: ...

    def load(self) -> object: ...


def computes_here(embedder: object) -> bool:
    """Whether the embedder's vectors come from this machine's arithmetic (a model run in process), so
    that embedding one cached text again tells whether this CPU computes what filled the cache; a
    server's vectors are the server's, and checking them would cost a request."""
    return getattr(embedder, "computes_here", False) is True


DEFAULT_TIMEOUT = 30.0
"""`embedding_timeout`: seconds one request to an embeddings server may take, answer included."""
DEFAULT_RETRIES = 2
"""`embedding_retries`: further attempts of a request after a timeout, a lost connection, a 429 or a 5xx."""


@dataclass(frozen=True)
class EmbedderSettings:
    """The config's embedder keys; `id` (embedding_id) replaces the derived id of any embedder."""

    root: Path
    batch_size: int = 64
    id: str | None = None
    base_url: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    retries: int = DEFAULT_RETRIES
    query_prompt: str | None = None
    passage_prompt: str | None = None
    query_input_type: str | None = None
    passage_input_type: str | None = None

    def prompts(self, known: Prompts | None = None) -> Prompts:
        """The configured prompts, absent ones taken from `known` (a model family's defaults)."""
        return resolve(
            self.query_prompt, self.passage_prompt, self.query_input_type, self.passage_input_type, known or Prompts()
        )


def check_vectors(embedder_id: str, vectors: object, rows: int, dimension: int | None = None) -> np.ndarray:
    """`vectors` as a float32 rows x d array, or a RagError naming the embedder and the flaw."""
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            array = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError):
        raise RagError(
            f"embedder {embedder_id!r} returned a {type(vectors).__name__} that is not an n x d array of numbers; "
            "every text needs one vector of the same length"
        ) from None
    if array.ndim != 2 or array.shape[1] == 0:
        raise RagError(
            f"embedder {embedder_id!r} returned an array of shape {array.shape} for {rows} texts; "
            f"it must return one vector per text, shape ({rows}, d)"
        )
    if array.shape[0] != rows:
        raise RagError(
            f"embedder {embedder_id!r} returned {array.shape[0]} vectors for {rows} texts; "
            "it must return one vector per text, in order"
        )
    if dimension is not None and array.shape[1] != dimension:
        raise RagError(
            f"embedder {embedder_id!r} returned vectors of dimension {array.shape[1]}, "
            f"but earlier or cached vectors have dimension {dimension}; one embedder id must always give one dimension"
        )
    finite = np.isfinite(array).all(axis=1)
    if not finite.all():
        first = int(np.argmin(finite))
        raise RagError(
            f"embedder {embedder_id!r} returned NaN or infinite values for {int((~finite).sum())} of {rows} texts "
            f"(first at position {first}); it must return finite numbers"
        )
    return array


class FailOnce:
    """An embedder that failed once stays failed for the session: every later caller gets the same error at once.

    Without this, each consumer (the vector retriever, then hybrid and rerank through it, the
    fingerprint) would wait through a dead server's timeouts and retries again.
    """

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.id = embedder.id
        self.failure: Exception | None = None

    def embed(self, texts: list[str], side: Side = "passage") -> np.ndarray:
        if self.failure is not None:
            raise self.failure
        try:
            return self.embedder.embed(texts, side)
        except Exception as exc:
            self.failure = exc
            raise

    def load(self) -> object:
        """The wrapped embedder's load (`Loading`): a failure is kept as a failed `embed` is."""
        if self.failure is not None:
            raise self.failure
        try:
            return self.embedder.load()  # type: ignore[attr-defined]
        except Exception as exc:
            self.failure = exc
            raise

    def __getattr__(self, name: str) -> Any:
        """Everything else (batch_size, dimension, ...) is the wrapped embedder's."""
        if name == "embedder":
            raise AttributeError(name)
        return getattr(self.embedder, name)
