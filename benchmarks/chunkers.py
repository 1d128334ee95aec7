"""The built-in chunkers at size: every capped chunk within its cap, no character lost, every chunk an exact
slice, and the recursive chunker beside LangChain's RecursiveCharacterTextSplitter.

Texts (each at least 400,000 characters, paths on the command line; `--build DIR` writes them):

- English: the Python documentation's topics as the standard library ships them (`pydoc_data.topics`,
  the text `help()` shows), joined with blank lines;
- Chinese: sentences of jieba's dictionary words drawn by frequency (random.Random(42)), a comma now and
  then, each ending in 。！？ or …, three to eight to a paragraph (jieba's dictionary, MIT);
- Markdown: this project's docs/*.md, README.md and CONTRIBUTING.md, joined.

    python benchmarks/chunkers.py --build /tmp/texts
    python benchmarks/chunkers.py /tmp/texts/english.txt /tmp/texts/chinese.txt /tmp/texts/markdown.md \\
        [--langchain-site /tmp/lcvenv/lib/python3.11/site-packages]

`--langchain-site`: a site-packages holding langchain-text-splitters (a benchmark's, never the gate's
dependency); there, `RecursiveCharacterTextSplitter(chunk_size, chunk_overlap, add_start_index=True)`
cuts each text too, and the parity with `recursive` at the same size and overlap is counted: chunks
whose start and whitespace-stripped text are one of ours, and LangChain's own chunks whose text is not
`text[start_index:start_index + len]` (its start is found by searching, which can land on an earlier
copy). `--libraries-site`: a site-packages holding pysbd, sentencex and semantic-text-splitter; their
sentence ends beside ours on the suite's cases (tests/unit/data/chunking/sentences.json: a case is right
when the sentences, whitespace stripped, are the expected ones) and their time on each text, and
whether their offsets tile the text. `--excerpts DIR` writes the first ~20,000 characters of each text (cut at a paragraph) for the
suite (tests/unit/data/chunking/). `--tokenizers`: instead, each text in our `unicode` tokens and in the
embedders' own (evalset/tokenizers.py): characters per token, and `recursive` 256/32 in each, with how many
chunks of `unicode` 256/32 hold more than 256 of that tokenizer's tokens.
"""
from __future__ import annotations

import argparse
import itertools
import os
import platform
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from pytest_ragretrieval.evalset.chunkers import Chunker, chunk_documents, token_bounds  # noqa: E402
from pytest_ragretrieval.evalset.documents import Document  # noqa: E402
from pytest_ragretrieval.evalset.tokenizers import NAMES as EMBEDDER_TOKENIZERS  # noqa: E402
from pytest_ragretrieval.evalset.tokenizers import counter  # noqa: E402

CHUNKERS = (
    ("recursive 1000/200 characters", Chunker("recursive", size=1000, overlap=200), 1000),
    ("recursive 500/50 characters", Chunker("recursive", size=500, overlap=50), 500),
    ("recursive 256/32 unicode tokens", Chunker("recursive", size=256, overlap=32, unit="tokens"), 256),
    ("sentences 3, cap 1000 characters", Chunker("sentences", size=3, cap=1000), 1000),
    ("markdown 2000", Chunker("markdown", size=2000), 2000),
    ("tokens 1000/100 characters", Chunker("tokens", size=1000, overlap=100, tokenizer="characters"), 1000),
    ("tokens 512/64 unicode", Chunker("tokens", size=512, overlap=64), 0),
    ("sentences 3 (no cap)", Chunker("sentences", size=3), 0),
)
"""Name, chunker, and its cap (0: none) in its unit."""
PAIRS = ((1000, 200), (500, 50))


def build(folder: Path) -> None:
    """Write the three texts (see the module)."""
    import pydoc_data.topics

    import jieba

    folder.mkdir(parents=True, exist_ok=True)
    english = "\n\n".join(pydoc_data.topics.topics[key].strip() for key in sorted(pydoc_data.topics.topics))
    (folder / "english.txt").write_text(english, encoding="utf-8")
    words, weights = [], []
    dictionary = Path(jieba.__file__).parent / "dict.txt"
    for line in dictionary.read_text(encoding="utf-8").splitlines():
        word, count, *_ = line.split(" ")
        words.append(word)
        weights.append(int(count))
    cumulative = list(itertools.accumulate(weights))
    draw = random.Random(42)
    paragraphs, total = [], 0
    while total < 420_000:
        sentences = []
        for _ in range(draw.randint(3, 8)):
            parts = draw.choices(words, cum_weights=cumulative, k=draw.randint(6, 24))
            comma = draw.randint(2, len(parts) - 1)
            end = draw.choice("。。。。！？…")
            sentences.append("".join(parts[:comma]) + "，" + "".join(parts[comma:]) + (end if end != "…" else "……"))
        paragraphs.append("".join(sentences))
        total += len(paragraphs[-1]) + 2
    (folder / "chinese.txt").write_text("\n\n".join(paragraphs), encoding="utf-8")
    docs = [*sorted((HERE / "docs").glob("*.md")), HERE / "README.md", HERE / "CONTRIBUTING.md"]
    (folder / "markdown.md").write_text("\n\n".join(p.read_text(encoding="utf-8") for p in docs), encoding="utf-8")
    for name in ("english.txt", "chinese.txt", "markdown.md"):
        print(f"{folder / name}: {len((folder / name).read_text(encoding='utf-8')):,} characters")


def excerpts(texts: Sequence[Path], folder: Path, size: int = 20_000) -> None:
    """The first `size` characters of each text, up to the blank line before, for the suite."""
    folder.mkdir(parents=True, exist_ok=True)
    for path in texts:
        text = path.read_text(encoding="utf-8")
        cut = text.rfind("\n\n", 0, size)
        (folder / path.name).write_text(text[:cut].rstrip() + "\n", encoding="utf-8")


def measured(text: str, chunker: Chunker, start: int, end: int) -> int:
    if chunker.unit == "tokens" and chunker.type != "tokens":
        return len(token_bounds(text[start:end], chunker.tokenizer)) - 1 if text[start:end] else 0
    return end - start


def check(name: str, text: str, chunker: Chunker, cap: int) -> str:
    """One chunker on one text: chunks, the largest (in the cap's unit), over the cap, characters lost, not a slice."""
    started = time.perf_counter()
    chunks = chunk_documents([Document("t", text)], chunker, HERE)
    seconds = time.perf_counter() - started
    covered = bytearray(len(text))
    sliced = 0
    for chunk in chunks:
        assert chunk.start is not None and chunk.end is not None
        covered[chunk.start:chunk.end] = b"\x01" * (chunk.end - chunk.start)
        sliced += chunk.text != text[chunk.start:chunk.end]
    lost = sum(1 for at, flag in enumerate(covered) if not flag and not text[at].isspace())
    sizes = [measured(text, chunker, c.start or 0, c.end or 0) for c in chunks]
    over = sum(1 for size in sizes if cap and size > cap)
    unit = "tokens" if chunker.unit == "tokens" and chunker.type != "tokens" else "characters"
    largest = max(c.end - c.start for c in chunks if c.start is not None and c.end is not None)
    return (f"| {name} | {len(chunks):,} | {largest:,} | {max(sizes):,} {unit} | "
            f"{cap or '—'} | {over} | {lost} | {sliced} | {seconds:.2f} |")


def tokenizers(path: Path) -> None:
    """One text in each tokenizer: its tokens, characters per token, `recursive` 256/32 counted in it."""
    text = path.read_text(encoding="utf-8")
    ours = chunk_documents([Document("t", text)], Chunker("recursive", size=256, overlap=32, unit="tokens"), HERE)
    for name in ("unicode", *EMBEDDER_TOKENIZERS):
        count = counter(name) if name in EMBEDDER_TOKENIZERS else (lambda t: len(token_bounds(t, "unicode")) - 1)
        started = time.process_time()  # CPU seconds: the machine is shared
        chunks = chunk_documents([Document("t", text)], Chunker("recursive", size=256, overlap=32, unit="tokens",
                                                                tokenizer=name), HERE)
        seconds = time.process_time() - started
        tokens = count(text)
        over = sum(1 for chunk in ours if count(chunk.text) > 256)
        print(f"| {path.name} | {name} | {tokens:,} | {len(text) / tokens:.2f} | {len(chunks):,} | "
              f"{max(count(chunk.text) for chunk in chunks)} | {over} of {len(ours):,} | {seconds:.2f} |")


def _stripped(text: str, size: int, overlap: int) -> set[tuple[int, str]]:
    """Our recursive chunks as LangChain and semantic-text-splitter give theirs: (start, text) stripped."""
    found = set()
    for chunk in chunk_documents([Document("t", text)], Chunker("recursive", size=size, overlap=overlap), HERE):
        start = (chunk.start or 0) + len(chunk.text) - len(chunk.text.lstrip())
        found.add((start, chunk.text.strip()))
    return found


def langchain_parity(text: str, size: int, overlap: int) -> str:
    """LangChain's recursive splitter beside ours at the same size and overlap (see the module)."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    started = time.perf_counter()
    theirs = RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap,
                                            add_start_index=True).create_documents([text])
    seconds = time.perf_counter() - started
    mine = _stripped(text, size, overlap)
    same = sum(1 for doc in theirs if (doc.metadata["start_index"], doc.page_content) in mine)
    wrong = sum(1 for doc in theirs if text[doc.metadata["start_index"]:][:len(doc.page_content)] != doc.page_content)
    return (f"| {size}/{overlap} | {len(mine):,} | {len(theirs):,} | {same:,} ({same / len(theirs):.1%}) | "
            f"{wrong} | {seconds:.2f} |")


def libraries(texts: Sequence[Path]) -> None:
    """pysbd, sentencex and semantic-text-splitter's sentence level beside `sentence_bounds` (see the module)."""
    import json

    import pysbd
    import semantic_text_splitter
    import sentencex

    from pytest_ragretrieval.evalset.chunkers import sentence_bounds

    def ours(text: str, language: str) -> list[tuple[int, int]]:
        bounds = sentence_bounds(text)
        return list(zip(bounds, bounds[1:], strict=False))

    def sbd(text: str, language: str) -> list[tuple[int, int]]:
        return [(s.start, s.end) for s in pysbd.Segmenter(language=language, clean=False, char_span=True).segment(text)]

    def sentx(text: str, language: str) -> list[tuple[int, int]]:
        return [(b["start_index"], b["end_index"]) for b in sentencex.get_sentence_boundaries(language, text)]

    cases = json.loads((HERE / "tests/unit/data/chunking/sentences.json").read_text(encoding="utf-8"))
    print("\nsentence ends beside libraries\n")
    print(f"| splitter | cases right (of {len(cases)}) | "
          + " | ".join(f"{p.name}: seconds, tiles, sentence ends, of them ours" for p in texts) + " |")
    print("| --- | ---: |" + " ---: |" * len(texts))
    for name, split in (("ours", ours), ("pysbd 0.3.4", sbd), ("sentencex", sentx)):
        right = 0
        for case in cases:
            language = "zh" if not any("a" <= c.lower() <= "z" for c in case["text"]) else "en"
            found = [case["text"][a:b].strip() for a, b in split(case["text"], language)]
            right += [f for f in found if f] == [s.strip() for s in case["sentences"]]
        cells = []
        for path in texts:
            text = path.read_text(encoding="utf-8")
            language = "zh" if "chinese" in path.name else "en"
            started = time.perf_counter()
            spans = split(text, language)
            seconds = time.perf_counter() - started
            tiles = all(a <= b for (_, a), (b, _) in zip(spans, spans[1:], strict=False)) and not text[
                max((b for _, b in spans), default=0):].strip()
            mine, theirs = set(sentence_bounds(text)[1:-1]), {_next(text, b) for _, b in spans} - {len(text)}
            cells.append(f"{seconds:.2f}, {'yes' if tiles else 'no'}, {len(theirs):,} ends, "
                         f"{len(mine & theirs):,} ours")
        print(f"| {name} | {right} | " + " | ".join(cells) + " |")
    print("\nrecursive beside semantic-text-splitter's TextSplitter(capacity=size, overlap=overlap)\n")
    print("| text | size/overlap | ours | theirs | longest of theirs | same start and stripped text | seconds |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for path in texts:
        text = path.read_text(encoding="utf-8")
        for size, overlap in PAIRS:
            started = time.perf_counter()
            theirs = semantic_text_splitter.TextSplitter(size, overlap=overlap).chunk_indices(text)
            seconds = time.perf_counter() - started
            same = len(_stripped(text, size, overlap) & set(theirs))
            print(f"| {path.name} | {size}/{overlap} | {len(_stripped(text, size, overlap)):,} | {len(theirs):,} | "
                  f"{max(len(piece) for _, piece in theirs):,} | {same:,} ({same / len(theirs):.1%}) | {seconds:.2f} |")


def _next(text: str, end: int) -> int:
    """Where the next sentence starts: after the whitespace that follows `end`."""
    while end < len(text) and text[end].isspace():
        end += 1
    return end


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("texts", nargs="*", type=Path, help="english, chinese and markdown texts")
    parser.add_argument("--build", type=Path, help="write the three texts to this folder and stop")
    parser.add_argument("--excerpts", type=Path, help="write ~20,000-character excerpts of the texts here")
    parser.add_argument("--langchain-site", help="a site-packages with langchain-text-splitters")
    parser.add_argument("--libraries-site", help="a site-packages with pysbd, sentencex, semantic-text-splitter")
    parser.add_argument("--tokenizers", action="store_true", help="the texts in each tokenizer's tokens")
    args = parser.parse_args(argv)
    if args.tokenizers:
        print("| text | tokenizer | tokens | characters per token | recursive 256/32 chunks | largest (tokens) "
              "| unicode 256/32 chunks over 256 | CPU seconds |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for path in args.texts:
            tokenizers(path)
        return
    if args.build:
        build(args.build)
        return
    if args.excerpts:
        excerpts(args.texts, args.excerpts)
        return
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, {platform.platform()}")
    for path in args.texts:
        text = path.read_text(encoding="utf-8")
        print(f"\n{path.name}: {len(text):,} characters\n")
        print("| chunker | chunks | longest (characters) | largest in the cap's unit | cap | over the cap "
              "| characters lost | not a slice | seconds |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for name, chunker, cap in CHUNKERS:
            print(check(name, text, chunker, cap))
    if args.libraries_site:
        sys.path.append(args.libraries_site)
        libraries(args.texts)
    if args.langchain_site:
        sys.path.append(args.langchain_site)
        for path in args.texts:
            text = path.read_text(encoding="utf-8")
            print(f"\n{path.name}: recursive beside LangChain's RecursiveCharacterTextSplitter\n")
            print("| size/overlap | ours | LangChain's | same start and stripped text | LangChain's start_index "
                  "wrong | LangChain seconds |")
            print("| --- | ---: | ---: | ---: | ---: | ---: |")
            for size, overlap in PAIRS:
                print(langchain_parity(text, size, overlap))


if __name__ == "__main__":
    main()
