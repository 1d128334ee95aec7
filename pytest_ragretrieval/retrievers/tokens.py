"""Tokenizers for BM25; the chosen one and its version join the fingerprint."""
from __future__ import annotations

import logging
from collections.abc import Callable
from functools import cache

TOKENIZERS = ("jieba", "whitespace")


def _jieba() -> Callable[[str], list[str]]:
    import jieba

    jieba.setLogLevel(logging.WARNING)

    def tokenize(text: str) -> list[str]:
        return [token.lower() for token in jieba.cut(text) if token.strip()]

    return tokenize


def _whitespace(text: str) -> list[str]:
    return [token.lower() for token in text.split()]


@cache
def tokenizer(name: str) -> Callable[[str], list[str]]:
    """The tokenizer called `name`: lower-cased tokens, blank tokens dropped."""
    if name == "jieba":
        return _jieba()
    if name == "whitespace":
        return _whitespace
    raise ValueError(f"unknown tokenizer {name!r}")


def describe(name: str) -> str:
    """`name version`, the form the fingerprint records."""
    if name == "jieba":
        from importlib.metadata import version

        return f"jieba {version('jieba')}"
    return name
