"""jieba's dictionary as sorted arrays in the cache: a few texts' words read without loading it.

Loading jieba's dictionary (half a million words from its marshal cache, then `jieba_cut`'s tables)
takes 0.6-2 s, and a run that tokenizes a few new questions or edited chunks paid it for a few
hundred characters. jieba's cut of a text looks up only that text's substrings (its word graph, its
search mode's 2- and 3-grams), so the dictionary's entries among them, with the whole dictionary's
total, give the same tokens. The index holds every entry (words and the prefixes jieba keeps with
count 0), one sorted fixed-width array per length, and is named by jieba's version and its
dictionary file's digest; it is written by a run that loaded the whole dictionary anyway.
"""
from __future__ import annotations

import hashlib
import io
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..files.paths import write_atomic

FEW = 100_000
"""Characters below which texts are cut with the index's words among their substrings (a few new
questions, 1% of 20,000 chunks edited): their substrings take far less than loading the dictionary."""


def index_path(folder: Path) -> Path | None:
    """Where the index of jieba's default dictionary lives in the token cache's `folder`; None for
    another jieba version (its algorithm may differ: `jieba_cut.VERSION`) or an unreadable dictionary."""
    import jieba

    from .jieba_cut import VERSION

    if jieba.__version__ != VERSION:
        return None
    try:
        data = Path(jieba.get_module_res(jieba.DEFAULT_DICT_NAME).name).read_bytes()
    except OSError:
        return None
    return folder / f"jieba-dictionary-{hashlib.sha256(data).hexdigest()[:16]}.npz"


def keep(path: Path, freq: dict[str, int], total: int) -> None:
    """Write the index of a loaded dictionary (`freq`, jieba's `FREQ`; `total`, its `total`)."""
    arrays: dict[str, np.ndarray] = {"total": np.asarray([total], dtype=np.int64)}
    by_length: dict[int, list[str]] = {}
    for word in freq:
        by_length.setdefault(len(word), []).append(word)
    for length, words in by_length.items():
        words.sort()
        arrays[f"words{length}"] = np.asarray(words, dtype=f"<U{length}")
        arrays[f"counts{length}"] = np.fromiter((freq[word] for word in words), dtype=np.int64, count=len(words))
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # type: ignore[arg-type]  # numpy types allow_pickle in the keywords
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, buffer.getvalue())


def words_in(path: Path, texts: list[str]) -> Any | None:
    """A stand-in for a loaded `jieba.Tokenizer` (its `FREQ` and `total`, what `jieba_cut.Cut` reads) holding
    the dictionary's entries among `texts`' substrings (each entry's prefixes are entries too, so a longer
    one is looked for only where its prefix was found); None without a readable index."""
    try:
        with np.load(path) as index:
            arrays = {name: index[name] for name in index.files}
    except (OSError, ValueError, KeyError):
        return None
    found: dict[str, int] = {}
    starts = [(text, i) for text in texts for i in range(len(text))]
    length = 1
    while starts and f"words{length}" in arrays:
        # jieba keeps every prefix of a word: a longer entry starts only where this one was found
        words, counts = arrays[f"words{length}"], arrays[f"counts{length}"]
        starts = [(text, i) for text, i in starts if i + length <= len(text)]
        wanted = np.asarray([text[i:i + length] for text, i in starts], dtype=f"<U{length}")
        at = np.minimum(np.searchsorted(words, wanted), max(0, words.size - 1))
        hits = words[at] == wanted if words.size else np.zeros(len(starts), dtype=bool)
        found.update(zip(wanted[hits].tolist(), counts[at[hits]].tolist(), strict=True))
        starts = [start for start, hit in zip(starts, hits.tolist(), strict=True) if hit]
        length += 1
    return SimpleNamespace(FREQ=found, total=int(arrays["total"][0]))
