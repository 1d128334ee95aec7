"""`python:<module>:<attr>`: a user's callable from list[str] to an n x d array-like."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import ConfigError, RagError
from ..core.loader import load_object
from .base import EmbedderSettings, check_vectors
from .prompts import Prompts, Side


class PythonEmbedder:
    """Imports the callable on first embed(), so a fully cached run never imports user code."""

    def __init__(self, target: str, *, id: str, root: Path, prompts: Prompts | None = None) -> None:
        if target.count(":") != 1 or not all(target.split(":")):
            raise ConfigError(f"embedding 'python:{target}' must look like 'python:package.module:function'")
        self.target = target
        self.prompts = prompts or Prompts()
        self.id = self.prompts.full_id(id)
        self.root = root
        self._function: Callable[..., Any] | None = None

    @property
    def loaded(self) -> bool:
        return self._function is not None

    def load(self) -> Callable[..., Any]:
        """The callable, its module imported (`Loading`): a module that loads a model when imported does it
        before the first question; one that loads it on its first call does it inside that question."""
        if self._function is None:
            self._function = load_object(self.target, self.root, "embedding")
        return self._function

    def embed(self, texts: list[str], side: Side = "passage") -> np.ndarray:
        """The callable gets the texts with the side's prompt put before each."""
        function = self.load()
        try:
            result = function(self.prompts.apply(list(texts), side))
        except RagError:
            raise
        except Exception as exc:
            detail = (str(exc).strip().splitlines() or [""])[0]
            raise RagError(f"embedder {self.id!r} ({self.target}) raised {type(exc).__name__}: {detail}") from exc
        return check_vectors(self.id, result, len(texts))


def make(target: str, settings: EmbedderSettings) -> PythonEmbedder:
    assert settings.id is not None, "the registry requires embedding_id for python: embedders"
    return PythonEmbedder(target, id=settings.id, root=settings.root, prompts=settings.prompts())
