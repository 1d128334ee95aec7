"""A reproducible synthetic Chinese corpus, and the cheap embedder both sides of a benchmark use.

Words are drawn from jieba's own dictionary (`jieba/dict.txt`, word and frequency per line) with
probability proportional to their frequency, so the token statistics look like Chinese text to
jieba and BM25. Chunks are 100 to 300 characters; each question is a span of 8 to 24
characters cut from one chunk, at word boundaries, with that chunk as its only gold.
The same seed gives the same files, byte for byte, on every machine.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DIMENSIONS = 256
CHUNKS_PER_DOC = 20


@dataclass(frozen=True)
class Corpus:
    chunks: list[dict[str, object]]
    questions: list[dict[str, object]]

    def write(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for name, rows in (("chunks.jsonl", self.chunks), ("evalset.jsonl", self.questions)):
            with (folder / name).open("w", encoding="utf-8") as stream:
                for row in rows:
                    stream.write(json.dumps(row, ensure_ascii=False) + "\n")


def dictionary() -> tuple[list[str], np.ndarray]:
    """jieba's words and their probabilities, in the dictionary's own order."""
    import jieba

    words: list[str] = []
    counts: list[int] = []
    with (Path(jieba.__file__).parent / "dict.txt").open(encoding="utf-8") as stream:
        for line in stream:
            word, count, *_ = line.split()
            if word.strip():
                words.append(word)
                counts.append(int(count))
    weights = np.asarray(counts, dtype=np.float64)
    return words, weights / weights.sum()


def generate(chunks: int, questions: int, seed: int = 20260916) -> Corpus:
    """`chunks` chunks and `questions` questions (each from a different chunk)."""
    words, probabilities = dictionary()
    cumulative = np.cumsum(probabilities)
    rng = np.random.default_rng(seed)
    lengths = np.array([len(word) for word in words])
    rows: list[dict[str, object]] = []
    pieces: list[list[str]] = []
    for position in range(chunks):
        target = int(rng.integers(100, 301))
        drawn = np.minimum(np.searchsorted(cumulative, rng.random(target)), len(words) - 1)
        end = int(np.searchsorted(np.cumsum(lengths[drawn]), target)) + 1
        chosen = [words[i] for i in drawn[:end]]
        commas = rng.integers(6, 16)
        text = "".join(word + ("，" if (n + 1) % commas == 0 else "") for n, word in enumerate(chosen)) + "。"
        pieces.append(chosen)
        rows.append({
            "id": f"c{position:06d}",
            "doc": f"doc-{position // CHUNKS_PER_DOC:05d}.md",
            "text": text,
            "metadata": {},
        })
    asked = rng.choice(chunks, size=questions, replace=False)
    queries: list[dict[str, object]] = []
    for number, position in enumerate(sorted(int(p) for p in asked)):
        chosen = pieces[position]
        start = int(rng.integers(0, max(1, len(chosen) - 4)))
        span = int(rng.integers(8, 25))
        query = ""
        for word in chosen[start:]:
            if len(query) >= span:
                break
            query += word
        queries.append({"id": f"q{number:05d}", "query": query, "relevant": {rows[position]["id"]: 1}})
    return Corpus(rows, queries)


def embed(texts: list[str]) -> np.ndarray:
    """A hashed, signed bag of characters in 256 dimensions, L2-normalised: cheap and deterministic.

    Each code point goes to bucket `(c * 2654435761 mod 2^32) >> 24` with sign from bit 23, so
    nothing depends on Python's per-process string hashing.
    """
    out = np.zeros((len(texts), DIMENSIONS), dtype=np.float64)
    for row, text in enumerate(texts):
        points = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
        mixed = (points * np.uint64(2654435761)) & np.uint64(0xFFFFFFFF)
        buckets = (mixed >> np.uint64(24)).astype(np.int64)
        signs = np.where((mixed >> np.uint64(23)) & np.uint64(1), -1.0, 1.0)
        out[row] = np.bincount(buckets, weights=signs, minlength=DIMENSIONS)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return (out / np.where(norms == 0, 1.0, norms)).astype(np.float32)
