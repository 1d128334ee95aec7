"""pytest-ragretrieval: a regression gate for the retrieval layer of RAG systems."""
from __future__ import annotations

__version__ = "0.1.0"
