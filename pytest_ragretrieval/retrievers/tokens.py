"""Tokenizers for BM25; the chosen one and its version join the fingerprint.

A tokenizer is named by a key: its name (`jieba`), or, with a jieba user dictionary, its name,
the dictionary's digest and its path (`tokenizer_key`). The key is all a worker process needs to
build the same tokenizer, and each key gets its own `jieba.Tokenizer`: jieba's module-level one
is global state that a user dictionary (or a user's own code) would change for everyone. jieba's
force-split words (a user dictionary's frequency-0 words) are one module-global set even across
`jieba.Tokenizer`s: each tokenizer here keeps its own and leaves jieba's as it found it.
"""
from __future__ import annotations

import logging
import re
import time
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any

from ..core.errors import RagError
from ..core.optional import need
from ..files.paths import display
from .jieba_cut import VERSION, Split, cutter
from .user_dict import UserDict, read_user_dict

TOKENIZERS = ("jieba", "jieba-search", "jieba-rs", "whitespace", "english")
JIEBA = ("jieba", "jieba-search", "jieba-rs")
"""The tokenizers that take a user dictionary. `jieba-search` is jieba's search mode
(`cut_for_search`): a long word also gives its two- and three-character words (笔记本电脑 gives
笔记, 电脑, 笔记本 and 笔记本电脑), as Chinese search engines index. `jieba-rs` is jieba's cut by
the Rust port (rjieba, an optional extra): faster, and not always the same tokens (docs/retrievers.md)."""

ENGLISH_VERSION = 1
"""Bumped whenever the English token rule or stop list changes, so old baselines stop comparing."""

SNOWBALL_ENGLISH_STOP_WORDS = frozenset(
    """
    i me my myself we our ours ourselves you your yours yourself yourselves
    he him his himself she her hers herself it its itself they them their theirs themselves
    what which who whom this that these those
    am is are was were be been being have has had having do does did doing
    would should could ought
    i'm you're he's she's it's we're they're i've you've we've they've
    i'd you'd he'd she'd we'd they'd i'll you'll he'll she'll we'll they'll
    isn't aren't wasn't weren't hasn't haven't hadn't doesn't don't didn't
    won't wouldn't shan't shouldn't can't cannot couldn't mustn't
    let's that's who's what's here's there's when's where's why's how's
    a an the
    and but if or because as until while
    of at by for with about against between into through during before after above below
    to from up down in out on off over under
    again further then once
    here there when where why how
    all any both each few more most other some such
    no nor not only own same so than too very
    """.split()
)
"""The Snowball project's English stop list (snowballstem.org, algorithms/english/stop.txt, BSD;
Lucene's english_stop.txt is the same): 174 words. The words it leaves commented out (us, will,
can, may, must, might, shall) stay tokens here too."""

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
"""Letters and digits of any script; an apostrophe inside a word stays ("don't", "customer's") so
the stop list and the stemmer's possessive rule see it. Everything else separates tokens."""
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})


_PLAIN: list[Any] = []
"""jieba's tokenizer without a user dictionary, once this process built it: `keep_index` writes its index."""


@cache
def _jieba_tokenizer(user_dict: UserDict | None) -> Any:
    """A jieba.Tokenizer of our own, its dictionary loaded, with the user dictionary's entries added."""
    import jieba

    jieba.setLogLevel(logging.WARNING)
    from jieba import finalseg

    own = jieba.Tokenizer()
    own.initialize()
    if user_dict is None:
        _PLAIN.append(own)
    shared = finalseg.Force_Split_Words
    before = set(shared)
    try:
        for word, frequency, tag in user_dict.entries if user_dict is not None else ():
            own.add_word(word, frequency, tag)  # what jieba.load_userdict does with each line, in order
    finally:
        if jieba.__version__ == VERSION:  # our cut keeps them per tokenizer; jieba's own cut reads only the shared set
            shared.intersection_update(before)
    return own


def force_split(user_dict: UserDict | None) -> frozenset[str]:
    """The words jieba force-splits after loading `user_dict` in a fresh process: those added with frequency 0."""
    return frozenset(word for word, frequency, _ in user_dict.entries if frequency == 0) if user_dict else frozenset()


@dataclass(frozen=True)
class Steps:
    """A tokenizer in two steps: `split` a text into pieces, then `finish` each piece into its token
    (None: dropped). Tokenizing a corpus finishes each distinct piece once, not each occurrence:
    jieba's 4.3 million characters at 20,000 chunks give 2.5 million pieces, 198,000 of them distinct."""

    split: Split
    """Many texts to their pieces (jieba's substrings are looked up a batch at a time)."""
    finish: Callable[[str], str | None] | None
    """None: the pieces are the tokens."""

    def __call__(self, text: str) -> list[str]:
        pieces = next(iter(self.split((text,))))
        if self.finish is None:
            return pieces
        return [token for token in map(self.finish, pieces) if token is not None]


def _lower_unless_blank(piece: str) -> str | None:
    return piece.lower() if piece.strip() else None


def _jieba(search: bool, user_dict: UserDict | None) -> Steps:
    return Steps(cutter(_jieba_tokenizer(user_dict), search, force_split(user_dict)), _lower_unless_blank)


def _jieba_rs(user_dict: UserDict | None) -> Steps:
    """jieba's cut (HMM on) by jieba-rs through rjieba, an instance of our own with the user
    dictionary's entries added in file order, as `_jieba_tokenizer` adds them to jieba's."""
    rjieba = need("rjieba", "tokenizer 'jieba-rs'")
    own = rjieba.Jieba()
    for word, frequency, tag in user_dict.entries if user_dict is not None else ():
        own.add_word(word, frequency, tag)
    return Steps(partial(map, own.cut), _lower_unless_blank)


def _english() -> Callable[[str], list[str]]:
    """NFKC, lower case, word tokens, stop words dropped, then Snowball English (Porter2) stems.

    PyStemmer (C libstemmer) rather than the pure-Python snowballstemmer: the same stems on
    536,021 distinct words, about 100 times faster. One stemmer per process (it is not
    thread-safe; pytest-xdist workers are processes).
    """
    import Stemmer

    stem_words = Stemmer.Stemmer("english").stemWords

    def tokenize(text: str) -> list[str]:
        text = unicodedata.normalize("NFKC", text).translate(_APOSTROPHES).lower()
        words = [word for word in _WORD.findall(text) if word not in SNOWBALL_ENGLISH_STOP_WORDS]
        return list(stem_words(words))

    return tokenize


def mostly_cjk(texts: Sequence[str]) -> bool:
    """Whether at least half the letters of `texts` are CJK (Han, kana, hangul): what jieba, the default
    tokenizer, is for. An English corpus cut by jieba gets no stemming and no stop words."""
    letters = cjk = 0
    for text in texts:
        for char in text:
            if char.isalpha():
                letters += 1
                cjk += unicodedata.east_asian_width(char) in "WF"
    return cjk * 2 >= letters


def tokenizer_key(name: str, user_dict: Path | None = None, sha256: str | None = None) -> str:
    """The key of `name` with the user dictionary at `user_dict` (absolute), whose entries have `sha256`."""
    return name if user_dict is None else f"{name}|{sha256}|{user_dict}"


def _parts(key: str) -> tuple[str, str | None, Path | None]:
    name, _, rest = key.partition("|")
    if not rest:
        return name, None, None
    sha256, _, path = rest.partition("|")
    return name, sha256, Path(path)


def tokenizer(key: str) -> Callable[[str], list[str]]:
    """The tokenizer of `key`: lower-cased tokens, blank tokens dropped."""
    return steps(key)


@cache
def steps(key: str) -> Steps:
    """The tokenizer of `key` as its two steps."""
    name, sha256, path = _parts(key)
    user_dict = None
    if path is not None:
        try:
            user_dict = read_user_dict(path)
        except ValueError as exc:
            raise RagError(f"user dictionary: {exc}") from None
        if user_dict.sha256 != sha256:
            raise RagError(f"the user dictionary {display(path)} changed while the gate ran; run it again")
    if name == "jieba-rs":
        return _jieba_rs(user_dict)
    if name in JIEBA:
        return _jieba(name == "jieba-search", user_dict)
    if user_dict is not None:
        raise ValueError(f"tokenizer {name!r} takes no user dictionary")
    if name == "whitespace":
        return Steps(partial(map, str.split), str.lower)
    if name == "english":
        return Steps(partial(map, _english()), None)
    raise ValueError(f"unknown tokenizer {name!r}")


def load(key: str) -> float | None:
    """Build the tokenizer of `key` (jieba's dictionary, a user dictionary) unless built: the milliseconds
    it took, or None when it was built already."""
    before = steps.cache_info().misses
    started = time.perf_counter()
    steps(key)
    return (time.perf_counter() - started) * 1000.0 if steps.cache_info().misses > before else None


def describe(key: str) -> str:
    """`name version` (and the user dictionary's digest), the form the fingerprint and the cache record."""
    from importlib.metadata import PackageNotFoundError, version

    name, sha256, _ = _parts(key)
    if name == "jieba-rs":
        try:
            found = f"jieba-rs (rjieba {version('rjieba')})"
        except PackageNotFoundError:  # the run fails with the extra's line; the record says why
            found = "jieba-rs (rjieba not installed)"
    elif name in JIEBA:
        found = f"{name} {version('jieba')}"
    elif name == "english":
        found = f"english {ENGLISH_VERSION} (snowball stop list, PyStemmer {version('PyStemmer')})"
    else:
        found = name
    return found if sha256 is None else f"{found}, user dictionary sha256 {sha256}"


def _index(key: str, folder: Path) -> Path | None:
    """The dictionary index (`jieba_index`) for `key` in the token cache's `folder`: jieba's own tokenizers
    without a user dictionary only (one changes the dictionary)."""
    from .jieba_index import index_path

    name, _, path = _parts(key)
    return index_path(folder) if name in ("jieba", "jieba-search") and path is None else None


def few(key: str, texts: Sequence[str], folder: Path) -> bool:
    """Whether `few_steps` cuts `texts`: few characters, and the index is in the token cache's `folder`."""
    from .jieba_index import FEW

    if sum(map(len, texts)) > FEW:
        return False
    index = _index(key, folder)
    return index is not None and index.is_file()


def few_steps(key: str, texts: Sequence[str], folder: Path) -> Steps | None:
    """The tokenizer of `key` for `texts` alone (`few`), from the index's words among their substrings: the
    same tokens as the whole dictionary's, with no dictionary loaded. None when the index cannot be read."""
    from .jieba_index import words_in

    index = _index(key, folder) if few(key, texts, folder) else None
    words = words_in(index, list(texts)) if index is not None else None
    if words is None:
        return None
    return Steps(cutter(words, _parts(key)[0] == "jieba-search", force_split(None)), _lower_unless_blank)


def keep_index(key: str, folder: Path | None) -> None:
    """Write the dictionary index into the token cache's `folder` (None: not writable) when `key` reads
    jieba's dictionary, this process loaded it (never loaded for this), and the index is not there yet."""
    from .jieba_index import keep

    index = _index(key, folder) if folder is not None and _PLAIN else None
    if index is not None and not index.is_file():
        try:
            keep(index, _PLAIN[0].FREQ, _PLAIN[0].total)
        except OSError:
            pass  # a cache that cannot be written: the next run loads the dictionary again
