"""Named chunkings (issue 43 item 4): their ids never meet the default's, each chunking's labels are its
own (one rule, applied per chunk), and the config's chunkings are read with one-line errors."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_ragretrieval.config.settings import load_config
from pytest_ragretrieval.core.errors import ConfigError
from pytest_ragretrieval.evalset.chunkers import Chunker
from pytest_ragretrieval.evalset.corpus import chunking_of, chunking_share, documents_corpus
from pytest_ragretrieval.evalset.records import Chunk, Question

TEXT = "One cat sat. Two dogs ran. Three birds flew. Four fish swam."


def corpus(tmp_path: Path) -> tuple[tuple[Chunk, ...], tuple[Question, ...]]:
    (tmp_path / "docs.jsonl").write_text(json.dumps({"id": "a", "text": TEXT}) + "\n", encoding="utf-8")
    (tmp_path / "evalset.jsonl").write_text(json.dumps(
        {"id": "q", "query": "dogs", "relevant_text": ["Two dogs ran."]}) + "\n", encoding="utf-8")
    return documents_corpus(tmp_path / "docs.jsonl", Chunker("sentences", 1), tmp_path, tmp_path / "evalset.jsonl",
                            {"big": Chunker("sentences", 4)})


def test_named_chunking_ids_and_labels_are_its_own(tmp_path: Path) -> None:
    """The default chunking labels its one sentence, the four-sentence chunking its one chunk; each
    chunking's share holds its chunks and its labels only (scored together, the small chunking's recall
    would count the big chunk as a gold chunk it missed)."""
    chunks, questions = corpus(tmp_path)
    assert [c.id for c in chunks] == ["a#0", "a#1", "a#2", "a#3", "a#big#0"]
    assert [chunking_of(c.id) for c in chunks] == ["", "", "", "", "big"]
    small, (asked,) = chunking_share("", chunks, questions)
    assert [c.id for c in small] == ["a#0", "a#1", "a#2", "a#3"] and dict(asked.relevance) == {"a#1": 1}
    big, (asked,) = chunking_share("big", chunks, questions)
    assert [c.text for c in big] == [TEXT] and dict(asked.relevance) == {"a#big#0": 1}
    assert asked.spans == questions[0].spans


HEAD = """
[tool.ragretrieval]
documents = "kb"
evalset = "data/evalset.jsonl"

[tool.ragretrieval.chunker]
type = "sentences"

[tool.ragretrieval.retrievers.bm25]
type = "bm25"
"""


def test_chunkings_are_read(tmp_path: Path) -> None:
    text = HEAD + ('[tool.ragretrieval.chunkings.small]\ntype = "tokens"\nsize = 256\noverlap = 32\n'
                   '[tool.ragretrieval.retrievers.bm25_small]\ntype = "bm25"\nchunking = "small"\n')
    (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
    config = load_config(None, tmp_path)
    assert dict(config.chunkings) == {"small": Chunker("tokens", 256, 32)}
    assert config.retriever("bm25_small").chunking == "small" and config.retriever("bm25").chunking == ""


@pytest.mark.parametrize(("extra", "message"), [
    ('[tool.ragretrieval.chunkings.small]\ntype = "words"\n', "chunkings.small"),
    ('[tool.ragretrieval.chunkings."a b"]\ntype = "sentences"\n', "chunking names may hold"),
])
def test_a_bad_chunking_is_one_line(tmp_path: Path, extra: str, message: str) -> None:
    (tmp_path / "pyproject.toml").write_text(HEAD + extra, encoding="utf-8")
    with pytest.raises(ConfigError) as error:
        load_config(None, tmp_path)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_chunkings_need_documents(tmp_path: Path) -> None:
    text = HEAD.replace('documents = "kb"', 'chunks = "c.jsonl"').replace(
        '[tool.ragretrieval.chunker]\ntype = "sentences"\n', '[tool.ragretrieval.chunkings.small]\ntype = "sentences"\n')
    (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match="chunkings.*cut documents"):
        load_config(None, tmp_path)
