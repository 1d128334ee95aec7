"""Tokens (of the corpus, of the queries) through the content-addressed cache: a warm run tokenizes nothing.

Entries live in the `tokens` namespace of `tokenizer_id` (the tokenizer's name and version,
and the version of our rule on top: lower-cased, blank tokens dropped), keyed by the text. A
pack stores token ids into its own vocabulary. Misses are tokenized in `workers` fresh Python
processes (`python -m` this module), which load the tokenizer's default dictionary exactly as
this process does; unlike multiprocessing's spawn they never re-run the caller's __main__.
"""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..cache import Namespace
from ..errors import RagError
from .tokens import describe, tokenizer

RULE = "tokens 1"
"""Bump when what we do to the tokenizer's output changes: cached tokens then stop matching."""
PARALLEL_FROM = 2000
"""Fewer misses than this are tokenized here: starting processes costs about a second."""


def tokenizer_id(name: str) -> str:
    return f"{describe(name)} ({RULE})"


def tokenize_batch(name: str, texts: Sequence[str]) -> tuple[list[str], list[np.ndarray]]:
    """(vocabulary, token ids per text) for one batch; runs in a worker process."""
    tokenize = tokenizer(name)
    vocabulary: dict[str, int] = {}
    rows = []
    for text in texts:
        tokens = tokenize(text)
        ids = (vocabulary.setdefault(token, len(vocabulary)) for token in tokens)
        rows.append(np.fromiter(ids, dtype=np.int32, count=len(tokens)))
    return list(vocabulary), rows


def cached_tokens(
    texts: Sequence[str], name: str, namespace: Namespace, workers: int
) -> tuple[list[str], list[np.ndarray]]:
    """(vocabulary, token ids per text, in order): cached entries read, the misses tokenized on
    `workers` processes and written as one pack. A readonly cache is no reason to fail here:
    tokenizing needs no model or key, so misses are tokenized and just not written."""
    unique = list(dict.fromkeys(texts))
    vocabulary, found = namespace.read_tokens(unique)
    misses = [text for text, ids in zip(unique, found, strict=True) if ids is None]
    rows = {text: ids for text, ids in zip(unique, found, strict=True) if ids is not None}
    if misses:
        merged = {token: number for number, token in enumerate(vocabulary)}
        fresh: dict[str, np.ndarray] = {}
        for words, batch, part in _tokenize(name, misses, workers):
            remap = np.fromiter((merged.setdefault(w, len(merged)) for w in words), dtype=np.int32, count=len(words))
            fresh.update((text, remap[ids]) for text, ids in zip(part, batch, strict=True))
        vocabulary = list(merged)
        namespace.write(*_own_vocabulary(fresh, vocabulary))
        rows.update(fresh)
    return vocabulary, [rows[text] for text in texts]


def _own_vocabulary(entries: dict[str, np.ndarray], vocabulary: list[str]) -> tuple[dict[str, np.ndarray], list[str]]:
    """The entries renumbered into the vocabulary they use, so the pack holds no stranger's tokens."""
    used = np.unique(np.concatenate([*entries.values(), np.zeros(0, dtype=np.int32)]))
    renumber = np.zeros(len(vocabulary), dtype=np.int32)
    renumber[used] = np.arange(used.size, dtype=np.int32)
    return {text: renumber[ids] for text, ids in entries.items()}, [vocabulary[i] for i in used.tolist()]


def _tokenize(name: str, misses: list[str], workers: int) -> list[tuple[list[str], list[np.ndarray], list[str]]]:
    if workers <= 1 or len(misses) < PARALLEL_FROM:
        return [(*tokenize_batch(name, misses), misses)]
    parts = [misses[i::workers] for i in range(workers)]
    package_root = str(Path(__file__).parents[2])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([package_root, os.environ.get("PYTHONPATH", "")]))
    children = []
    for part in parts:
        errors = tempfile.TemporaryFile()
        child = subprocess.Popen(
            [sys.executable, "-m", __name__, name],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, env=env,
        )
        assert child.stdin is not None
        child.stdin.write(pickle.dumps(part))
        child.stdin.close()
        children.append((child, errors))
    done = []
    for (child, errors), part in zip(children, parts, strict=True):
        assert child.stdout is not None
        output = child.stdout.read()
        if child.wait() != 0:
            errors.seek(0)
            last = (errors.read().decode("utf-8", "replace").strip().splitlines() or ["no message"])[-1]
            raise RagError(f"tokenizing the corpus with {name} in a worker process failed: {last}")
        errors.close()
        words, rows = pickle.loads(output)
        done.append((words, rows, part))
    return done


if __name__ == "__main__":  # a worker: texts in (pickled on stdin), (vocabulary, rows) out
    sys.stdout.buffer.write(pickle.dumps(tokenize_batch(sys.argv[1], pickle.load(sys.stdin.buffer))))
