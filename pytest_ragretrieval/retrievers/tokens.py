"""Tokenizers for BM25; the chosen one and its version join the fingerprint."""
from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Callable
from functools import cache

TOKENIZERS = ("jieba", "whitespace", "english")

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


def _jieba() -> Callable[[str], list[str]]:
    import jieba

    jieba.setLogLevel(logging.WARNING)

    def tokenize(text: str) -> list[str]:
        return [token.lower() for token in jieba.cut(text) if token.strip()]

    return tokenize


def _whitespace(text: str) -> list[str]:
    return [token.lower() for token in text.split()]


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


@cache
def tokenizer(name: str) -> Callable[[str], list[str]]:
    """The tokenizer called `name`: lower-cased tokens, blank tokens dropped."""
    if name == "jieba":
        return _jieba()
    if name == "whitespace":
        return _whitespace
    if name == "english":
        return _english()
    raise ValueError(f"unknown tokenizer {name!r}")


def describe(name: str) -> str:
    """`name version`, the form the fingerprint records."""
    from importlib.metadata import version

    if name == "jieba":
        return f"jieba {version('jieba')}"
    if name == "english":
        return f"english {ENGLISH_VERSION} (snowball stop list, PyStemmer {version('PyStemmer')})"
    return name
