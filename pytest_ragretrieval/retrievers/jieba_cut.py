"""jieba 0.42.1's accurate and search modes (HMM on): the same tokens, about three times as fast.

Cold runs spent most of their time in jieba: its `get_DAG` builds a dict of lists per block and
looks each substring up alone (a few cache misses each in a half-million-key dict), `calc` runs a
generator and a tuple `max` per character, and the HMM's `viterbi` copies dicts and path lists
per character. Here the 1-, 2- and 3-character substrings of a batch of texts are looked up in
the dictionary as arrays (`key_table.py`), longer ones in the dict as jieba does; the word graph
and the best route are one backward loop; the Viterbi is a four-state step with back-pointers.
The same floating-point operations in the same order, ties broken the same way (`max` over
`(score, position)` and `(score, state)` tuples: the larger position, the later state letter),
so every token is jieba's. `tests/unit/test_jieba_cut.py` checks that against jieba itself on the
sample, a synthetic corpus, user dictionaries and generated text. Another jieba version gets
jieba's own functions (`cutter`), since its algorithm may differ.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from math import inf, log, nan
from typing import Any

import numpy as np

from .key_table import KeyTable

VERSION = "0.42.1"
"""The jieba release whose algorithm this module repeats."""
B, M, E, S = range(4)
"""The HMM's states, in jieba's letter order: of two equal scores the later letter wins."""
BATCH = 1 << 16
"""Characters of text whose substrings are looked up together: enough to make each array
operation's own cost small, few enough that the arrays stay a few megabytes."""
SHIFT = np.uint64(21)
"""Bits per code point (the largest is 0x10FFFF) when two or three are packed into one key."""
POINTS = 0x110000
"""Code points: the single characters' table is indexed by them."""

Split = Callable[[Sequence[str]], Iterable[list[str]]]
"""Many texts to their pieces, in order."""


def cutter(tokenizer: Any, search: bool, force_split: frozenset[str] | None = None) -> Split:
    """The cut (or cut for search) of an initialised `jieba.Tokenizer`, over many texts: ours for
    jieba 0.42.1, jieba's own otherwise. `force_split`: the tokenizer's own force-split words (see `Cut`)."""
    import jieba

    if jieba.__version__ != VERSION:
        cut: Callable[[str], Iterable[str]] = tokenizer.cut_for_search if search else tokenizer.cut
        return lambda texts: (list(cut(text)) for text in texts)
    fast = Cut(tokenizer, force_split)
    return fast.search_many if search else fast.cut_many


@dataclass(frozen=True)
class Grams:
    """Word scores of a batch's substrings by start position (`Cut._grams`)."""

    one: np.ndarray
    two: np.ndarray
    three: np.ndarray


def _tables(freq: dict[str, int], logtotal: float) -> tuple[np.ndarray, KeyTable, KeyTable]:
    """The dictionary's 1-, 2- and 3-character entries as word scores: `log(count) - logtotal`
    (math.log, as jieba computes it; numpy's log may differ in the last bit), NaN for a prefix
    that is no word (count 0); a substring the dictionary lacks reads +inf."""
    words = list(freq)
    lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
    score_of = {count: log(count) - logtotal if count else nan for count in set(freq.values())}
    scores = np.fromiter(map(score_of.__getitem__, freq.values()), dtype=np.float64, count=len(words))
    points = np.frombuffer("".join(words).encode("utf-32-le", "surrogatepass"), dtype="<u4").astype(np.uint64)
    starts = np.cumsum(lengths) - lengths
    keys = []
    for size in (1, 2, 3):
        chosen = np.flatnonzero(lengths == size)
        packed = np.zeros(chosen.size, dtype=np.uint64)
        for offset in range(size):
            packed = (packed << SHIFT) | points[starts[chosen] + offset]
        keys.append((packed, scores[chosen]))
    one = np.full(POINTS, inf)
    one[keys[0][0].astype(np.int64)] = keys[0][1]
    return one, KeyTable.build(*keys[1], inf), KeyTable.build(*keys[2], inf)


class Cut:
    """jieba's `Tokenizer.cut(sentence)` and `cut_for_search(sentence)` (HMM on) over its dictionary
    as it is when the Cut is made (the gate's tokenizers are its own, complete before their first
    cut; a later change to the dictionary is refused, not missed). The HMM's probabilities are
    read once, from jieba's module globals (nothing changes them). The force-split words (`add_word`
    with frequency 0 adds one) are jieba's one module-global set, which every tokenizer in the
    process shares: given `force_split`, this cut uses that set of its own instead, so one
    retriever's user dictionary cannot change another's tokens; without it, jieba's set as it is
    at each cut, as jieba itself reads it."""

    def __init__(self, tokenizer: Any, force_split: frozenset[str] | None = None) -> None:
        import jieba
        from jieba import finalseg

        self._tokenizer = tokenizer
        self._freq: dict[str, int] = tokenizer.FREQ
        self._made_with = (len(tokenizer.FREQ), tokenizer.total)
        self._logtotal = log(tokenizer.total)
        self._one, self._two, self._three = _tables(tokenizer.FREQ, self._logtotal)
        self._force_split: frozenset[str] | set[str] = (
            finalseg.Force_Split_Words if force_split is None else force_split)
        self._blocks = jieba.re_han_default
        self._skip = jieba.re_skip_default
        self._han = finalseg.re_han
        self._han_skip = finalseg.re_skip
        emit, trans, low = finalseg.emit_P, finalseg.trans_P, finalseg.MIN_FLOAT
        self._begin = tuple(finalseg.start_P[state] for state in "BMES")
        self._emissions = {
            char: tuple(emit[state].get(char, low) for state in "BMES") for char in set().union(*emit.values())
        }
        self._no_emission = (low, low, low, low)
        pairs = ("EB", "SB", "BM", "MM", "BE", "ME", "ES", "SS")
        self._transitions = tuple(trans[pair[0]].get(pair[1], low) for pair in pairs)

    def cut(self, sentence: str) -> list[str]:
        """jieba's `cut(sentence)`."""
        return next(self.cut_many((sentence,)))

    def cut_for_search(self, sentence: str) -> list[str]:
        """jieba's `cut_for_search(sentence)`."""
        return self._search(self.cut(sentence))

    def search_many(self, texts: Iterable[str], batch: int = BATCH) -> Iterator[list[str]]:
        """jieba's `cut_for_search` of each text: a long word's dictionary 2- and 3-grams before it."""
        return map(self._search, self.cut_many(texts, batch))

    def cut_many(self, texts: Iterable[str], batch: int = BATCH) -> Iterator[list[str]]:
        """jieba's `cut` of each text: Han-and-word blocks by the word graph, whitespace kept, other
        characters one by one. Texts are taken `batch` characters at a time (a longer text alone),
        so that their 1-, 2- and 3-character substrings are looked up in the dictionary as arrays."""
        if (len(self._freq), self._tokenizer.total) != self._made_with:
            raise RuntimeError("jieba's dictionary changed after this Cut was made; make a new one")
        waiting: list[str] = []
        size = 0
        for text in texts:
            waiting.append(text)
            size += len(text)
            if size >= batch:
                yield from self._cut_batch(waiting)
                waiting, size = [], 0
        if waiting:
            yield from self._cut_batch(waiting)

    def _cut_batch(self, texts: list[str]) -> Iterator[list[str]]:
        grams = self._grams("".join(texts))
        blocks, skip = self._blocks, self._skip
        at = 0
        for text in texts:
            words: list[str] = []
            for block in blocks.split(text):
                if not block:
                    continue
                if blocks.match(block):
                    self._cut_block(block, words, grams, at)
                else:
                    for part in skip.split(block):
                        if skip.match(part):
                            words.append(part)
                        else:
                            words.extend(part)
                at += len(block)
            yield words

    def _grams(self, text: str) -> Grams:
        """For each position of `text`, the dictionary's word score (log(count) - log(total)) of the
        1-, 2- and 3-character substring starting there: NaN for a prefix that is no word (count 0),
        +inf for a substring the dictionary lacks, or that runs past the end."""
        points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
        wide = points.astype(np.uint64)
        two = np.full(points.size, inf)
        three = np.full(points.size, inf)
        if points.size > 1:
            two[:-1] = self._two.get((wide[:-1] << SHIFT) | wide[1:])
        if points.size > 2:
            three[:-2] = self._three.get((wide[:-2] << (2 * SHIFT)) | (wide[1:-1] << SHIFT) | wide[2:])
        return Grams(self._one[points], two, three)

    def _search(self, cut: list[str]) -> list[str]:
        get = self._freq.get
        words: list[str] = []
        for word in cut:
            for size in (2, 3):
                if len(word) > size:
                    words.extend(gram for gram in (word[i:i + size] for i in range(len(word) - size + 1)) if get(gram))
            words.append(word)
        return words

    def _ends(self, sentence: str, grams: Grams, at: int) -> list[int]:
        """For each position, where the best route's word from it ends: jieba's `get_DAG` and `calc` in one loop.

        jieba looks a substring up only while the shorter one from the same start is in the
        dictionary (word or prefix), and takes `max` over `(score, end)` for the ends in its graph
        (the words starting here, else the character alone), so of equal scores the longer word
        wins: `>=` over rising ends. Scores are `log(count) - logtotal + score[end]`, as jieba adds
        them; the first three lengths come precomputed from `grams`, longer ones from the dict."""
        n = len(sentence)
        one = grams.one[at:at + n].tolist()
        two = grams.two[at:at + n].tolist()
        three = grams.three[at:at + n].tolist()
        two[-1] = three[-1] = inf  # substrings that run past this block
        if n > 1:
            three[-2] = inf
        get = self._freq.get
        logtotal = self._logtotal
        score = [0.0] * (n + 1)
        ends = [0] * n
        for start in range(n - 1, -1, -1):
            value = one[start]
            if value < 1.0:
                best, end = value + score[start + 1], start
            else:
                best, end = -inf, -1
            if value != inf and (value := two[start]) != inf:
                if value < 1.0 and (value := value + score[start + 2]) >= best:
                    best, end = value, start + 1
                if (value := three[start]) != inf:
                    if value < 1.0 and (value := value + score[start + 3]) >= best:
                        best, end = value, start + 2
                    for stop in range(start + 4, n + 1):
                        count = get(sentence[start:stop])
                        if count is None:
                            break
                        if count and (value := log(count) - logtotal + score[stop]) >= best:
                            best, end = value, stop - 1
            if end < 0:
                best, end = -logtotal + score[start + 1], start
            score[start] = best
            ends[start] = end
        return ends

    def _cut_block(self, sentence: str, words: list[str], grams: Grams, at: int) -> None:
        """jieba's `__cut_DAG` of the block at `at` of the batch: runs of single characters that are
        no word go to the HMM. jieba grows the run a character at a time (`buf += ...`, quadratic
        on a long run); we slice it once."""
        ends = self._ends(sentence, grams, at)
        append = words.append
        x = run = 0
        n = len(sentence)
        while x < n:
            y = ends[x] + 1
            if y - x > 1:
                if run < x:
                    self._single(sentence[run:x], words)
                append(sentence[x:y])
                run = y
            x = y
        if run < n:
            self._single(sentence[run:], words)

    def _single(self, buf: str, words: list[str]) -> None:
        """A run of single-character words: one character as is, a dictionary word as characters, else the HMM."""
        if len(buf) == 1:
            words.append(buf)
        elif not self._freq.get(buf):
            self._hmm(buf, words)
        else:
            words.extend(buf)

    def _hmm(self, sentence: str, words: list[str]) -> None:
        """jieba's `finalseg.cut`: Han runs by Viterbi (force-split words as characters), the rest as is."""
        han, skip = self._han, self._han_skip
        force_split = self._force_split
        for block in han.split(sentence):
            if han.match(block):
                for word in self._viterbi_words(block):
                    if word in force_split:
                        words.extend(word)
                    else:
                        words.append(word)
            else:
                words.extend(part for part in skip.split(block) if part)

    def _viterbi_words(self, sentence: str) -> list[str]:
        states = self._viterbi(sentence)
        words = []
        begin = following = 0
        for i, state in enumerate(states):
            if state == B:
                begin = i
            elif state == E:
                words.append(sentence[begin:i + 1])
                following = i + 1
            elif state == S:
                words.append(sentence[i])
                following = i + 1
        if following < len(sentence):
            words.append(sentence[following:])
        return words

    def _viterbi(self, sentence: str) -> list[int]:
        """jieba's `finalseg.viterbi` over states B, M, E, S (0 to 3), each following the two
        jieba's `PrevStatus` allows: each sum `previous + transition + emission` in that order;
        of equal scores the later state letter wins, as in jieba's `max` over `(score, state)`."""
        emissions, none = self._emissions, self._no_emission
        eb, sb, bm, mm, be, me, es, ss = self._transitions
        first = emissions.get(sentence[0], none)
        b, m, e, s = (start + emission for start, emission in zip(self._begin, first, strict=True))
        back = []
        for char in sentence[1:]:
            to_b, to_m, to_e, to_s = emissions.get(char, none)
            early, late = e + eb + to_b, s + sb + to_b  # B after E or S
            new_b, from_b = (late, S) if late >= early else (early, E)
            early, late = b + bm + to_m, m + mm + to_m  # M after B or M
            new_m, from_m = (late, M) if late >= early else (early, B)
            early, late = b + be + to_e, m + me + to_e  # E after B or M
            new_e, from_e = (late, M) if late >= early else (early, B)
            early, late = e + es + to_s, s + ss + to_s  # S after E or S
            new_s, from_s = (late, S) if late >= early else (early, E)
            back.append((from_b, from_m, from_e, from_s))
            b, m, e, s = new_b, new_m, new_e, new_s
        state = S if s >= e else E
        path = [state]
        for came in reversed(back):
            state = came[state]
            path.append(state)
        path.reverse()
        return path
