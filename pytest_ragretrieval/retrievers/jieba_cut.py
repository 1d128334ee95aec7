"""jieba 0.42.1's accurate and search modes (HMM on): the same tokens, 1.3 to 1.7 times as fast.

Cold runs spent most of their time in jieba (8.4 of 13.3 s at 20,000 chunks, on two cores): its
`get_DAG` builds a dict of lists per block, `calc` a generator and a tuple `max` per character,
and the HMM's `viterbi` dicts and copied path lists per character. The same algorithm written as
one backward loop (the word graph and the best route together) and a four-state Viterbi with
back-pointers performs the same floating-point operations in the same order and breaks ties the
same way (`max` over `(score, position)` and `(score, state)` tuples: the larger position, the
later state letter), so every token is jieba's. `tests/unit/test_jieba_cut.py` checks that against
jieba itself on the sample, a synthetic corpus, user dictionaries and generated text. Another
jieba version gets jieba's own functions (`cutter`), since its algorithm may differ.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from math import inf, log
from typing import Any

VERSION = "0.42.1"
"""The jieba release whose algorithm this module repeats."""
STEPS = (("B", "E", "S"), ("M", "B", "M"), ("E", "B", "M"), ("S", "E", "S"))
"""Each HMM state and the two states it can follow (jieba's `PrevStatus`), the later letter second:
it wins a tie."""


def cutter(tokenizer: Any, search: bool) -> Callable[[str], Iterable[str]]:
    """The cut (or cut for search) of an initialised `jieba.Tokenizer`: ours for jieba 0.42.1, jieba's otherwise."""
    import jieba

    if jieba.__version__ != VERSION:
        return tokenizer.cut_for_search if search else tokenizer.cut  # type: ignore[no-any-return]
    fast = Cut(tokenizer)
    return fast.cut_for_search if search else fast.cut


class Cut:
    """jieba's `Tokenizer.cut(sentence)` and `cut_for_search(sentence)` (HMM on) over its dictionary.

    It reads the tokenizer's prefix dictionary and total at each call, as jieba does, so words
    added later count; the HMM's tables and force-split words are jieba's module globals."""

    def __init__(self, tokenizer: Any) -> None:
        import jieba
        from jieba import finalseg

        self._tokenizer = tokenizer
        self._finalseg = finalseg
        self._blocks = jieba.re_han_default
        self._skip = jieba.re_skip_default
        self._han = finalseg.re_han
        self._han_skip = finalseg.re_skip
        emit, trans = finalseg.emit_P, finalseg.trans_P
        self._start = {state: (probability, emit[state].get) for state, probability in finalseg.start_P.items()}
        self._steps = tuple(
            (state, emit[state].get, early, trans[early].get(state, finalseg.MIN_FLOAT), late,
             trans[late].get(state, finalseg.MIN_FLOAT))
            for state, early, late in STEPS
        )

    def cut(self, sentence: str) -> list[str]:
        """jieba's `cut(sentence)`: Han-and-word blocks by the DAG, whitespace kept, other characters one by one."""
        blocks, skip = self._blocks, self._skip
        words: list[str] = []
        for block in blocks.split(sentence):
            if not block:
                continue
            if blocks.match(block):
                self._cut_block(block, words)
            else:
                for part in skip.split(block):
                    if skip.match(part):
                        words.append(part)
                    else:
                        words.extend(part)
        return words

    def cut_for_search(self, sentence: str) -> list[str]:
        """jieba's `cut_for_search(sentence)`: a long word's dictionary 2- and 3-grams before it."""
        get = self._tokenizer.FREQ.get
        words: list[str] = []
        for word in self.cut(sentence):
            for size in (2, 3):
                if len(word) > size:
                    words.extend(gram for gram in (word[i:i + size] for i in range(len(word) - size + 1)) if get(gram))
            words.append(word)
        return words

    def _ends(self, sentence: str) -> list[int]:
        """For each position, where the best route's word from it ends: jieba's `get_DAG` and `calc` in one loop.

        jieba takes `max` over `(score, end)` for the ends in its graph (the words starting here,
        else the character alone), so of equal scores the longer word wins: `>=` over rising ends."""
        get = self._tokenizer.FREQ.get
        logtotal = log(self._tokenizer.total)
        n = len(sentence)
        score = [0.0] * (n + 1)
        ends = [0] * n
        for start in range(n - 1, -1, -1):
            count = get(sentence[start])
            if count:
                best, end = log(count) - logtotal + score[start + 1], start
            else:
                best, end = -inf, -1
            if count is not None:
                for stop in range(start + 2, n + 1):
                    count = get(sentence[start:stop])
                    if count is None:
                        break
                    if count:
                        value = log(count) - logtotal + score[stop]
                        if value >= best:
                            best, end = value, stop - 1
            if end < 0:
                best, end = -logtotal + score[start + 1], start
            score[start] = best
            ends[start] = end
        return ends

    def _cut_block(self, sentence: str, words: list[str]) -> None:
        """jieba's `__cut_DAG`: runs of single characters that are no word go to the HMM. jieba grows
        the run a character at a time (`buf += ...`, quadratic on a long run); we slice it once."""
        ends = self._ends(sentence)
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
        elif not self._tokenizer.FREQ.get(buf):
            self._hmm(buf, words)
        else:
            words.extend(buf)

    def _hmm(self, sentence: str, words: list[str]) -> None:
        """jieba's `finalseg.cut`: Han runs by Viterbi (force-split words as characters), the rest as is."""
        han, skip = self._han, self._han_skip
        force_split = self._finalseg.Force_Split_Words
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
            if state == "B":
                begin = i
            elif state == "E":
                words.append(sentence[begin:i + 1])
                following = i + 1
            elif state == "S":
                words.append(sentence[i])
                following = i + 1
        if following < len(sentence):
            words.append(sentence[following:])
        return words

    def _viterbi(self, sentence: str) -> str:
        """jieba's `finalseg.viterbi`: each sum `previous + transition + emission` in that order; of
        equal scores the later state letter wins, as jieba's `max` over `(score, state)`."""
        from jieba.finalseg import MIN_FLOAT

        first = sentence[0]
        score = {state: start + emission(first, MIN_FLOAT) for state, (start, emission) in self._start.items()}
        back = []
        for char in sentence[1:]:
            new: dict[str, float] = {}
            came: dict[str, str] = {}
            for state, emission, early, from_early, late, from_late in self._steps:
                here = emission(char, MIN_FLOAT)
                by_early, by_late = score[early] + from_early + here, score[late] + from_late + here
                if by_late >= by_early:
                    new[state], came[state] = by_late, late
                else:
                    new[state], came[state] = by_early, early
            back.append(came)
            score = new
        state = "S" if score["S"] >= score["E"] else "E"
        path = [state]
        for came in reversed(back):
            state = came[state]
            path.append(state)
        return "".join(reversed(path))
