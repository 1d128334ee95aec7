"""The kept folder's rules (database/kept.py), without a server: when a folder is trusted, who may
hold it, which folders are dropped, and what an interrupted start leaves."""
from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

import numpy as np
import pytest

from pytest_ragretrieval.database import kept as kept_module
from pytest_ragretrieval.database.kept import IN_USE, SEEDED, claim, key, table
from pytest_ragretrieval.database.servers import start_kept
from pytest_ragretrieval.database.settings import IndexSettings
from pytest_ragretrieval.evalset.records import Chunk

CHUNKS = [Chunk("a", "退款三天到账", "faq.md", {"lang": "zh"}), Chunk("b", "退货需要发票")]
VECTORS = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
DIGEST = key(CHUNKS, VECTORS, IndexSettings())


def seeded_folder(cache: Path, digest: str = DIGEST, schema: str = "rag_eval_000000000000") -> Path:
    """A folder as a clean run leaves it: data, the seeded marker naming the key, no in-use."""
    kept = claim(cache, digest)
    assert kept is not None and kept.schema is None
    (kept.data).mkdir()
    (kept.data / "PG_VERSION").write_text("16\n")
    kept.seeded(schema)
    kept.release(unchanged=True)
    return kept.folder


def test_the_key_changes_with_every_input_the_table_holds() -> None:
    changed = [
        key([Chunk("a", "退款三天到账", "faq.md", {"lang": "en"}), CHUNKS[1]], VECTORS, IndexSettings()),
        key([CHUNKS[0], Chunk("b", "退货需要发票", "faq.md")], VECTORS, IndexSettings()),
        key(CHUNKS, VECTORS + np.float32(1e-7), IndexSettings()),
        key(CHUNKS, VECTORS, IndexSettings(kind="hnsw")),
        key(CHUNKS, VECTORS, IndexSettings(kind="hnsw", m=8)),
    ]
    assert len({DIGEST, *changed}) == 6
    assert key(CHUNKS, VECTORS, IndexSettings(ef_search=99)) == DIGEST, "ef_search is a search setting, not seeded"


def test_a_cleanly_released_folder_is_trusted_and_ignored_by_git(tmp_path: Path) -> None:
    folder = seeded_folder(tmp_path)
    assert folder == tmp_path / "databases" / DIGEST[:16]
    assert (tmp_path / "databases" / ".gitignore").read_text().endswith("*\n")
    kept = claim(tmp_path, DIGEST)
    assert kept is not None and kept.schema == "rag_eval_000000000000" and (folder / IN_USE).exists()
    kept.release(unchanged=True)
    assert not (folder / IN_USE).exists()


@pytest.mark.parametrize("damage", ["killed", "no marker", "other key", "bad marker", "no data"])
def test_an_unfinished_or_foreign_folder_is_wiped_not_trusted(tmp_path: Path, damage: str) -> None:
    folder = seeded_folder(tmp_path)
    if damage == "killed":
        (folder / IN_USE).write_text("12345\n")
    elif damage == "no marker":
        (folder / SEEDED).unlink()
    elif damage == "other key":
        (folder / SEEDED).write_text(json.dumps({"key": "0" * 64, "schema": "rag_eval_000000000000"}))
    elif damage == "bad marker":
        (folder / SEEDED).write_text("{")
    else:
        (folder / "data" / "PG_VERSION").unlink()
    kept = claim(tmp_path, DIGEST)
    assert kept is not None and kept.schema is None
    assert not (folder / "data").exists() and not (folder / SEEDED).exists()
    kept.handle.close()


def test_a_folder_another_run_holds_is_not_claimed(tmp_path: Path) -> None:
    folder = seeded_folder(tmp_path)
    with (folder / "lock").open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert claim(tmp_path, DIGEST) is None
    assert not (folder / IN_USE).exists() and (folder / SEEDED).exists()


def test_a_changed_release_wipes_the_folder(tmp_path: Path) -> None:
    folder = seeded_folder(tmp_path)
    kept = claim(tmp_path, DIGEST)
    assert kept is not None
    kept.release(unchanged=False)
    assert not (folder / SEEDED).exists() and not (folder / "data").exists()
    assert claim(tmp_path, DIGEST) is not None, "the lock is released"


def test_the_least_recently_used_folders_beyond_keep_are_removed_unless_held(tmp_path: Path) -> None:
    digests = [str(n) * 64 for n in range(1, 5)]
    folders = []
    for age, digest in enumerate(digests[:3]):
        folder = tmp_path / "databases" / digest[:16]
        (folder / "data").mkdir(parents=True)
        (folder / "lock").touch()
        os.utime(folder / "lock", (1000 + age, 1000 + age))
        folders.append(folder)
    with (folders[0] / "lock").open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        kept = claim(tmp_path, digests[3])
    assert kept is not None
    kept.handle.close()
    left = sorted(path for path in (tmp_path / "databases").iterdir() if path.is_dir())
    assert left == sorted([folders[0], folders[2], kept.folder]), "the oldest was held, so the next oldest went"


def test_an_interrupted_start_leaves_the_folder_untrusted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGINT (or SIGTERM, which the plugin turns into an exception) while Postgres starts on the folder."""
    seeded_folder(tmp_path)
    kept = claim(tmp_path, DIGEST)
    assert kept is not None and kept.schema is not None

    def interrupted(self: object) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(kept_module.Kept, "start", interrupted)
    with pytest.raises(KeyboardInterrupt):
        start_kept(kept)
    assert not (kept.folder / SEEDED).exists() and not kept.data.exists()
    assert claim(tmp_path, DIGEST) is not None, "the lock is released"


def donor(cache: Path) -> Path:
    """A clean folder of CHUNKS that recorded its rows, as a run with exact search leaves it."""
    wanted = table(CHUNKS, VECTORS, IndexSettings())
    kept = claim(cache, wanted.key, wanted, exact=True)
    assert kept is not None and kept.schema is None and kept.delta is None
    kept.data.mkdir()
    (kept.data / "PG_VERSION").write_text("16\n")
    kept.seeded("rag_eval_000000000000")
    kept.release(unchanged=True)
    return kept.folder


EDITED = [Chunk("a", "退款三天到账（已修订）", "faq.md", {"lang": "zh"}), Chunk("c", "发票七天内开具")]


def test_an_edited_corpus_copies_a_trusted_folder_of_the_same_shape_and_names_the_rows_to_change(tmp_path: Path) -> None:
    """577255f seeded every changed corpus from nothing: now the rows that differ are named, the rest copied."""
    base = donor(tmp_path)
    wanted = table(EDITED, VECTORS, IndexSettings())
    kept = claim(tmp_path, wanted.key, wanted, exact=True)
    assert kept is not None and kept.schema == "rag_eval_000000000000" and kept.delta is not None
    assert kept.delta.removed == ("b",) and kept.delta.written == {"a", "c"} and kept.delta.donor == base
    assert (kept.data / "PG_VERSION").read_text() == "16\n" and (base / "data" / "PG_VERSION").exists()
    assert (kept.folder / IN_USE).exists() and not (kept.folder / SEEDED).exists()  # trusted once updated
    kept.release(unchanged=False)


@pytest.mark.parametrize("other", [
    {"exact": False},                                   # hnsw: the graph depends on the insertion order
    {"vectors": np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], dtype=np.float32)},   # another dimension
])
def test_no_copy_for_an_index_or_a_table_of_another_shape(tmp_path: Path, other: dict[str, object]) -> None:
    donor(tmp_path)
    vectors = other.get("vectors", VECTORS)
    assert isinstance(vectors, np.ndarray)
    wanted = table(EDITED, vectors, IndexSettings())
    kept = claim(tmp_path, wanted.key, wanted, exact=bool(other.get("exact", True)))
    assert kept is not None and kept.schema is None and kept.delta is None and not kept.data.exists()
    kept.release(unchanged=False)
