"""Reading cached vectors: 100,000 texts through CachedEmbedder, every one a hit.

Writes N random 256-d vectors into a fresh cache folder as one pack (what a run leaves), then
times, in fresh processes' worth of state (a new Cache each time, so the pack is read from
disk, page cache warm), the embedder's read of all N texts. With --legacy it also writes the
one-file-per-entry layout of earlier versions and times reading it the way they did.
Usage: python benchmarks/cache_read.py [--count 100000] [--legacy] [--work DIR]
"""
from __future__ import annotations

import argparse
import io
import shutil
import time
from pathlib import Path

import numpy as np

from pytest_ragretrieval.cache.store import Cache
from pytest_ragretrieval.embedding.cached import CachedEmbedder

DIMENSIONS = 256


class NoModel:
    id = "benchmark-model"

    def embed(self, texts: list[str]) -> np.ndarray:
        raise AssertionError("every text should be cached")


def best_of(rounds: int, read: object) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        read()  # type: ignore[operator]
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--legacy", action="store_true")
    parser.add_argument("--work", type=Path, default=Path(__file__).resolve().parent / ".work" / "cache")
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    texts = [f"第{i}段文本，" + "字" * (i % 50) for i in range(args.count)]
    vectors = np.random.default_rng(0).standard_normal((args.count, DIMENSIONS)).astype(np.float32)
    packs = Cache(args.work / "packs").namespace("embeddings", NoModel.id, ext="npy", dtype="<f4")
    packs.write(dict(zip(texts, vectors, strict=True)))

    def read_packs() -> None:
        found = CachedEmbedder(NoModel(), Cache(args.work / "packs")).embed(texts, None)
        assert np.array_equal(found, vectors)

    print(f"{args.count} vectors from one pack: best of 3 {best_of(3, read_packs):.3f}s")
    if args.legacy:
        folder = Cache(args.work / "legacy", "readonly").namespace("embeddings", NoModel.id, ext="npy", dtype="<f4")
        for text, vector in zip(texts, vectors, strict=True):
            path = folder.legacy_path(text)
            path.parent.mkdir(parents=True, exist_ok=True)
            buffer = io.BytesIO()
            np.save(buffer, vector, allow_pickle=False)
            path.write_bytes(buffer.getvalue())

        def read_legacy() -> None:
            space = Cache(args.work / "legacy", "readonly").namespace("embeddings", NoModel.id, ext="npy", dtype="<f4")
            found = space.read(texts)
            assert all(vector is not None for vector in found)

        print(f"{args.count} vectors from one file each (the earlier layout): best of 3 {best_of(3, read_legacy):.3f}s")


if __name__ == "__main__":
    main()
