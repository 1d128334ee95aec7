"""A reproducible synthetic Chinese corpus, and the cheap embedder both sides of a benchmark use.

Words are drawn from jieba's own dictionary (`jieba/dict.txt`, word and frequency per line) with
probability proportional to their frequency, so the token statistics look like Chinese text to
jieba and BM25. Chunks are 100 to 300 characters; each question is a span of 8 to 24
characters cut from one chunk, at word boundaries, with that chunk as its only gold.
The same seed gives the same files, byte for byte, on every machine.
"""
from __future__ import annotations

import json
from collections.abc import Callable
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


def span_of(rng: np.random.Generator, chosen: list[str], word_of: Callable[[str], str] = str) -> str:
    """A question: an 8-24 character run of a chunk's words from a random start, each word through
    `word_of` (the topical corpus swaps one in four for another word of its topic)."""
    start = int(rng.integers(0, max(1, len(chosen) - 4)))
    span = int(rng.integers(8, 25))
    query = ""
    for word in chosen[start:]:
        if len(query) >= span:
            break
        query += word_of(word)
    return query


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
        query = span_of(rng, pieces[position])
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


def stream_topical(folder: Path, chunks: int, questions: int, seed: int = 20261205) -> None:
    """Writes `chunks` chunks and `questions` questions to FOLDER, a chunk at a time (flat memory).

    Unlike `generate`, the corpus has topics (uniform noise would make every neighbour equally
    far and an ANN index's recall meaningless): each doc of `CHUNKS_PER_DOC` chunks draws
    `TOPIC_SHARE` of its words from one of `chunks // 500` topics of `TOPIC_WORDS` words each,
    `DOC_SHARE` from the doc's own `DOC_WORDS` of them.
    A question is a span of 8 to 24 characters of one chunk, with one word in four swapped for
    another word of the same topic, and that chunk as its only gold. Same seed, same bytes.
    """
    words, probabilities = dictionary()
    cumulative = np.cumsum(probabilities)
    lengths = np.array([len(word) for word in words])
    rng = np.random.default_rng(seed)
    topics = rng.choice(len(words), size=(max(1, chunks // 500), TOPIC_WORDS))
    asked = {int(p) for p in np.random.default_rng(seed + 1).choice(chunks, size=questions, replace=False)}
    folder.mkdir(parents=True, exist_ok=True)
    queries: list[str] = []
    with (folder / "chunks.jsonl").open("w", encoding="utf-8") as out:
        topic = topics[0]
        for position in range(chunks):
            if position % CHUNKS_PER_DOC == 0:
                topic = topics[int(rng.integers(0, len(topics)))]
                own = topic[rng.integers(0, TOPIC_WORDS, DOC_WORDS)]
            target = int(rng.integers(100, 301))
            general = np.minimum(np.searchsorted(cumulative, rng.random(target)), len(words) - 1)
            which = rng.random(target)
            drawn = np.where(which < TOPIC_SHARE, topic[rng.integers(0, TOPIC_WORDS, target)], general)
            drawn = np.where(which < DOC_SHARE, own[rng.integers(0, DOC_WORDS, target)], drawn)
            end = int(np.searchsorted(np.cumsum(lengths[drawn]), target)) + 1
            chosen = [words[i] for i in drawn[:end]]
            commas = rng.integers(6, 16)
            text = "".join(word + ("，" if (n + 1) % commas == 0 else "") for n, word in enumerate(chosen)) + "。"
            cid = f"c{position:07d}"
            out.write(json.dumps({"id": cid, "doc": f"doc-{position // CHUNKS_PER_DOC:06d}.md", "text": text,
                                  "metadata": {}}, ensure_ascii=False) + "\n")
            if position in asked:
                query = span_of(rng, chosen, lambda word, topic=topic: (
                    words[int(topic[rng.integers(0, TOPIC_WORDS)])] if rng.random() < 0.25 else word))
                queries.append(json.dumps({"id": f"q{len(queries):05d}", "query": query, "relevant": {cid: 1}},
                                          ensure_ascii=False))
    (folder / "evalset.jsonl").write_text("".join(line + "\n" for line in queries), encoding="utf-8")


TOPIC_WORDS = 300
"""Words in each topic's vocabulary: a doc's chunks share them, so neighbours cluster by topic."""
TOPIC_SHARE = 0.7
"""The share of a chunk's words drawn from its doc's topic (its own words included); the rest from the whole dictionary."""
DOC_WORDS = 12
DOC_SHARE = 0.4
"""The share drawn from its doc's own 12 topic words: a doc's chunks are nearer still, as in real corpora."""
RANK = 384
"""Buckets the hashed embedder counts in, spread over whatever dimension it returns."""


def counts(texts: list[str], buckets: int) -> np.ndarray:
    """Each text's signed character counts in `buckets` buckets (integers, as float64), a whole batch at once.

    Code point c goes to bucket `((c * 2654435761 mod 2^32) >> 8) * buckets >> 24`, sign from
    bit 7: no per-process string hashing, the same numbers on every machine.
    """
    encoded = [text.encode("utf-32-le") for text in texts]
    points = np.frombuffer(b"".join(encoded), dtype=np.uint32).astype(np.uint64)
    rows = np.repeat(np.arange(len(texts), dtype=np.int64), [len(data) // 4 for data in encoded])
    mixed = (points * np.uint64(2654435761)) & np.uint64(0xFFFFFFFF)
    where = (((mixed >> np.uint64(8)) * np.uint64(buckets)) >> np.uint64(24)).astype(np.int64)
    signs = np.where((mixed >> np.uint64(7)) & np.uint64(1), -1.0, 1.0)
    found = np.bincount(rows * buckets + where, weights=signs, minlength=len(texts) * buckets)
    return found.reshape(len(texts), buckets)


def hashed(texts: list[str], dimensions: int, rank: int = RANK) -> np.ndarray:
    """`rank` bucket counts spread over `dimensions` by a fixed ±1 matrix, L2-normalised.

    Real embeddings use far fewer directions than they have dimensions; so do these (a plain
    bag of characters in 384 buckets is close to uniform noise, where no ANN index does well).
    Integer counts times ±1 are exact in float64, so the vectors are the same on every machine.
    """
    spread = np.random.default_rng(rank * 100_003 + dimensions).integers(0, 2, size=(rank, dimensions)) * 2.0 - 1.0
    out = counts(texts, rank) @ spread
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return (out / np.where(norms == 0, 1.0, norms)).astype(np.float32)
