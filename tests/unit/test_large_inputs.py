"""Inputs of a million chunks: read a line at a time, embedded into one matrix, packed piece by piece."""
from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from pytest_ragretrieval.cache import packs
from pytest_ragretrieval.cache.store import Cache
from pytest_ragretrieval.core.errors import FixtureError
from pytest_ragretrieval.embedding.cached import CachedEmbedder
from pytest_ragretrieval.embedding.prompts import Prompts
from pytest_ragretrieval.evalset.jsonl import load_chunks

WIDTH = 384


class Counting:
    """A cheap in-process embedder: each text's length, then ones."""

    id = "test:counting"

    def __init__(self) -> None:
        self.prompts = Prompts()

    def embed(self, texts: list[str], side: str = "passage") -> np.ndarray:
        out = np.ones((len(texts), WIDTH), dtype=np.float32)
        out[:, 0] = [len(text) for text in texts]
        return out


def test_chunks_are_read_a_line_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"id": f"c{i}", "text": "文本" * i}) + "\n" for i in range(3)), encoding="utf-8")

    def whole(self: Path) -> bytes:
        raise AssertionError("the corpus was read whole")

    monkeypatch.setattr(Path, "read_bytes", whole)
    assert [(c.id, c.text) for c in load_chunks(path)] == [("c0", ""), ("c1", "文本"), ("c2", "文本文本")]


def test_a_bad_byte_is_named_by_its_place_in_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    first = b'{"id": "a", "text": "t"}\n'  # 25 bytes
    (tmp_path / "c.jsonl").write_bytes(b"\xef\xbb\xbf" + first + b'{"id": "b", "text": "\xe9"}\n')
    # 3 (the byte-order mark) + 25 + 21 (`{"id": "b", "text": "`): the bad byte is byte 49 of the file
    with pytest.raises(FixtureError, match=r"^c\.jsonl: not UTF-8 \(invalid continuation byte at byte 49\)$"):
        load_chunks(tmp_path / "c.jsonl")


def test_a_pack_in_pieces_is_the_pack_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(packs, "BLOCK", 2)
    entries = {packs.digest(str(i)): np.full(3, i, dtype="<f4") for i in range(5)}
    pieces = list(packs.encode_parts(entries, np.dtype("<f4")))
    assert len(pieces) == 2 + 3 + 1  # header and keys, offsets, 5 entries in blocks of 2, padding
    whole = b"".join(pieces)
    assert packs.pack_name(iter(pieces)) == packs.pack_name(whole)
    decoded = packs.decode(Path("p.pack"), whole, np.dtype("<f4"))
    assert [float(decoded.entry(decoded.keys.index(key))[0]) for key in entries] == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_embedding_holds_the_vectors_once_beside_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """20,000 texts x 384 float32 is 30 MB: the batches, their concatenation, a second matrix and the
    merged pack's copies came to 5.5 times that; now the matrix, the cache's packs and a little more.
    Packed 256 entries a piece, the pieces are as small beside these vectors as 8,192 beside a million."""
    monkeypatch.setattr(CachedEmbedder, "write_seconds", 0.0)
    monkeypatch.setattr(packs, "BLOCK", 256)
    texts = [f"text {i}" for i in range(20_000)]
    size = len(texts) * WIDTH * 4
    embedder = CachedEmbedder(Counting(), Cache(tmp_path / "cache"), batch_size=1_000)
    tracemalloc.start()
    try:
        vectors = embedder.embed(texts, None)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert vectors.shape == (20_000, WIDTH) and [float(v) for v in vectors[[0, 12_345], 0]] == [6.0, 10.0]
    assert len(list((tmp_path / "cache").rglob("*.pack"))) == 1
    assert peak < 3 * size, f"peak {peak / size:.1f} times the vectors"
    again = CachedEmbedder(Counting(), Cache(tmp_path / "cache"), batch_size=1_000)
    assert np.array_equal(again.embed(texts, None), vectors) and again.stats.hits == 20_000
