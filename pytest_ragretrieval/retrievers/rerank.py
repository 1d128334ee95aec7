"""Reranking of another retriever's top `depth`, the tutorial's Hybrid+Rerank: by a
sentence-transformers CrossEncoder in process, or by an HTTP service (`endpoint`, see rerank_http)."""
from __future__ import annotations

import importlib.util
import os
import struct
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from ..cache.store import Namespace
from ..core.env import truthy
from ..core.errors import RetrieverUnavailable
from ..core.optional import absent as not_found
from ..core.optional import need
from ..evalset.records import Question
from ..files.tables import Table
from .protocol import Context, Query, Retriever, Setup, ask

DEFAULT_MODEL = "BAAI/bge-reranker-base"


HTTP_KEYS = ("api", "api_key_env")
APIS = ("cohere", "tei")
"""Request shapes of rerank services: they cannot be told apart by URL (vLLM's /rerank wants
Cohere's `documents`, TEI's /rerank wants `texts`), so `api` is required with `endpoint`."""


def parse(table: Table) -> dict[str, Any]:
    endpoint = table.url("endpoint", "the key goes in the environment variable api_key_env names")
    params = {
        "source": table.text("source", "hybrid"),
        "depth": table.integer("depth", 20, minimum=1),
        "model": table.text("model", None if endpoint else DEFAULT_MODEL),
        "batch_size": table.integer("batch_size", 32, minimum=1),
        "min_score": table.number("min_score", None),
    }
    if endpoint is None:
        for key in HTTP_KEYS:
            if table.has(key):
                raise table.error(key, "applies only with endpoint = \"http://...\" (a rerank service)")
        return params
    params["endpoint"] = endpoint
    params["api"] = table.text("api", None, choices=APIS)
    if params["api"] is None:
        raise table.error(
            "api", "is required with endpoint: \"tei\" (text-embeddings-inference) or \"cohere\" (Cohere, Jina, vLLM)"
        )
    api_key_env = table.text("api_key_env", None)
    if api_key_env is not None:
        params["api_key_env"] = api_key_env
    return params


def sources(params: Mapping[str, Any]) -> list[str]:
    return [params["source"]]


def source_depth(params: Mapping[str, Any]) -> int:
    """The source is read to `depth`: its rankings are computed that deep once, for everyone."""
    return int(params["depth"])


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the model hub (HF_ENDPOINT or huggingface.co) accepts a TCP connection.

    Checked before loading a hub model, because without a network huggingface_hub retries
    for over a minute before it gives up; offline we go straight to the local cache.
    """
    import socket

    endpoint = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    port = endpoint.port or (443 if endpoint.scheme == "https" else 80)
    try:
        with socket.create_connection((endpoint.hostname or "huggingface.co", port), timeout=timeout):
            return True
    except OSError:
        return False


def in_hub_cache(model: str) -> bool:
    """Whether the Hugging Face cache holds `model` (its config.json at the `main` ref), looked up as
    huggingface_hub lays the cache out: importing it (and its HTTP stack) takes longer than a warm run's gate."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "huggingface"
    hub = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    folder = Path(hub or Path(os.environ.get("HF_HOME") or cache) / "hub") / ("models--" + model.replace("/", "--"))
    try:
        revision = (folder / "refs" / "main").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return False
    return bool(revision) and (folder / "snapshots" / revision / "config.json").is_file()


PACKAGES = ("torch", "transformers", "sentence_transformers")
"""What an in-process cross-encoder imports, each an optional package of the `local` extra."""


def not_installed(modules: Sequence[str]) -> str | None:
    """The first of `modules` that cannot be found, looked up without importing it (torch takes seconds)."""
    for module in modules:
        try:
            if importlib.util.find_spec(module) is None:
                return module
        except (ImportError, ValueError):  # a module set to None in sys.modules, or a finder that refuses it
            return module
    return None


class CrossEncoderScorer:
    """Loads the model on the first pair the cache does not know; never when all are cached."""

    def __init__(self, model: str, root: Path, batch_size: int) -> None:
        self.model = model
        self.root = root
        self.batch_size = batch_size
        self._encoder: Any = None

    def _unavailable(self, why: str) -> RetrieverUnavailable:
        return RetrieverUnavailable(
            f"cross-encoder {self.model!r} could not be loaded ({why}); "
            "give a local folder in `model`, or run where the model can be downloaded"
        )

    @property
    def loaded(self) -> bool:
        return self._encoder is not None

    def load(self) -> Any:
        """The model; when it is neither a folder, nor cached, nor downloadable, unavailable before torch loads.
        A missing package is named first: without it no copy of the model, local or downloaded, could run."""
        if self._encoder is None:
            package = not_installed(PACKAGES)
            if package is not None:
                raise RetrieverUnavailable(str(not_found(package, f"cross-encoder {self.model!r}")))
            local = (Path(self.root) / self.model).expanduser()
            target = str(local) if local.exists() else self.model
            offline = local.exists() or truthy(os.environ.get("HF_HUB_OFFLINE")) or not hub_reachable()
            absent = "no local copy and no Hugging Face hub reachable"
            if offline and not local.exists() and not in_hub_cache(self.model):
                raise self._unavailable(absent)
            cross_encoder = need("sentence_transformers", f"cross-encoder {self.model!r}").CrossEncoder
            try:
                self._encoder = cross_encoder(target, device="cpu", local_files_only=offline)
            except Exception as exc:
                raise self._unavailable(absent if offline else type(exc).__name__) from None
        return self._encoder

    def __call__(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        scores = self.load().predict(list(pairs), batch_size=self.batch_size, show_progress_bar=False)
        return [float(score) for score in scores]


class RerankRetriever:
    """Reorders the source's candidates by score, ties by id; scores go through the cache."""

    def __init__(
        self,
        source: Retriever,
        texts: dict[str, str],
        scorer: Callable[[Sequence[tuple[str, str]]], list[float]],
        cache: Namespace,
        depth: int,
        min_score: float | None,
    ) -> None:
        self.source = source
        self.texts = texts
        self.scorer = scorer
        self.cache = cache
        self.depth = depth
        self.min_score = min_score
        self.pools: dict[str, list[str]] = {}
        self.scored = 0

    def scores(self, query: str, candidates: Sequence[str]) -> list[float]:
        keys = [f"{query}\0{self.texts[chunk_id]}" for chunk_id in candidates]
        known: dict[int, float] = {}
        for i, key in enumerate(keys):
            data = self.cache.get(key)
            if data is not None:
                known[i] = struct.unpack("<d", data)[0]
        missing = [i for i in range(len(keys)) if i not in known]
        if missing and self.cache.mode == "readonly":
            raise self.cache.miss_error(len(missing), "query-chunk pairs")
        if missing:
            fresh = self.scorer([(query, self.texts[candidates[i]]) for i in missing])
            self.scored += len(missing)
            for i, value in zip(missing, fresh, strict=True):
                known[i] = value
                self.cache.put(keys[i], struct.pack("<d", value))
        return [known[i] for i in range(len(keys))]

    def preload(self, queries: Sequence[Query], batched: bool) -> Mapping[str, float]:
        """The cross-encoder (torch, sentence-transformers and the weights: seconds), loaded before the first
        question is timed when a query-candidate pair is not cached; a warm run loads nothing. The source's
        candidates are read from the session's store, which the runner fills before this retriever's
        questions; an HTTP service has nothing to load."""
        scorer = self.scorer
        if not isinstance(scorer, CrossEncoderScorer) or scorer.loaded or self.cache.mode == "readonly":
            return {}
        for query in queries:
            candidates = list(ask(self.source, query, self.depth))
            keys = [f"{query.query}\0{self.texts[chunk_id]}" for chunk_id in candidates if chunk_id in self.texts]
            if any(entry is None for entry in self.cache.read(keys)):  # read as `scores` reads them
                started = time.perf_counter()
                scorer.load()
                return {f"cross-encoder {scorer.model}": (time.perf_counter() - started) * 1000.0}
        return {}

    def diagnostics(self, questions: Sequence[Question]) -> dict[str, float]:
        """Recall@depth of the candidate pools: the ceiling no reranker can pass."""
        from ..scoring.evaluate import mean
        from ..scoring.metrics import recall

        scored = [q for q in questions if q.answerable and q.query in self.pools]
        if not scored:
            return {}
        pools = [recall(self.pools[q.query], q.relevance, self.depth) for q in scored]
        return {f"pool_recall@{self.depth}": mean(pools)}

    def __call__(self, query: str, k: int) -> list[str]:
        return self._rerank(query, list(self.source(query, self.depth)), k)

    def ask(self, query: Query, k: int) -> list[str]:
        return self._rerank(query.query, list(ask(self.source, query, self.depth)), k)

    def _rerank(self, query: str, candidates: list[str], k: int) -> list[str]:
        self.pools[query] = candidates
        if not candidates:
            return []
        scored = zip(candidates, self.scores(query, candidates), strict=True)
        ranked = sorted(scored, key=lambda item: (-item[1], item[0]))
        if self.min_score is not None:
            ranked = [item for item in ranked if item[1] >= self.min_score]
        return [chunk_id for chunk_id, _ in ranked[:k]]


def build(params: Mapping[str, Any], ctx: Context) -> RerankRetriever:
    scorer: Callable[[Sequence[tuple[str, str]]], list[float]]
    if "endpoint" in params:
        from .rerank_http import HttpRerankScorer

        http = HttpRerankScorer(
            params["endpoint"], api=params["api"], model=params["model"], batch_size=params["batch_size"],
            api_key_env=params.get("api_key_env"),
        )
        scorer, cache_id = http, http.id
    else:
        scorer, cache_id = CrossEncoderScorer(params["model"], ctx.root, params["batch_size"]), params["model"]
    return RerankRetriever(
        ctx.retriever(params["source"]),
        {chunk.id: chunk.text for chunk in ctx.chunks},
        scorer,
        ctx.score_cache("rerank", cache_id),
        params["depth"],
        params["min_score"],
    )


def fingerprint(params: Mapping[str, Any], setup: Setup) -> dict[str, Any]:
    return {}


def details(params: Mapping[str, Any]) -> dict[str, str]:
    if "endpoint" in params:
        from .rerank_http import scorer_id

        return {"reranker": scorer_id(params["api"], params["endpoint"], params["model"])}
    return {"reranker": params["model"]}
