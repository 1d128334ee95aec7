"""One content-addressed cache for model outputs (embeddings, corpus tokens, rerank scores).

Layout: `<cache>/<kind>/<slug(model_id)>-<sha256(model_id)[:8]>/` holds `id.txt` (the full id,
for humans) and immutable pack files (`packs.py`) named by the sha256 of their bytes. An entry
is keyed by the sha256 of its key text and holds a 1-D array of the namespace's dtype. Each
write adds a new pack through a temporary file and `os.replace`, and no pack is changed
afterwards, so a crash never leaves half an entry (the next write removes a killed writer's
temporary file). A namespace reads its packs once per session.

What a run writes is never committed: the cache folder holds a `.gitignore` (written with the first
pack) that ignores all of it but `seed/`. `<cache>/seed/<kind>/<namespace>/` is the committed part,
read first and never written: packs a team (or the sample) copies there to run offline. So a pack a
run writes is never untracked on one branch and committed on another, which would block `git checkout`.

Caches written before packs (`<2 hex>/<sha256>.<ext>`, one file per entry) are still read:
a `readwrite` run moves all of a namespace's entries into one pack when it first reads that
namespace, and removes their files; a `readonly` run reads them where they are.
"""
from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

import numpy as np

from ..core.errors import RagError
from ..files.paths import display, remove_stale_temporaries, write_atomic
from .packs import SUFFIX, DamagedPack, Pack, decode, digest, encode, encode_parts, pack_name

Mode = Literal["readwrite", "readonly", "off"]
"""`--rag-cache`: read and write, read only (a miss is an error), or no cache at all."""
MODES: tuple[Mode, ...] = ("readwrite", "readonly", "off")
RECORD_COMMAND = (
    "run pytest --rag-eval --rag-cache=readwrite where the model (or API key) is available, "
    "and commit/cache .rag-cache/"
)
SEED = "seed"
"""The committed, read-only part of the cache folder: `<cache>/seed/<kind>/<namespace>/`."""
IGNORE = (f"# written by pytest-ragretrieval: what a run writes here is never committed; packs copied into\n"
          f"# {SEED}/ are, and a run reads them but never writes there\n*\n!{SEED}/\n!{SEED}/**\n")
"""The cache folder's `.gitignore`: everything but the seed."""
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_LEGACY_FOLDER = re.compile(r"^[0-9a-f]{2}$")
_LEGACY_NAME = re.compile(r"^[0-9a-f]{64}$")


def sha256(text: str) -> str:
    return digest(text).hex()


def slug(model_id: str) -> str:
    """A readable folder name; the hash suffix added by the caller keeps distinct ids apart."""
    return _UNSAFE.sub("_", model_id).strip("._")[:60] or "model"


class Cache:
    """The cache folder and its mode: `readwrite`, `readonly` (a miss is an error), or `off`."""

    def __init__(self, folder: Path, mode: Mode = "readwrite") -> None:
        if mode not in MODES:  # a caller's value, typed or not, is checked where it enters
            raise RagError(f"cache mode must be {', '.join(map(repr, MODES))}, got {mode!r}")
        self.folder = Path(folder)
        self.mode = mode
        self._spaces: dict[Path, Namespace] = {}

    def namespace(self, kind: str, model_id: str, ext: str = "bin", dtype: str = "u1") -> Namespace:
        """Entries of one kind ("embeddings", "tokens", "rerank") from one model id; `ext` names
        the files of the one-file-per-entry layout. One object per folder, so packs are read once."""
        if not kind or _UNSAFE.search(kind) or kind == SEED:
            raise ValueError(f"cache kind must hold letters, digits, '.', '_' or '-' only and not be {SEED!r}, "
                             f"got {kind!r}")
        name = f"{slug(model_id)}-{sha256(model_id)[:8]}"
        folder = self.folder / kind / name
        if folder not in self._spaces:
            self._spaces[folder] = Namespace(folder, kind, model_id, ext, np.dtype(dtype), self.mode,
                                             seed=self.folder / SEED / kind / name, root=self.folder)
        space = self._spaces[folder]
        if space.dtype != np.dtype(dtype):
            raise ValueError(f"cache {kind} of {model_id!r} holds {space.dtype}, asked for {np.dtype(dtype)}")
        return space

    def flush(self) -> None:
        """Write what `put` still holds, one pack per namespace."""
        for space in self._spaces.values():
            space.flush()


class Namespace:
    pending_limit = 4096
    """`put` entries held before they are written as one pack."""

    def __init__(self, folder: Path, kind: str, model_id: str, ext: str, dtype: np.dtype, mode: Mode,
                 seed: Path | None = None, root: Path | None = None) -> None:
        """`seed`: the committed folder of the same namespace, read before `folder` and never written; `root`:
        the cache folder, whose `.gitignore` the first pack written writes."""
        self.folder = folder
        self.seed = seed
        self.root = root
        self.kind = kind
        self.model_id = model_id
        self.ext = ext
        self.dtype = dtype
        self.mode = mode
        self._packs: list[Pack] | None = None
        self._index: dict[bytes, int] = {}
        self._starts: list[int] = [0]
        self._pending: dict[bytes, np.ndarray] = {}
        self._legacy_folders: bool | None = None

    @property
    def readable(self) -> bool:
        return self.mode != "off"

    @property
    def writable(self) -> bool:
        return self.mode == "readwrite"

    def packs(self) -> list[Pack]:
        """Every pack, the seed's then the folder's, each in name order, then those written since; a key in
        two packs is read from the first."""
        if self._packs is None:
            self._packs = []
            for folder in (self.seed, self.folder):
                if self.readable and folder is not None and folder.is_dir():
                    for path in sorted(folder.glob("*" + SUFFIX)):
                        self._add(self._read(path))
            if self.writable and self._has_legacy():
                self._migrate()
        return self._packs

    def _read(self, path: Path) -> Pack:
        try:
            return decode(path, path.read_bytes(), self.dtype)
        except DamagedPack as exc:
            raise self.damaged(path, str(exc)) from None

    def _add(self, pack: Pack) -> None:
        """Number the pack's entries after those already known: entry ids are global."""
        assert self._packs is not None
        first = self._starts[-1]
        self._packs.append(pack)
        self._starts.append(first + len(pack.keys))
        index = self._index
        for number, key in enumerate(pack.keys, start=first):
            index.setdefault(key, number)

    def _locate(self, keys: Sequence[str]) -> tuple[list[bytes], np.ndarray]:
        """(sha256 of each key, its global entry id or -1 for a miss)."""
        sha = hashlib.sha256
        digests = [sha(text.encode("utf-8")).digest() for text in keys]
        if not self.readable or not self.packs():
            return digests, np.full(len(keys), -1, dtype=np.int64)
        get = self._index.get
        return digests, np.fromiter((get(key, -1) for key in digests), dtype=np.int64, count=len(digests))

    def _split(self, ids: np.ndarray) -> list[tuple[Pack, np.ndarray, np.ndarray]]:
        """(pack, positions in `ids`, rows in that pack) for each pack holding some of `ids`."""
        starts = np.asarray(self._starts, dtype=np.int64)
        numbers = np.searchsorted(starts, ids, side="right") - 1
        found = ids >= 0
        parts = []
        for number in np.flatnonzero(np.bincount(numbers[found])).tolist():  # np.unique imports numpy.ma
            positions = np.flatnonzero(found & (numbers == number))
            parts.append((self.packs()[number], positions, ids[positions] - starts[number]))
        return parts

    def read(self, keys: Sequence[str]) -> list[np.ndarray | None]:
        """Each entry (read-only), None for a miss."""
        digests, ids = self._locate(keys)
        found: list[np.ndarray | None] = [self._pending.get(key) for key in digests]
        for pack, positions, rows in self._split(ids):
            for position, row in zip(positions.tolist(), rows.tolist(), strict=True):
                found[position] = pack.entry(row)
        for i, value in self._legacy(digests, [i for i, value in enumerate(found) if value is None]).items():
            found[i] = value
        return found

    def read_rows(self, keys: Sequence[str]) -> tuple[np.ndarray | None, list[int]]:
        """(rows x width matrix, positions of the misses, whose rows are zero); the matrix is
        None when nothing was found. One gather per pack; entries of different widths are an error."""
        digests, ids = self._locate(keys)
        parts = self._split(ids)
        extra = self._legacy(digests, np.flatnonzero(ids < 0).tolist())
        widths = {pack.width for pack, _, _ in parts} | {value.size for value in extra.values()}
        if not widths:
            return None, list(range(len(keys)))
        width = widths.pop()
        if widths or width is None:
            raise self.damaged(self.folder, "entries of different lengths; one model id must give one dimension")
        if len(parts) == 1 and parts[0][1].size == len(keys):
            return parts[0][0].matrix()[parts[0][2]], []  # every key in one pack: one gather
        matrix = np.zeros((len(keys), width), dtype=self.dtype)
        for pack, positions, rows in parts:
            matrix[positions] = pack.matrix()[rows]
        for i, value in extra.items():
            matrix[i] = value
        return matrix, [i for i in np.flatnonzero(ids < 0).tolist() if i not in extra]

    def absent(self, keys: Sequence[str]) -> list[int]:
        """Positions of the keys no pack holds (those `read_tokens` misses), reading no entry: what a
        run would tokenize, known before it starts."""
        _, ids = self._locate(keys)
        return np.flatnonzero(ids < 0).tolist()

    def read_tokens(self, keys: Sequence[str]) -> tuple[list[str], list[np.ndarray | None]]:
        """(vocabulary, token ids per key into it, None for a miss): the packs' vocabularies
        merged, so the caller maps each distinct token once, not each occurrence."""
        _, ids = self._locate(keys)
        vocabulary: dict[str, int] = {}
        found: list[np.ndarray | None] = [None] * len(keys)
        for pack, positions, rows in self._split(ids):
            if pack.data.size and (int(pack.data.min()) < 0 or int(pack.data.max()) >= len(pack.vocabulary)):
                raise self.damaged(pack.path, "token ids outside its vocabulary")
            remap = np.fromiter(
                (vocabulary.setdefault(token, len(vocabulary)) for token in pack.vocabulary),
                dtype=np.int64, count=len(pack.vocabulary),
            )
            mapped = remap[pack.data]
            bounds = pack.offsets.tolist()
            for position, row in zip(positions.tolist(), rows.tolist(), strict=True):
                found[position] = mapped[bounds[row]:bounds[row + 1]]
        return list(vocabulary), found

    def write(self, entries: Mapping[str, np.ndarray], vocabulary: Sequence[str] = ()) -> Path | None:
        """Store `entries` (key text -> 1-D array) as one new pack; None when not writable or empty."""
        return self._write({digest(text): value for text, value in entries.items()}, vocabulary)

    def _write(self, entries: Mapping[bytes, np.ndarray], vocabulary: Sequence[str] = ()) -> Path | None:
        if not self.writable or not entries:
            return None
        if self.root is not None and not (self.root / ".gitignore").exists():
            write_atomic(self.root / ".gitignore", IGNORE.encode("utf-8"))
        marker = self.folder / "id.txt"
        if not marker.exists():
            write_atomic(marker, (self.model_id + "\n").encode("utf-8"))
        data = encode(entries, self.dtype, vocabulary)
        path = self.folder / pack_name(data)
        if not path.exists():
            write_atomic(path, data)
        remove_stale_temporaries(self.folder)  # a killed run's half pack has another name than this one
        self.packs()
        self._add(decode(path, data, self.dtype))
        return path

    def compact(self, paths: Sequence[Path]) -> Path | None:
        """Merge packs this session wrote (`paths`) into one and remove them: a run that wrote a
        pack per batch leaves one file. Crashing halfway leaves both, which reads the same."""
        chosen = [pack for pack in self.packs() if pack.path in set(paths) and pack.width is not None]
        if len(chosen) < 2 or not self.writable:
            return chosen[0].path if chosen else None
        merged: dict[bytes, np.ndarray] = {}
        for pack in chosen:
            for row, key in enumerate(pack.keys):
                merged.setdefault(key, pack.entry(row))
        # Written piece by piece and not read back: the packs it merges stay in memory and answer the
        # same, so a million vectors are not held twice (nor three times while encoding).
        target = self.folder / pack_name(encode_parts(merged, self.dtype))
        if not target.exists():
            write_atomic(target, encode_parts(merged, self.dtype))
        for pack in chosen:
            if pack.path != target:
                pack.path.unlink(missing_ok=True)
        return target

    def get(self, key_text: str) -> bytes | None:
        """One entry's raw bytes (little-endian), for scores and other small values."""
        value = self.read([key_text])[0]
        return None if value is None else value.astype(self.dtype.newbyteorder("<")).tobytes()

    def put(self, key_text: str, data: bytes) -> None:
        """Hold an entry; entries are written as one pack by `flush` (or every `pending_limit`)."""
        if not self.writable:
            return
        self._pending[digest(key_text)] = np.frombuffer(data, dtype=self.dtype.newbyteorder("<"))
        if len(self._pending) >= self.pending_limit:
            self.flush()

    def flush(self) -> None:
        pending, self._pending = self._pending, {}
        self._write(pending)

    def legacy_path(self, key_text: str) -> Path:
        """Where the one-file-per-entry layout kept an entry."""
        hexdigest = sha256(key_text)
        return self.folder / hexdigest[:2] / f"{hexdigest}.{self.ext}"

    def _legacy(self, digests: list[bytes], misses: list[int]) -> dict[int, np.ndarray]:
        """Misses found in one-file-per-entry folders, by position (a readonly cache; a writable
        one has moved them into a pack when it first read its packs)."""
        if not misses or not self._has_legacy():
            return {}
        found: dict[int, np.ndarray] = {}
        for i in misses:
            value = self._legacy_entry(self.folder / digests[i].hex()[:2] / f"{digests[i].hex()}.{self.ext}")
            if value is not None:
                found[i] = value
        return found

    def _migrate(self) -> None:
        """Move every readable entry of the one-file-per-entry layout into one pack, then remove
        their files: the same legacy folder always gives the same pack."""
        moved: dict[bytes, np.ndarray] = {}
        files: list[Path] = []
        for folder in sorted(self.folder.iterdir()):
            if not (folder.is_dir() and _LEGACY_FOLDER.match(folder.name)):
                continue
            for path in sorted(folder.glob(f"*.{self.ext}")):
                value = self._legacy_entry(path) if _LEGACY_NAME.match(path.stem) else None
                if value is not None:
                    moved[bytes.fromhex(path.stem)] = value
                    files.append(path)
        if moved:
            self._write(moved)
        for path in files:
            path.unlink()
        for folder in {path.parent for path in files}:
            if not any(folder.iterdir()):
                folder.rmdir()

    def _has_legacy(self) -> bool:
        if self._legacy_folders is None:
            self._legacy_folders = self.readable and self.folder.is_dir() and any(
                path.is_dir() and _LEGACY_FOLDER.match(path.name) for path in self.folder.iterdir()
            )
        return self._legacy_folders

    def _legacy_entry(self, path: Path) -> np.ndarray | None:
        """A legacy file's entry; an unreadable file counts as a miss, as it always did."""
        try:
            data = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        try:
            value = np.load(io.BytesIO(data), allow_pickle=False) if self.ext == "npy" else np.frombuffer(
                data, dtype=self.dtype.newbyteorder("<")
            )
        except (ValueError, OSError, EOFError):
            return None
        if value.ndim != 1 or value.dtype.kind != self.dtype.kind or value.dtype.itemsize != self.dtype.itemsize:
            raise self.damaged(path, f"an entry of shape {value.shape} and dtype {value.dtype}, expected {self.dtype}")
        return np.asarray(value, dtype=self.dtype)

    def damaged(self, path: Path, why: str) -> RagError:
        return RagError(
            f"cache {display(path)} is damaged ({why}); delete it to compute its {self.kind} again"
        )

    def miss_error(self, count: int, what: str = "texts") -> RagError:
        """What a readonly cache says when entries are missing: how many, for whom, and the fix."""
        return RagError(
            f"cache {display(self.folder)} is readonly and lacks {self.kind} for {count} {what} "
            f"from {self.model_id!r}; {RECORD_COMMAND}"
        )

