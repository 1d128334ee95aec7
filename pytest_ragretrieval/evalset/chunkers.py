"""The chunkers that cut documents into the chunks every retriever reads (`[tool.ragretrieval.chunker]`).

Each built-in cuts a document into units that tile it (tokens, sentences, markdown sections, the recursive
chunker's pieces), each unit running to where the next begins, so the whitespace between two belongs to the
first; a chunk is a window of consecutive units, and its text is exactly the document's `text[start:end]`.
A cap (`recursive`'s and `markdown`'s `size`, `sentences`' `cap`) holds for every chunk: a unit over it is cut
again at lines, sentences, words and, last, characters, and a window takes only the units that fit. Offsets are
Python string offsets (code points). Written here rather than taken from chonkie (PyPI): its named
tokenizers are downloaded from a model hub at first use (network at run time) and version 1.7 brings a
compiled core and an HTTP client; these are small, exact and need nothing. pysbd, sentencex and
semantic-text-splitter were set beside the sentence ends and `recursive` on the project's texts
(benchmarks/chunkers.py, docs/performance.md): slower, one language per document, or trimmed chunks.

A team's chunker (`python`) runs in a process of its own (evalset/team_chunker.py).
"""
from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any

from ..core.errors import FixtureError
from .documents import Document
from .records import Chunk
from .team_chunker import Piece, team_pieces
from .tokenizers import NAMES as EMBEDDER_TOKENIZERS
from .tokenizers import counter as embedder_counter
from .tokenizers import identity as tokenizer_identity

TYPES = ("tokens", "sentences", "markdown", "recursive", "python")
TIMEOUT = 60.0
"""Seconds a team's chunker may take on one document (loading its module counts as one): `timeout`."""
TOKENIZERS = ("unicode", "chars", "characters")
"""`unicode`: a CJK character, a run of other letters and digits, or any other non-space character is one
token; `chars`: every non-space code point is one (kept for the configs that name it: 512 of them are about
612 characters of English); `characters`: every code point is one, spaces and line ends included."""
UNITS = ("characters", "tokens")
"""What a cap counts: every character, or the tokens of the chunker's `tokenizer`: one of TOKENIZERS, or an
embedder's own (evalset/tokenizers.py: `embedder`, the configured one's, or one named)."""
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_TOKEN = {
    "unicode": re.compile(rf"[{_CJK}]|(?:(?![{_CJK}])\w)+|\S"),
    "chars": re.compile(r"\S"),
    "characters": re.compile(r".", re.DOTALL),
}
_SENTENCE_END = re.compile(r"[.!?]+[\"')\]”’]*(?=\s|$)|[。！？…]+[”’」』）)]*|\n(?:[ \t]*\n)+")
"""An English sentence ends at . ! ? (and closing quotes) before a space or the end; a Chinese one at
。！？… (and closing quotes), space or not; a blank line ends one too."""
_ABBREVIATION = re.compile(
    r"(?:^|(?<=[\s(\[\"“‘']))(?:(?:Mr|Mrs|Ms|Dr|Prof|Sr|Jr|St|Mt|Gen|Col|Capt|Lt|Sgt|Rev|Hon|Gov|Sen|Rep|vs|cf|al|"
    r"approx|dept|est|ca|Inc|Ltd|Co|Corp|Bros|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.|"
    r"(?:[A-Za-z]\.){2,}|[A-Z]\.)$")
"""A `.` after one of these does not end a sentence: a title or a common abbreviation (Dr., Inc., vs.),
letters with dots (U.S., e.g., i.e., a.m.) or an initial (J.)."""
_NUMBERED = re.compile(r"(?:^|(?<=[\s(\[]))(?:No|Nos|Fig|Figs|Eq|Eqs|Vol|Vols|pp|p|Art|Sec|Ch|Tab|Ref|Refs)\.$")
"""These (No., Fig., pp.) end no sentence when a number follows ("Fig. 3"); "No." before a word may."""
_ETC = re.compile(r"(?:^|(?<=\s))etc\.$")
""""etc." ends a sentence only when a capital letter follows."""
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t#]*$", re.MULTILINE)
_FENCE = re.compile(r"^(```|~~~)", re.MULTILINE)
_PARAGRAPH = re.compile(r"\n(?:[ \t]*\n)+")


@dataclass(frozen=True)
class Chunker:
    """The chunker as configured: `size` and `overlap` count tokens (`tokens`) or sentences (`sentences`);
    for `recursive` and `markdown`, `size` is the cap, in `unit`s (and `overlap`, `recursive`'s, too)."""

    type: str
    size: int = 0
    overlap: int = 0
    tokenizer: str = "unicode"
    python: str = ""
    timeout: float = TIMEOUT
    """`python`: the seconds it may take on one document; not in the fingerprint, the chunks are the same."""
    cap: int = 0
    """`sentences`: the most `unit`s a chunk may hold (0: no cap)."""
    unit: str = "characters"
    """What a cap counts: `characters` (every one) or `tokens` (of `tokenizer`)."""

    def described(self) -> dict[str, Any]:
        """What the fingerprint records: the type and the parameters it uses. `sentences` and `markdown`
        record `version` 2 (abbreviations, 。！？ without ；, no chunk over the cap): a baseline recorded
        by an older gate shows a changed chunker, as its chunks may differ. An embedder's tokenizer is
        recorded with its identity (`tokenizer_id`): a new vocabulary is a new chunker."""
        unit: dict[str, Any] = {"unit": self.unit}
        if self.unit == "tokens":
            unit["tokenizer"] = self.tokenizer
            if self.tokenizer in EMBEDDER_TOKENIZERS:
                unit["tokenizer_id"] = tokenizer_identity(self.tokenizer)
        if self.type == "tokens":
            return {"type": self.type, "size": self.size, "overlap": self.overlap, "tokenizer": self.tokenizer}
        if self.type == "sentences":
            capped = {"cap": self.cap, **unit} if self.cap else {}
            return {"type": self.type, "size": self.size, "overlap": self.overlap, "version": 2, **capped}
        if self.type == "markdown":
            return {"type": self.type, "size": self.size, "version": 2, **unit}
        if self.type == "recursive":
            return {"type": self.type, "size": self.size, "overlap": self.overlap, **unit}
        return {"type": self.type, "python": self.python}


def chunk_documents(documents: Sequence[Document], chunker: Chunker, root: Path) -> tuple[Chunk, ...]:
    """Every document cut by the chunker; ids `<doc>#<n>` from 0 in document order, so an unchanged
    document keeps its ids whatever happens to the others."""
    if chunker.type == "python":
        cuts = team_pieces(documents, chunker.python, chunker.timeout, root)
    else:
        cut = _splitter(chunker)
        cuts = [cut(document) for document in documents]
    chunks: list[Chunk] = []
    for document, pieces in zip(documents, cuts, strict=True):
        for number, (start, end, metadata) in enumerate(pieces):
            chunks.append(Chunk(id=f"{document.id}#{number}", text=document.text[start:end], doc=document.id,
                                metadata={**document.metadata, **metadata}, start=start, end=end))
    if not chunks:
        raise FixtureError("the chunker cut no chunk from the documents (every document is empty)")
    return tuple(chunks)


def _splitter(chunker: Chunker) -> Callable[[Document], list[Piece]]:
    if chunker.type == "tokens":
        return lambda d: _plain(windows(token_bounds(d.text, chunker.tokenizer), chunker.size, chunker.overlap))
    if chunker.type == "sentences":
        if chunker.cap:
            return lambda d: _plain(capped_sentences(d.text, chunker))
        return lambda d: _plain(windows(sentence_bounds(d.text), chunker.size, chunker.overlap))
    if chunker.type == "recursive":
        return lambda d: _plain(recursive_spans(d.text, chunker))
    return lambda d: markdown_pieces(d.text, chunker.size, chunker)


def _plain(spans: Iterable[tuple[int, int]]) -> list[Piece]:
    return [(start, end, {}) for start, end in spans]


def token_bounds(text: str, tokenizer: str) -> list[int]:
    """Where each token's unit starts (the first at 0), then the text's length: a unit runs from its
    token to the next token, so the units tile the text. No token: []."""
    starts = [match.start() for match in _TOKEN[tokenizer].finditer(text)]
    return [0, *starts[1:], len(text)] if starts else []


def sentence_bounds(text: str) -> list[int]:
    """Where each sentence starts (the first at 0), then the text's length; a sentence keeps the
    whitespace after its end. Whitespace only: []."""
    if not text.strip():
        return []
    starts = [0]
    for match in _SENTENCE_END.finditer(text):
        if not _ends(text, match.start(), match.end()):
            continue
        after = match.end()
        while after < len(text) and text[after].isspace():
            after += 1
        if starts[-1] < after < len(text):
            starts.append(after)
    return [*starts, len(text)]


def _ends(text: str, start: int, end: int) -> bool:
    """Whether the `.` found at [start, end) ends its sentence: not after an abbreviation (`_ABBREVIATION`),
    nor after No./Fig./pp. before a number, nor after etc. before a lower-case word."""
    if text[start:end].rstrip("\"')]”’") != ".":
        return True
    begin = start
    while begin > 0 and start - begin < 24 and not text[begin - 1].isspace():
        begin -= 1
    word = text[begin:end].rstrip("\"')]”’")
    after = text[end:end + 40].lstrip()
    if _ABBREVIATION.search(word):
        return False
    if _NUMBERED.search(word):
        return not after[:1].isdigit()
    if _ETC.search(word):
        return after[:1].isupper()
    return True


def windows(bounds: Sequence[int], size: int, overlap: int) -> list[tuple[int, int]]:
    """Windows of `size` consecutive units, each starting `size - overlap` units after the one before,
    the last ending with the last unit."""
    count = len(bounds) - 1
    found: list[tuple[int, int]] = []
    first = 0
    while count > 0:
        last = min(first + size, count)
        found.append((bounds[first], bounds[last]))
        if last == count:
            break
        first += max(1, size - overlap)
    return found


def markdown_pieces(text: str, size: int, chunker: Chunker | None = None) -> list[Piece]:
    """Heading sections (a heading line and what follows until the next heading), the text before the
    first heading a section of its own; a section over `size` (in the chunker's unit, characters by
    default) is cut like `recursive` without overlap: paragraphs packed greedily, and one over `size`
    cut at lines, sentences, words, characters, so no piece is over `size`. Each piece's metadata holds
    its heading path, `headings`: the titles from the top level down to its own section's."""
    if not text.strip():
        return []
    measure = Measure(text, chunker or Chunker("markdown", size=size))
    fenced = _fenced(text)
    heads = [m for m in _HEADING.finditer(text) if not any(a <= m.start() < b for a, b in fenced)]
    starts = sorted({0, *(m.start() for m in heads)})
    titles = {m.start(): (len(m.group(1)), m.group(2)) for m in heads}
    if len(starts) > 1 and not text[:starts[1]].strip():
        titles[0] = titles[starts[1]]  # blank lines before the first heading join its section
        starts = [0, *starts[2:]]
    path: list[tuple[int, str]] = []
    pieces: list[Piece] = []
    for start, end in zip(starts, [*starts[1:], len(text)], strict=True):
        if start in titles:
            level, title = titles[start]
            path = [*(entry for entry in path if entry[0] < level), (level, title)]
        metadata = {"headings": [title for _, title in path]}
        for piece in packed(measure, start, end, size, 0):
            pieces.append((*piece, metadata))
    return pieces


def _fenced(text: str) -> list[tuple[int, int]]:
    """The code blocks (``` or ~~~ fences): a `#` line inside one is code, not a heading."""
    marks = [m.start() for m in _FENCE.finditer(text)]
    return [(marks[i], marks[i + 1] if i + 1 < len(marks) else len(text)) for i in range(0, len(marks), 2)]


LONGEST = 32
"""Characters a token of an embedder's tokenizer is taken to cover at most, to skip counting long slices."""


class Measure:
    """How big a slice of one text is in the chunker's unit: its characters, the tokens that start in it
    (so the sizes of slices that tile a span add up to the span's), or, for an embedder's tokenizer, the
    tokens of the slice's text read alone (evalset/tokenizers.py), each slice counted once."""

    def __init__(self, text: str, chunker: Chunker) -> None:
        self.text = text
        self.starts: list[int] | None = None
        self.count: Callable[[str], int] | None = None
        self.known: dict[tuple[int, int], int] = {}
        self.solid: list[int] = []
        """For an embedder's tokenizer: how many characters before each offset are not whitespace."""
        if chunker.unit == "tokens" and chunker.tokenizer in EMBEDDER_TOKENIZERS:
            self.count = embedder_counter(chunker.tokenizer)
            self.solid = list(accumulate((not character.isspace() for character in text), initial=0))
        elif chunker.unit == "tokens":
            self.starts = token_bounds(text, chunker.tokenizer)[:-1]

    def within(self, start: int, end: int, size: int) -> bool:
        """Whether [start, end) is at most `size`. For an embedder's tokenizer, a slice with more than
        `LONGEST` non-space characters a token is over without being counted (a token is a word piece):
        counting a whole document costs seconds, and a slice cut that fitted is packed back together."""
        if self.count is not None and self.solid[end] - self.solid[start] > size * LONGEST:
            return False
        return self(start, end) <= size

    def __call__(self, start: int, end: int) -> int:
        if self.count is not None:
            if (start, end) not in self.known:
                self.known[start, end] = self.count(self.text[start:end])
            return self.known[start, end]
        if self.starts is None:
            return end - start
        return bisect_left(self.starts, end) - bisect_left(self.starts, start)


_LINE = re.compile(r"\n\s*")
_SPACE = re.compile(r"\s+")


def _cuts(level: int, text: str, start: int, end: int) -> list[int]:
    """Where level `level` cuts [start, end): after a blank line, a line end, a sentence, a space run;
    the last level, after every character."""
    if level == 0:
        return [m.end() for m in _PARAGRAPH.finditer(text, start, end)]
    if level == 1:
        return [m.end() for m in _LINE.finditer(text, start, end)]
    if level == 2:
        return [start + b for b in sentence_bounds(text[start:end])[1:-1]]
    if level == 3:
        return [m.end() for m in _SPACE.finditer(text, start, end)]
    return list(range(start + 1, end))


LEVELS = 5


def pieces_within(measure: Measure, start: int, end: int, size: int, level: int = 0) -> list[tuple[int, int]]:
    """[start, end) cut into pieces that tile it, each at most `size`: at blank lines, then each piece
    still over at line ends, then sentences, then spaces, then characters."""
    if level >= LEVELS or measure.within(start, end, size):
        return [(start, end)]
    found: list[tuple[int, int]] = []
    begin = start
    for cut in [*(c for c in _cuts(level, measure.text, start, end) if start < c < end), end]:
        if cut > begin:
            found.extend(pieces_within(measure, begin, cut, size, level + 1))
            begin = cut
    return found


def packed(measure: Measure, start: int, end: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """[start, end)'s pieces (`pieces_within`) packed greedily into chunks of at most `size`, each next
    chunk starting with the last pieces of the one before that measure at most `overlap` together (and
    fit in `size` with the piece that did not), as LangChain's RecursiveCharacterTextSplitter merges its
    splits (which strips what we keep)."""
    pieces = pieces_within(measure, start, end, size)
    found: list[tuple[int, int]] = []
    first = 0
    while first < len(pieces):

        def fits(at: int, begin: int = pieces[first][0]) -> bool:
            return measure(begin, pieces[at][1]) <= size

        last = _furthest(fits, _summed(measure, pieces, first, size), len(pieces) - 1)
        found.append((pieces[first][0], pieces[last][1]))
        if last == len(pieces) - 1:
            break

        def repeats(at: int, end: int = pieces[last][1], grown: int = pieces[last + 1][1]) -> bool:
            return measure(pieces[at][0], end) <= overlap and measure(pieces[at][0], grown) <= size

        first = _furthest(repeats, last + 1, first + 1)
    return [(a, b) for a, b in found if measure.text[a:b].strip()]


def _summed(measure: Measure, pieces: Sequence[tuple[int, int]], first: int, size: int) -> int:
    """Where the chunk that starts at piece `first` ends by the sum of its pieces' sizes (at least one
    piece), back while it is over `size` counted whole: the end itself for characters and our tokens,
    which add up; a start, close to it, for an embedder's counts, which need not."""
    last, total = first, measure(*pieces[first])
    while last + 1 < len(pieces) and total + measure(*pieces[last + 1]) <= size:
        last += 1
        total += measure(*pieces[last])
    while last > first and measure(pieces[first][0], pieces[last][1]) > size:
        last -= 1
    return last


def _furthest(good: Callable[[int], bool], start: int, stop: int) -> int:
    """From `start` (taken as good) toward `stop`, the furthest index found good, in steps that double
    after a good one and halve at a bad one, until the next index is bad or `stop` is reached. Where the
    measure grows with the slice (characters, our tokens) that is the last good index; an embedder's
    counts need not grow so (an over-long word is one [UNK]), and a chunk is still counted whole and
    within `size`, in a few counts rather than one a piece."""
    sign = 1 if stop >= start else -1
    at, step = start, 1
    while at != stop:
        probe = at + sign * min(step, abs(stop - at))
        if good(probe):
            at, step = probe, step * 2
        elif step > 1:
            step //= 2
        else:
            break
    return at


def recursive_spans(text: str, chunker: Chunker) -> list[tuple[int, int]]:
    """`recursive`: the document cut at paragraphs, lines, sentences, words and characters until every
    piece fits in `size`, the pieces packed into chunks of at most `size` overlapping by up to `overlap`."""
    if not text.strip():
        return []
    return packed(Measure(text, chunker), 0, len(text), chunker.size, chunker.overlap)


def capped_sentences(text: str, chunker: Chunker) -> list[tuple[int, int]]:
    """`sentences` with a `cap`: windows of up to `size` sentences overlapping by `overlap`, each holding
    only the sentences that fit in `cap` (a sentence over it cut like `recursive`, without overlap, its
    chunks units of their own)."""
    measure = Measure(text, chunker)
    bounds = sentence_bounds(text)
    units = [piece for a, b in zip(bounds, bounds[1:], strict=False)
             for piece in packed(measure, a, b, chunker.cap, 0)]
    found: list[tuple[int, int]] = []
    first = 0
    while first < len(units):
        last = first + 1
        while (last < len(units) and last - first < chunker.size
               and measure(units[first][0], units[last][1]) <= chunker.cap):
            last += 1
        found.append((units[first][0], units[last - 1][1]))
        if last == len(units):
            break
        first = max(first + 1, last - chunker.overlap)
    return found
