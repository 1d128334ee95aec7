"""jieba user dictionaries (a bm25 retriever's `user_dict`): read as jieba reads them, every line checked.

The file is production's own: one entry per line, `word [frequency] [tag]`, read exactly as
`jieba.load_userdict` reads it: the file split at each `\n`, each line stripped of ASCII whitespace
as bytes, decoded as UTF-8, then stripped of leading byte-order marks (on every line, so two
dictionaries concatenated read as jieba reads them), blank lines skipped, and matched with jieba's
own rule (`tests/unit/test_user_dict.py` checks this against jieba over generated files). Where
jieba would take a line we refuse, one line names file:line: a word holding whitespace (jieba
never cuts one as a token, and it is almost always a frequency or tag written in the wrong place),
a word longer than MAX_WORD characters (jieba adds every prefix of a word to its dictionary, so a
word's cost grows with the square of its length), a frequency no float holds. The entries, in file
order (a word's suggested frequency depends on the ones before it), are what the tokenizer is given
and what the digest is over: reformatting a blank line changes nothing, changing an entry does.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..files.jsontext import fits_float
from ..files.paths import Unreadable, display, read_input

LINE = re.compile(r"^(.+?)( [0-9]+)?( [a-z]+)?$")
"""`jieba.re_userdict`: a word, then optionally ' frequency' and ' tag', one space before each."""
FORMAT = "'word [frequency] [tag]' (a word without spaces, a whole-number frequency, a lower-case tag)"
MAX_WORD = 100
"""The longest word a user dictionary may hold, in characters. jieba 0.42.1's own dictionary tops out
at 16 (侵华日军南京大屠杀遇难同胞纪念馆); a word of 100,000 characters took 23 GB before the OOM killer."""
MAX_LINE = 1000
"""A longer line holds a word longer than MAX_WORD (or a frequency no float holds): refused before it is matched."""
_ASCII_SPACE = b" \t\n\r\x0b\x0c"
"""What `bytes.strip()` strips, as jieba strips each line."""
_SPACES = " \t\r\f\v\x85\u3000"

Entry = tuple[str, int | None, str | None]


@dataclass(frozen=True)
class UserDict:
    """A user dictionary as read: its entries in file order, and their digest."""

    entries: tuple[Entry, ...]

    @property
    def sha256(self) -> str:
        text = json.dumps([list(entry) for entry in self.entries], ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_user_dict(path: Path) -> UserDict:
    """The dictionary at `path`; any problem is a ValueError of one line naming the file (and line)."""
    name = display(path)
    try:
        data = read_input(path)
    except Unreadable as exc:
        raise ValueError(f"no file at {name} (the path is relative to the config's folder)" if exc.missing
                         else f"{name} {exc}") from None
    entries: list[Entry] = []
    offset = 0
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            line = raw.strip(_ASCII_SPACE).decode("utf-8").lstrip("\ufeff")
        except UnicodeDecodeError as exc:
            at = offset + raw.find(raw.strip(_ASCII_SPACE)) + exc.start
            raise ValueError(f"{name}:{number}: not UTF-8 ({exc.reason} at byte {at})") from None
        offset += len(raw) + 1
        if not line:
            continue
        if len(line) > MAX_LINE:
            raise ValueError(f"{name}:{number}: a line of {len(line):,} characters; a user dictionary's words "
                             f"may be {MAX_WORD} characters at most (jieba's own are 16 at most)")
        match = LINE.match(line)
        if match is None or any(space in match.group(1) for space in _SPACES):
            raise ValueError(f"{name}:{number}: expected {FORMAT}, got {_shown(line)}")
        word, frequency, tag = match.groups()
        if len(word) > MAX_WORD:
            raise ValueError(f"{name}:{number}: a word of {len(word):,} characters; a user dictionary's words "
                             f"may be {MAX_WORD} characters at most (jieba's own are 16 at most)")
        count = _frequency(frequency)
        if count is None:
            raise ValueError(f"{name}:{number}: the frequency {_shown(frequency.strip())} is too large; "
                             f"give a whole number up to 1e308 (jieba's own are below 1e6)")
        entries.append((word, count if frequency else None, tag.strip() if tag else None))
    return UserDict(tuple(entries))


def _frequency(text: str | None) -> int | None:
    """The frequency written (0 when none is), None when no float holds it (jsontext.fits_float)."""
    if not text:
        return 0
    digits = text.strip().lstrip("0") or "0"
    if len(digits) > 400:
        return None
    value = int(digits)
    return value if fits_float(value) else None


def _shown(text: str) -> str:
    return repr(text if len(text) <= 60 else f"{text[:50]}... ({len(text):,} characters)")
