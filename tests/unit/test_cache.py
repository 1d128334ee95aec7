"""The content-addressed cache: pack files, atomic writes, modes, the legacy layout, and the readonly message."""
from __future__ import annotations

import hashlib
import io
import os
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_ragretrieval.cache import store as cache_module
from pytest_ragretrieval.cache.store import RECORD_COMMAND, Cache, Mode, Namespace
from pytest_ragretrieval.core.errors import RagError
from pytest_ragretrieval.files import paths as files_module


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def vectors(folder: Path, mode: Mode = "readwrite", model: str = "model-a") -> Namespace:
    return Cache(folder, mode).namespace("embeddings", model, ext="npy", dtype="<f4")


def packs(space: Namespace) -> list[str]:
    return sorted(path.name for path in space.folder.glob("*.pack"))


def test_layout(tmp_path: Path) -> None:
    model_id = "openai:text-embedding-3-small@http://127.0.0.1:8000/v1"
    space = vectors(tmp_path / ".rag-cache", model=model_id)
    path = space.write({"hello": np.arange(3, dtype=np.float32)})
    name = f"openai_text-embedding-3-small_http_127.0.0.1_8000_v1-{sha(model_id)[:8]}"
    folder = tmp_path / ".rag-cache" / "embeddings" / name
    assert space.folder == folder and path is not None and path.parent == folder
    assert path.name == hashlib.sha256(path.read_bytes()).hexdigest() + ".pack"
    assert (folder / "id.txt").read_text(encoding="utf-8") == model_id + "\n"
    assert sorted(p.name for p in folder.iterdir()) == sorted(["id.txt", path.name])
    fresh = vectors(tmp_path / ".rag-cache", model=model_id)
    assert fresh.read(["hello", "other"])[0].tolist() == [0, 1, 2]  # type: ignore[union-attr]
    assert fresh.read(["other"]) == [None]


def test_the_same_entries_make_the_same_file_whatever_the_order(tmp_path: Path) -> None:
    entries = {f"t{i}": np.arange(3, dtype=np.float32) + i for i in range(10)}
    a = vectors(tmp_path / "a").write(entries)
    b = vectors(tmp_path / "b").write(dict(reversed(list(entries.items()))))
    assert a is not None and b is not None and a.name == b.name and a.read_bytes() == b.read_bytes()


def test_rows_come_from_every_pack_and_misses_are_named(tmp_path: Path) -> None:
    vectors(tmp_path).write({f"t{i}": np.full(4, i, dtype=np.float32) for i in range(5)})
    vectors(tmp_path).write({f"u{i}": np.full(4, 10 + i, dtype=np.float32) for i in range(3)})
    matrix, missing = vectors(tmp_path).read_rows(["u2", "t0", "nope", "t4"])
    assert matrix is not None and matrix[:, 0].tolist() == [12, 0, 0, 4] and missing == [2]
    assert len(packs(vectors(tmp_path))) == 2
    assert vectors(tmp_path / "empty").read_rows(["a"]) == (None, [0])


def test_two_branches_adding_entries_add_two_files_and_both_are_read(tmp_path: Path) -> None:
    """What makes a committed cache merge without conflicts: no file is ever changed."""
    first = vectors(tmp_path / "one").write({"a": np.ones(2, np.float32)})
    second = vectors(tmp_path / "two").write({"b": np.zeros(2, np.float32)})
    assert first is not None and second is not None and first.name != second.name
    merged = tmp_path / "merged" / "embeddings" / first.parent.name
    merged.mkdir(parents=True)
    for path in (first, second):
        (merged / path.name).write_bytes(path.read_bytes())
    matrix, missing = vectors(tmp_path / "merged").read_rows(["a", "b"])
    assert missing == [] and matrix is not None and matrix.tolist() == [[1, 1], [0, 0]]


def test_entries_of_different_lengths_are_an_error(tmp_path: Path) -> None:
    vectors(tmp_path).write({"a": np.ones(2, np.float32)})
    vectors(tmp_path).write({"b": np.ones(3, np.float32)})
    with pytest.raises(RagError, match="is damaged .*different lengths.*delete it"):
        vectors(tmp_path).read_rows(["a", "b"])


def test_put_holds_entries_until_flush_and_get_sees_them(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    space = cache.namespace("rerank", "m", ext="f64", dtype="<f8")
    space.put("q\0a", np.float64(0.5).tobytes())
    assert space.get("q\0a") == np.float64(0.5).tobytes()
    assert not space.folder.exists()
    cache.flush()
    assert len(packs(space)) == 1
    assert Cache(tmp_path).namespace("rerank", "m", ext="f64", dtype="<f8").get("q\0a") == np.float64(0.5).tobytes()


def test_put_writes_a_pack_every_pending_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Namespace, "pending_limit", 3)
    space = Cache(tmp_path).namespace("rerank", "m", dtype="<f8")
    for i in range(7):
        space.put(f"k{i}", np.float64(i).tobytes())
    assert len(packs(space)) == 2


def test_a_failed_write_leaves_no_file_and_keeps_the_old_packs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = vectors(tmp_path).write({"k": np.ones(2, np.float32)})

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)  # as files/paths.py calls it
    with pytest.raises(OSError, match="disk full"):
        vectors(tmp_path).write({"new": np.zeros(2, np.float32)})
    monkeypatch.undo()
    assert old is not None and sorted(p.name for p in old.parent.iterdir()) == sorted(["id.txt", old.name])
    assert vectors(tmp_path).read(["k", "new"])[1] is None


def test_a_write_removes_the_half_pack_a_killed_run_left(tmp_path: Path) -> None:
    space = vectors(tmp_path)
    space.write({"k": np.ones(2, np.float32)})
    half = space.folder / ".0123abcd.pack.x1y2z3w4.tmp"
    half.write_bytes(b"RAGPACK half of it")
    then = time.time() - files_module.STALE_AFTER_S - 1
    os.utime(half, (then, then))
    vectors(tmp_path).write({"new": np.zeros(2, np.float32)})
    assert not half.exists() and len(packs(vectors(tmp_path))) == 2


def test_readonly_reads_but_never_writes(tmp_path: Path) -> None:
    vectors(tmp_path).write({"k": np.ones(2, np.float32)})
    readonly = vectors(tmp_path, "readonly")
    assert readonly.read(["k"])[0] is not None
    assert readonly.write({"new": np.ones(2, np.float32)}) is None
    readonly.put("new", b"\0" * 4)
    assert readonly.read(["new"]) == [None]
    fresh = vectors(tmp_path, "readonly", model="unseen")
    fresh.write({"k": np.ones(2, np.float32)})
    assert not fresh.folder.exists()


def test_off_neither_reads_nor_writes(tmp_path: Path) -> None:
    vectors(tmp_path).write({"k": np.ones(2, np.float32)})
    off = vectors(tmp_path, "off")
    assert off.read(["k"]) == [None] and off.read_rows(["k"]) == (None, [0])
    assert off.write({"other": np.ones(2, np.float32)}) is None
    assert len(packs(off)) == 1


def test_namespaces_are_separate_by_model_id_and_kind(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    cache.namespace("embeddings", "model-a").put("k", b"a")
    cache.namespace("embeddings", "model-b").put("k", b"b")
    cache.namespace("rerank", "model-a").put("k", b"r")
    cache.flush()
    fresh = Cache(tmp_path)
    assert fresh.namespace("embeddings", "model-a").get("k") == b"a"
    assert fresh.namespace("embeddings", "model-b").get("k") == b"b"
    assert fresh.namespace("rerank", "model-a").get("k") == b"r"
    assert fresh.namespace("rerank", "model-b").get("k") is None


def test_one_namespace_object_per_folder_so_packs_are_read_once(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    assert cache.namespace("embeddings", "m", dtype="<f4") is cache.namespace("embeddings", "m", dtype="<f4")
    with pytest.raises(ValueError, match="holds float32, asked for float64"):
        cache.namespace("embeddings", "m", dtype="<f8")


def test_ids_with_the_same_slug_get_different_folders(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    first = cache.namespace("embeddings", "a/b")
    second = cache.namespace("embeddings", "a:b")
    assert cache_module.slug("a/b") == cache_module.slug("a:b")
    assert first.folder != second.folder
    assert cache_module.slug("sentence-transformers:all-MiniLM-L6-v2") == "sentence-transformers_all-MiniLM-L6-v2"
    assert len(cache_module.slug("x" * 500)) == 60
    assert cache_module.slug("///") == "model"


@pytest.mark.parametrize("damage", [lambda b: b[:-3], lambda b: b"NOTAPACK" + b[8:], lambda b: b[:20]])
def test_a_damaged_pack_is_one_line_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    path = vectors(tmp_path).write({"t": np.ones(2, np.float32)})
    assert path is not None
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(RagError, match=r"^cache embeddings/model-a-\w+/\w+\.pack is damaged \(.*\); delete it") as info:
        vectors(tmp_path).read(["t"])
    assert "\n" not in str(info.value)


def test_a_pack_of_another_dtype_is_damaged(tmp_path: Path) -> None:
    vectors(tmp_path).write({"t": np.ones(2, np.float32)})
    with pytest.raises(RagError, match=r"dtype <f4, expected <f8"):
        Cache(tmp_path).namespace("embeddings", "model-a", dtype="<f8").read(["t"])


def test_compact_merges_this_runs_packs_into_one(tmp_path: Path) -> None:
    space = vectors(tmp_path)
    kept = space.write({"old": np.ones(2, np.float32)})
    written = [space.write({f"t{i}": np.full(2, i, np.float32)}) for i in range(3)]
    merged = space.compact([path for path in written if path is not None])
    assert merged is not None and kept is not None
    assert packs(space) == sorted([kept.name, merged.name])
    alone = vectors(tmp_path / "alone").write({f"t{i}": np.full(2, i, np.float32) for i in range(3)})
    assert alone is not None and alone.name == merged.name
    matrix, missing = vectors(tmp_path).read_rows(["t0", "t1", "t2", "old"])
    assert missing == [] and matrix is not None and matrix[:, 0].tolist() == [0, 1, 2, 1]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["甲", "乙", "丙", "a", "b", "\x00", "\x1f", "'", '"']), max_size=6),
                min_size=1, max_size=8))
def test_token_packs_round_trip_any_token(tmp_path_factory: pytest.TempPathFactory, corpus: list[list[str]]) -> None:
    folder = tmp_path_factory.mktemp("tokens")
    texts = [f"text {i}" for i in range(len(corpus))]
    half = len(corpus) // 2
    for part in (range(half), range(half, len(corpus))):
        words: dict[str, int] = {}
        rows = {texts[i]: np.asarray([words.setdefault(t, len(words)) for t in corpus[i]], np.int32) for i in part}
        Cache(folder).namespace("tokens", "test", dtype="<i4").write(rows, list(words))
    vocabulary, found = Cache(folder).namespace("tokens", "test", dtype="<i4").read_tokens([*texts, "missing"])
    assert found[-1] is None
    assert [[vocabulary[i] for i in row] for row in found[:-1]] == corpus  # type: ignore[union-attr]


# The one-file-per-entry layout of earlier versions


def legacy_vector(space: Namespace, text: str, vector: np.ndarray) -> Path:
    path = space.legacy_path(text)
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    np.save(buffer, vector, allow_pickle=False)
    path.write_bytes(buffer.getvalue())
    return path


def test_legacy_entries_are_moved_into_one_pack_when_the_namespace_is_first_read(tmp_path: Path) -> None:
    space = vectors(tmp_path)
    digest = sha("a")
    path = legacy_vector(space, "a", np.arange(3, dtype=np.float32))
    other = legacy_vector(space, "b", np.ones(3, dtype=np.float32))
    assert path == space.folder / digest[:2] / f"{digest}.npy"
    matrix, missing = vectors(tmp_path).read_rows(["a", "c"])
    assert missing == [1] and matrix is not None and matrix[0].tolist() == [0, 1, 2]
    assert not path.exists() and not path.parent.exists() and not other.exists()
    assert sorted(p.name for p in space.folder.iterdir()) == sorted(["id.txt", *packs(space)]) and len(packs(space)) == 1
    assert Cache(tmp_path).namespace("embeddings", "model-a", ext="npy", dtype="<f4").read(["b"])[0] is not None
    again = vectors(tmp_path / "again")
    legacy_vector(again, "b", np.ones(3, dtype=np.float32))
    legacy_vector(again, "a", np.arange(3, dtype=np.float32))
    assert vectors(tmp_path / "again").read(["a"])[0] is not None
    assert packs(again) == packs(space)


def test_legacy_entries_are_only_read_when_the_cache_is_readonly(tmp_path: Path) -> None:
    path = legacy_vector(vectors(tmp_path), "a", np.arange(3, dtype=np.float32))
    assert vectors(tmp_path, "readonly").read(["a"])[0].tolist() == [0, 1, 2]  # type: ignore[union-attr]
    assert path.exists() and packs(vectors(tmp_path)) == []


def test_legacy_scores_are_read(tmp_path: Path) -> None:
    space = Cache(tmp_path).namespace("rerank", "m", ext="f64", dtype="<f8")
    path = space.legacy_path("q\0c")
    path.parent.mkdir(parents=True)
    path.write_bytes(np.float64(0.25).tobytes())
    assert Cache(tmp_path).namespace("rerank", "m", ext="f64", dtype="<f8").get("q\0c") == np.float64(0.25).tobytes()


def test_an_unreadable_legacy_file_is_a_miss_and_a_wrong_one_an_error(tmp_path: Path) -> None:
    space = vectors(tmp_path)
    space.legacy_path("a").parent.mkdir(parents=True)
    space.legacy_path("a").write_bytes(b"not npy")
    assert vectors(tmp_path).read(["a"]) == [None]
    legacy_vector(vectors(tmp_path / "b"), "a", np.ones((2, 2), dtype=np.float32))
    with pytest.raises(RagError, match=r"\.npy is damaged \(an entry of shape \(2, 2\).*delete it"):
        vectors(tmp_path / "b").read(["a"])


# Messages


def test_readonly_miss_message_gives_count_embedder_and_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    space = Cache(tmp_path / ".rag-cache", "readonly").namespace("embeddings", "sentence-transformers:all-MiniLM-L6-v2")
    error = space.miss_error(3, "chunks")
    message = str(error)
    assert isinstance(error, RagError)
    assert "\n" not in message
    assert "3 chunks" in message
    assert "'sentence-transformers:all-MiniLM-L6-v2'" in message
    assert message.startswith("cache .rag-cache/embeddings/")
    assert message.endswith(RECORD_COMMAND)
    assert "--rag-cache=readwrite" in RECORD_COMMAND and ".rag-cache/" in RECORD_COMMAND


def test_bad_mode_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(RagError, match="cache mode must be 'readwrite', 'readonly', 'off', got 'rw'"):
        Cache(tmp_path, "rw")  # type: ignore[arg-type]  # what an untyped caller may pass


def test_kind_must_be_a_folder_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        Cache(tmp_path).namespace("../up", "m")
    assert os.listdir(tmp_path) == []
