"""Tokens (of the corpus, of the queries) through the content-addressed cache: a warm run tokenizes nothing.

Entries live in the `tokens` namespace of `tokenizer_id` (the tokenizer's name and version,
and the version of our rule on top: lower-cased, blank tokens dropped), keyed by the text. A
pack stores token ids into its own vocabulary. Misses are tokenized here, and on up to
`workers` - 1 processes forked from this one where they pay (`core/fork.py`): a fork inherits
the tokenizer this process built, user dictionary included, and never re-runs the caller's
__main__.

A cold run also tokenizes the corpus *ahead* (`tokenize_ahead`): one process forked before the
corpus is embedded tokenizes its misses on the other core while this one embeds, and
`cached_tokens` takes its answer when the retriever is built.
"""
from __future__ import annotations

import pickle
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import numpy as np

from ..cache.store import Cache, Mode, Namespace
from ..core.errors import RagError
from ..core.fork import (
    BESIDE,
    Child,
    ChildFailed,
    Measured,
    cpu_times,
    fork,
    forkable,
    idle_cores,
    processes,
    result,
    stop,
)
from .tokens import Steps, describe, few, few_steps, keep_index, steps, tokenizer, tokenizer_key

RULE = "tokens 1"
"""Bump when what we do to the tokenizer's output changes: cached tokens then stop matching."""
PROBE_SECONDS = 0.25
"""How long this process works alone (loading the dictionary, then tokenizing) before the rest is
shared out; it measures meanwhile."""
BLOCK = 64
"""Texts tokenized between two looks at the clock while measuring."""
BUDGET = 60.0
"""Seconds forked processes get beyond 20 times the rest's estimated time, before they are killed."""

Part = tuple[list[str], list[np.ndarray], list[str]]
"""A vocabulary, the token ids of some texts in it, and those texts."""
SLOWEST = 20_000
"""Characters a second below which a process tokenizing ahead is taken for stuck (jieba does about
a million here): its deadline is BUDGET plus the misses' size at this speed."""


class Ahead:
    """Texts (the corpus's misses, the questions') being tokenized by a process forked before the
    corpus was embedded; its answer is read once, at the first call that needs it."""

    def __init__(self, texts: list[str], child: Child, deadline: float) -> None:
        self.sent = tuple(texts)
        self.texts = frozenset(texts)
        self._child: Child | None = child
        self._deadline = deadline
        self._answer: tuple[list[str], dict[str, np.ndarray]] | None = None

    def part(self, misses: list[str]) -> Part | None:
        """The misses as one part (its own vocabulary, in order of first use), when each was
        tokenized ahead and the process ended well; None, and they are tokenized here (where a
        tokenizer's error gets its own message)."""
        if not self.texts.issuperset(misses):
            return None
        if self._child is not None:
            child, self._child = self._child, None
            try:
                words, rows = _unflat(result(child, self._deadline))
            except ChildFailed:
                return None
            self._answer = words, dict(zip(self.sent, rows, strict=True))
        if self._answer is None:
            return None
        vocabulary, by_text = self._answer
        rows = [by_text[text] for text in misses]
        if self.sent[:len(misses)] == tuple(misses):
            # the first texts it was given (the corpus, before the questions): their words are the
            # vocabulary's first ones, numbered in order of first use already
            every = np.concatenate([*rows, np.zeros(1, dtype=np.int32)])
            return vocabulary[:int(every.max()) + 1] if every.size > 1 else [], rows, misses
        return (*_used(vocabulary, rows), misses)

    def stop(self) -> None:
        """Kill the process, its process group with the children it forked, when its answer was never read
        (nothing needed it, or the run is unwinding)."""
        if self._child is not None:
            stop([self._child])
            self._child = None


def tokenizer_id(name: str) -> str:
    return f"{describe(name)} ({RULE})"


def tokenize_batch(name: str, texts: Sequence[str], chosen: Steps | None = None) -> tuple[list[str], list[np.ndarray]]:
    """(vocabulary in order of first use, token ids per text) for one batch, by `chosen` (default: the
    tokenizer `name`).

    Pieces are numbered as they come (a dict whose missing key gets the next number, all in C),
    and only the distinct pieces are finished (lower-cased, blanks dropped): the same vocabulary
    and ids as finishing every piece, since a token's first use is its first piece's."""
    chosen = chosen or steps(name)
    split, finish = chosen.split, chosen.finish
    pieces: defaultdict[str, int] = defaultdict()
    pieces.default_factory = pieces.__len__
    number = pieces.__getitem__
    rows = []
    for found in split(texts):
        rows.append(np.fromiter(map(number, found), dtype=np.int32, count=len(found)))
    if finish is None:
        return list(pieces), rows
    vocabulary: dict[str, int] = {}
    final = np.fromiter(
        (-1 if (token := finish(piece)) is None else vocabulary.setdefault(token, len(vocabulary)) for piece in pieces),
        dtype=np.int32, count=len(pieces),
    )
    rows = [final[row] for row in rows]
    if final.size and final.min() < 0:
        rows = [row[row >= 0] for row in rows]
    return list(vocabulary), rows


def tokenize_ahead(texts: Sequence[str], name: str, namespace: Namespace, workers: int) -> Ahead | None:
    """Start tokenizing the misses of `texts` (the corpus's, then the questions') on a forked process;
    None when nothing misses, `workers` is 1 (nothing is forked), or forking is unsafe or absent
    (`forkable`: macOS, Windows; the tokens are then made here, sequentially, when the retriever is
    built). The process leads its own process group, so `Ahead.stop` kills the children it forked
    too. The child loads the dictionary, and this process needs it only for a text it was not given.
    Unlike the split in `_tokenize`, this waits for no idle core: the work is the same whichever
    process does it, and this one is about to embed, which keeps a core busy either way."""
    if workers <= 1 or not forkable():
        return None
    unique = list(dict.fromkeys(texts))
    misses = [unique[i] for i in namespace.absent(unique)]
    if not misses or few(name, misses, namespace.folder):
        return None  # nothing to do, or little enough to cut here from jieba's dictionary index
    kept = namespace.folder if namespace.writable else None
    child = fork(partial(_ahead, name, misses, workers - 1, kept), nice=BESIDE, group=True)
    return Ahead(misses, child, time.monotonic() + BUDGET + _size(misses) / SLOWEST)


def cached_tokens(
    texts: Sequence[str], name: str, namespace: Namespace, workers: int, ahead: Ahead | None = None
) -> tuple[list[str], list[np.ndarray]]:
    """(vocabulary, token ids per text, in order): cached entries read, the misses tokenized (taken
    from `ahead` when it tokenized every one, else on up to `workers` processes) and written as one
    pack. A readonly cache is no reason to fail here: tokenizing needs no model or key, so misses
    are tokenized and just not written."""
    unique = list(dict.fromkeys(texts))
    vocabulary, found = namespace.read_tokens(unique)
    misses = [text for text, ids in zip(unique, found, strict=True) if ids is None]
    rows = {text: ids for text, ids in zip(unique, found, strict=True) if ids is not None}
    if misses:
        part = ahead.part(misses) if ahead is not None else None
        chosen = few_steps(name, misses, namespace.folder) if part is None else None
        if part is None and chosen is not None:
            part = (*tokenize_batch(name, misses, chosen), misses)
        vocabulary, fresh = _merged(vocabulary, [part] if part is not None else _tokenize(name, misses, workers))
        namespace.write(*_own_vocabulary(fresh, vocabulary))
        rows.update(fresh)
    return vocabulary, [rows[text] for text in texts]


def _used(words: list[str], rows: list[np.ndarray]) -> tuple[list[str], list[np.ndarray]]:
    """`rows` renumbered into the words they use, in order of first use: what `tokenize_batch` gives
    for their texts, so a part taken from a larger answer merges the same."""
    every = np.concatenate([*rows, np.zeros(0, dtype=np.int32)])
    order = np.fromiter(dict.fromkeys(every.tolist()), dtype=np.int32)
    renumber = np.zeros(len(words), dtype=np.int32)
    renumber[order] = np.arange(order.size, dtype=np.int32)
    return [words[i] for i in order.tolist()], [renumber[row] for row in rows]


def _merged(vocabulary: list[str], parts: list[Part]) -> tuple[list[str], dict[str, np.ndarray]]:
    """The parts' token ids in one vocabulary that extends `vocabulary`, each new word numbered at
    its first use in part order: the same whatever the split."""
    if not vocabulary and len(parts) == 1:  # numbered in order of first use already
        words, batch, part = parts[0]
        return list(words), dict(zip(part, batch, strict=True))
    merged: defaultdict[str, int] = defaultdict(None, ((token, number) for number, token in enumerate(vocabulary)))
    merged.default_factory = merged.__len__  # a word not seen yet gets the next number
    fresh: dict[str, np.ndarray] = {}
    for words, batch, part in parts:
        remap = np.fromiter(map(merged.__getitem__, words), dtype=np.int32, count=len(words))
        fresh.update((text, remap[ids]) for text, ids in zip(part, batch, strict=True))
    return list(merged), fresh


def _own_vocabulary(entries: dict[str, np.ndarray], vocabulary: list[str]) -> tuple[dict[str, np.ndarray], list[str]]:
    """The entries renumbered into the vocabulary they use, so the pack holds no stranger's tokens."""
    every = np.concatenate([*entries.values(), np.zeros(0, dtype=np.int32)])
    used = np.flatnonzero(np.bincount(every, minlength=len(vocabulary))).astype(np.int32)  # np.unique, without a sort
    if used.size == len(vocabulary):
        return entries, vocabulary
    renumber = np.zeros(len(vocabulary), dtype=np.int32)
    renumber[used] = np.arange(used.size, dtype=np.int32)
    return {text: renumber[ids] for text, ids in entries.items()}, [vocabulary[i] for i in used.tolist()]


def _tokenize(name: str, misses: list[str], workers: int) -> list[Part]:
    """The misses as contiguous parts, in order, so the merged vocabulary (and the pack) is the same
    whatever the split. This process loads the dictionary and tokenizes alone until PROBE_SECONDS
    have passed (at least one block), measuring its speed and the cores idle beside it meanwhile
    (loading jieba's dictionary keeps this process as busy as tokenizing); `fork.processes`
    then says how many processes share the rest, the others forked from this one with the
    dictionary it loaded. With `workers` 1, or where forking is unsafe or absent (`forkable`), it is
    the sequential run: one part, nothing measured, nothing forked."""
    if workers <= 1 or not forkable():
        return [(*tokenize_batch(name, misses), misses)]
    window = time.perf_counter()
    before = cpu_times()
    tokenizer(name)  # the dictionary, loaded once, here
    started = time.perf_counter()
    parts: list[Part] = []
    done = 0
    while done < len(misses) and (not done or time.perf_counter() - window < PROBE_SECONDS):
        block = misses[done:done + BLOCK]
        parts.append((*tokenize_batch(name, block), block))
        done += len(block)
    rest = misses[done:]
    seconds = time.perf_counter() - started
    measured = Measured(seconds, _size(misses[:done]), _size(rest), idle_cores(before, cpu_times()))
    own, *others = _split(rest, processes(workers, measured))
    deadline = time.monotonic() + BUDGET + 20 * seconds * measured.left / max(1, measured.done)
    children: list[Child] = []
    try:
        children.extend(fork(partial(_flat, name, share)) for share in others)
        parts.append((*tokenize_batch(name, own), own))
        for share in others:
            parts.append((*_unflat(result(children.pop(0), deadline)), share))
    except ChildFailed as exc:
        raise RagError(f"tokenizing the corpus with {name} in a worker process failed: {exc}") from None
    finally:
        stop(children)
    return parts


def _size(texts: Sequence[str]) -> int:
    return sum(len(text) for text in texts)


def _split(texts: list[str], count: int) -> list[list[str]]:
    """`texts` in `count` contiguous shares of about equal characters (never an empty one)."""
    if count <= 1 or len(texts) <= 1:
        return [texts]
    ends = np.cumsum([len(text) for text in texts])
    cuts = np.searchsorted(ends, ends[-1] * np.arange(1, count) / count) + 1
    bounds = [0, *np.minimum(cuts, len(texts)).tolist(), len(texts)]
    return [texts[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b > a]


def _ahead(name: str, texts: list[str], workers: int, kept: Path | None) -> bytes:
    """The process tokenizing ahead: `texts` split as `_tokenize` splits them (more processes only for
    idle cores), answered as one part; the dictionary it loaded is kept as an index in the token cache's
    folder `kept` (None: not writable) for a later run's few texts (`few`)."""
    words, fresh = _merged([], _tokenize(name, texts, workers))
    keep_index(name, kept)
    return _packed(words, [fresh[text] for text in texts])


def _flat(name: str, texts: list[str]) -> bytes:
    return _packed(*tokenize_batch(name, texts))


def _packed(words: list[str], rows: list[np.ndarray]) -> bytes:
    """A forked process's answer: its vocabulary, then every row in one array (one pickle, not one per row)."""
    flat = np.concatenate([*rows, np.zeros(0, dtype=np.int32)])
    return pickle.dumps((words, np.array([row.size for row in rows], dtype=np.int64), flat), protocol=5)


def _unflat(data: bytes) -> tuple[list[str], list[np.ndarray]]:
    words, lengths, flat = pickle.loads(data)
    return words, np.split(flat, np.cumsum(lengths)[:-1])


def query_tokens(
    folder: Path, name: str, workers: int, texts: Sequence[str], mode: Mode,
) -> Callable[[str], list[str]]:
    """The global tokenizer's tokens of `texts`, through the cache (a warm run's bm25 has cached them, so
    the tokenizer is not loaded), as a function of the text: the leak guard's (evalset/split.py)."""
    key = tokenizer_key(name)
    if mode == "off":
        return tokenizer(key)
    space = Cache(folder, mode).namespace("tokens", tokenizer_id(key), dtype="<i4")
    vocabulary, rows = cached_tokens(texts, key, space, workers)
    found = {text: [vocabulary[i] for i in row.tolist()] for text, row in zip(texts, rows, strict=True)}
    if mode == "readwrite":
        space.flush()
    return lambda text: found[text] if text in found else tokenizer(key)(text)
