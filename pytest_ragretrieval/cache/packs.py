"""The cache's pack files: many content-addressed entries in one immutable file.

Format (little-endian): `RAGPACK1`, a u32 header length, a JSON header (dtype, count, width,
vocabulary length) padded to 8 bytes, the entries' 32-byte sha256 keys in sorted order, u64
offsets (count + 1, in elements), the data padded to 8 bytes, and for token packs the
vocabulary as a JSON array. Entries are sorted by key, so the same entries always give the
same bytes, and the file is named by the sha256 of those bytes.
"""
from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MAGIC = b"RAGPACK1"
SUFFIX = ".pack"


class DamagedPack(ValueError):
    """A pack that cannot be read; the cache turns it into one line naming the file."""


def digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


@dataclass(frozen=True)
class Pack:
    """One pack, read whole: entry `i` is `data[offsets[i]:offsets[i + 1]]`, its key `keys[i]`."""

    path: Path
    keys: list[bytes]
    offsets: np.ndarray
    data: np.ndarray
    width: int | None
    """The length every entry has, or None when lengths differ (token packs)."""
    vocabulary: list[str]

    def entry(self, row: int) -> np.ndarray:
        return self.data[int(self.offsets[row]):int(self.offsets[row + 1])]

    def matrix(self) -> np.ndarray:
        """The entries as rows, for a pack whose entries have one width."""
        assert self.width is not None
        return self.data.reshape(-1, self.width) if self.width else np.zeros((len(self.keys), 0), self.data.dtype)


def _pad(size: int) -> int:
    return -size % 8


BLOCK = 8192
"""Entries per piece of a pack's data as `encode_parts` yields it."""


def encode_parts(
    entries: Mapping[bytes, np.ndarray], dtype: np.dtype, vocabulary: Sequence[str] = ()
) -> Iterator[bytes]:
    """The bytes of a pack holding `entries` (sha256 key -> 1-D array), in key order, piece by piece:
    the data `BLOCK` entries at a time, so a million-entry pack is never held whole a second time."""
    keyed = sorted(entries.items(), key=lambda item: item[0])
    values = [np.ascontiguousarray(value, dtype=dtype).ravel() for _, value in keyed]
    lengths = [value.size for value in values]
    width = lengths[0] if lengths and len(set(lengths)) == 1 else None
    offsets = np.zeros(len(keyed) + 1, dtype="<u8")
    np.cumsum(lengths, out=offsets[1:])
    little = dtype.newbyteorder("<")
    words = json.dumps(list(vocabulary), ensure_ascii=False).encode("utf-8") if vocabulary else b""
    header = json.dumps(
        {"format": 1, "dtype": little.str, "count": len(keyed), "width": width, "vocabulary": len(words)},
        sort_keys=True,
    ).encode("ascii")
    header += b" " * _pad(len(MAGIC) + 4 + len(header))
    yield b"".join([MAGIC, struct.pack("<I", len(header)), header, b"".join(key for key, _ in keyed)])
    yield offsets.tobytes()
    for start in range(0, len(values), BLOCK):
        yield np.concatenate(values[start:start + BLOCK]).astype(little, copy=False).tobytes()
    yield b"\0" * _pad(int(offsets[-1]) * little.itemsize) + words


def encode(entries: Mapping[bytes, np.ndarray], dtype: np.dtype, vocabulary: Sequence[str] = ()) -> bytes:
    """The bytes of a pack holding `entries` (sha256 key -> 1-D array), in key order."""
    return b"".join(encode_parts(entries, dtype, vocabulary))


def pack_name(data: bytes | Iterable[bytes]) -> str:
    """A pack's file name: the sha256 of its bytes (whole, or the pieces in order), so equal packs are one file."""
    sha = hashlib.sha256()
    for piece in [data] if isinstance(data, bytes) else data:
        sha.update(piece)
    return sha.hexdigest() + SUFFIX


def decode(path: Path, raw: bytes, dtype: np.dtype) -> Pack:
    """Read a pack's bytes; DamagedPack says why it cannot be read."""
    try:
        if raw[:8] != MAGIC:
            raise DamagedPack("not a pack file")
        (size,) = struct.unpack_from("<I", raw, 8)
        header = json.loads(raw[12:12 + size])
        if np.dtype(header["dtype"]) != dtype.newbyteorder("<"):
            raise DamagedPack(f"dtype {header['dtype']}, expected {dtype.newbyteorder('<').str}")
        count, at = int(header["count"]), 12 + size
        keys = [raw[at + 32 * i: at + 32 * (i + 1)] for i in range(count)]
        at += 32 * count
        offsets = np.frombuffer(raw, dtype="<u8", count=count + 1, offset=at).astype(np.int64)
        at += 8 * (count + 1)
        data = np.frombuffer(raw, dtype=dtype.newbyteorder("<"), count=int(offsets[-1]), offset=at)
        at += data.nbytes + _pad(data.nbytes)
        words = int(header["vocabulary"])
        if at + words != len(raw):
            raise DamagedPack(f"{len(raw)} bytes, expected {at + words}")
        vocabulary = json.loads(raw[at:at + words]) if words else []
    except DamagedPack:
        raise
    except (ValueError, KeyError, TypeError, struct.error) as exc:
        raise DamagedPack(str(exc) or type(exc).__name__) from None
    width = header["width"]
    return Pack(path, keys, offsets, data, int(width) if width is not None else None, vocabulary)
