"""The content-addressed cache: layout, atomic writes, modes, and the readonly message."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from pytest_ragretrieval import cache as cache_module
from pytest_ragretrieval import paths as files_module
from pytest_ragretrieval.cache import RECORD_COMMAND, Cache
from pytest_ragretrieval.errors import RagError


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_layout(tmp_path: Path) -> None:
    model_id = "openai:text-embedding-3-small@http://127.0.0.1:8000/v1"
    space = Cache(tmp_path / ".rag-cache").namespace("embeddings", model_id, ext="npy")
    space.put("hello", b"vector")
    digest = sha("hello")
    name = f"openai_text-embedding-3-small_http_127.0.0.1_8000_v1-{sha(model_id)[:8]}"
    folder = tmp_path / ".rag-cache" / "embeddings" / name
    assert space.folder == folder
    assert (folder / digest[:2] / f"{digest}.npy").read_bytes() == b"vector"
    assert (folder / "id.txt").read_text(encoding="utf-8") == model_id + "\n"
    assert space.get("hello") == b"vector"
    assert space.get("other") is None


def test_slug_keeps_names_readable_and_short() -> None:
    assert cache_module.slug("sentence-transformers:all-MiniLM-L6-v2") == "sentence-transformers_all-MiniLM-L6-v2"
    assert len(cache_module.slug("x" * 500)) == 60
    assert cache_module.slug("///") == "model"


def test_put_overwrites_and_leaves_no_temporary_files(tmp_path: Path) -> None:
    space = Cache(tmp_path).namespace("embeddings", "m")
    space.put("k", b"one")
    space.put("k", b"two")
    assert space.get("k") == b"two"
    leftovers = [p for p in tmp_path.rglob("*") if p.is_file() and p.name.endswith(".tmp")]
    assert leftovers == []


def test_failed_put_keeps_the_old_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    space = Cache(tmp_path).namespace("embeddings", "m")
    space.put("k", b"old")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(files_module.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        space.put("k", b"new")
    monkeypatch.undo()
    assert space.get("k") == b"old"
    assert [p.name for p in space.path("k").parent.iterdir()] == [space.path("k").name]


def test_readonly_reads_but_never_writes(tmp_path: Path) -> None:
    Cache(tmp_path).namespace("embeddings", "m").put("k", b"data")
    readonly = Cache(tmp_path, "readonly").namespace("embeddings", "m")
    assert readonly.get("k") == b"data"
    readonly.put("new", b"x")
    assert readonly.get("new") is None
    fresh = Cache(tmp_path, "readonly").namespace("embeddings", "unseen")
    fresh.put("k", b"x")
    assert not fresh.folder.exists()


def test_off_neither_reads_nor_writes(tmp_path: Path) -> None:
    Cache(tmp_path).namespace("embeddings", "m").put("k", b"data")
    off = Cache(tmp_path, "off").namespace("embeddings", "m")
    assert off.get("k") is None
    off.put("other", b"x")
    assert not off.path("other").exists()


def test_namespaces_are_separate_by_model_id_and_kind(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    cache.namespace("embeddings", "model-a").put("k", b"a")
    cache.namespace("embeddings", "model-b").put("k", b"b")
    cache.namespace("rerank", "model-a").put("k", b"r")
    assert cache.namespace("embeddings", "model-a").get("k") == b"a"
    assert cache.namespace("embeddings", "model-b").get("k") == b"b"
    assert cache.namespace("rerank", "model-a").get("k") == b"r"
    assert cache.namespace("rerank", "model-b").get("k") is None


def test_ids_with_the_same_slug_get_different_folders(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    first = cache.namespace("embeddings", "a/b")
    second = cache.namespace("embeddings", "a:b")
    assert cache_module.slug("a/b") == cache_module.slug("a:b")
    assert first.folder != second.folder


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
        Cache(tmp_path, "rw")


def test_kind_must_be_a_folder_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        Cache(tmp_path).namespace("../up", "m")
    assert os.listdir(tmp_path) == []
