"""jieba user dictionaries (a bm25 retriever's `user_dict`): read as jieba reads them, every line checked.

The file is production's own: one entry per line, `word [frequency] [tag]`, as
`jieba.load_userdict` takes it (UTF-8, a byte-order mark allowed, blank lines skipped). Each line is
matched with jieba's own rule; a word holding a space or a tab is refused, since jieba never cuts one
as a token (it is almost always a frequency or tag written in the wrong place). The entries, in file
order (a word's suggested frequency depends on the ones before it), are what the tokenizer is given
and what the digest is over: reformatting a blank line changes nothing, changing an entry does.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..paths import Unreadable, display, read_input

LINE = re.compile(r"^(.+?)( [0-9]+)?( [a-z]+)?$")
"""`jieba.re_userdict`: a word, then optionally ' frequency' and ' tag', one space before each."""
FORMAT = "'word [frequency] [tag]' (a word without spaces, a whole-number frequency, a lower-case tag)"

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
    try:
        text = data.decode("utf-8").lstrip("\ufeff")
    except UnicodeDecodeError as exc:
        where = data[: exc.start].count(b"\n") + 1
        raise ValueError(f"{name}:{where}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    entries: list[Entry] = []
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.strip(" \t\n\r\x0b\x0c")  # what jieba strips (bytes.strip: ASCII whitespace)
        if not line:
            continue
        match = LINE.match(line)
        if match is None or any(space in match.group(1) for space in " \t\r\f\v\x85\u3000"):
            raise ValueError(f"{name}:{number}: expected {FORMAT}, got {line!r}")
        word, frequency, tag = match.groups()
        entries.append((word, int(frequency) if frequency else None, tag.strip() if tag else None))
    return UserDict(tuple(entries))
