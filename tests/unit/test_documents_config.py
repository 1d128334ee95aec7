"""`documents` and `[chunker]` in the config: read, and every wrong combination one line naming the key and fix."""
from __future__ import annotations

from pathlib import Path

import pytest

from pytest_ragretrieval.baseline.fingerprint import chunking
from pytest_ragretrieval.config.settings import Config, load_config
from pytest_ragretrieval.core.errors import ConfigError
from pytest_ragretrieval.evalset.chunkers import Chunker

HEAD = """
[tool.ragretrieval]
documents = "kb"
evalset = "data/evalset.jsonl"

[tool.ragretrieval.retrievers.bm25]
type = "bm25"
"""


def config_at(tmp_path: Path, text: str) -> Config:
    (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
    return load_config(None, tmp_path)


def error_of(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as error:
        config_at(tmp_path, text)
    assert "\n" not in str(error.value)
    return str(error.value)


@pytest.mark.parametrize(("table", "chunker"), [
    ('type = "tokens"', Chunker("tokens", 512, 64, "unicode")),
    ('type = "tokens"\nsize = 256\noverlap = 32\ntokenizer = "chars"', Chunker("tokens", 256, 32, "chars")),
    ('type = "sentences"\nsize = 3\noverlap = 1', Chunker("sentences", 3, 1)),
    ('type = "markdown"', Chunker("markdown", 2000)),
    ('python = "myapp.chunking:split"', Chunker("python", python="myapp.chunking:split", timeout=60.0)),
    ('python = "myapp.chunking:split"\ntimeout = 2.5', Chunker("python", python="myapp.chunking:split", timeout=2.5)),
])
def test_documents_with_a_chunker(tmp_path: Path, table: str, chunker: Chunker) -> None:
    config = config_at(tmp_path, HEAD + "\n[tool.ragretrieval.chunker]\n" + table + "\n")
    assert config.documents == tmp_path / "kb" and config.chunks is None and config.team_corpus is None
    assert config.chunker == chunker


@pytest.mark.parametrize(("text", "message"), [
    (HEAD.replace('documents = "kb"', 'documents = "kb"\nchunks = "c.jsonl"') + '[tool.ragretrieval.chunker]\ntype = "tokens"\n',
     "key 'documents': and chunks cannot both be set: a chunks file is already chunked; keep one"),
    (HEAD, "key 'chunker': documents need a chunker; add [tool.ragretrieval.chunker] with type = \"tokens\""),
    (HEAD.replace('documents = "kb"', 'chunks = "c.jsonl"') + '[tool.ragretrieval.chunker]\ntype = "tokens"\n',
     "key 'chunker': cuts documents, and this config names none; add documents = \"PATH\" or remove the chunker"),
    (HEAD + '[tool.ragretrieval.chunker]\ntype = "tokens"\nsize = 64\noverlap = 64\n',
     "chunker key 'overlap': must be below size (64), got 64"),
    (HEAD + '[tool.ragretrieval.chunker]\ntype = "tokens"\nsize = 8\n',
     "chunker key 'overlap': must be below size (8), got the default 64; set overlap below 8"),
    (HEAD + '[tool.ragretrieval.chunker]\npython = "a:b"\ntimeout = 0\n', "chunker key 'timeout': must be >= 0.1, got 0"),
    (HEAD + '[tool.ragretrieval.chunker]\npython = "a:b"\ntimeout = "1m"\n', "chunker key 'timeout': must be a number"),
    (HEAD + '[tool.ragretrieval.chunker]\ntype = "tokens"\ntimeout = 5\n', "chunker: unknown key 'timeout'"),
    (HEAD + '[tool.ragretrieval.chunker]\ntype = "token"\n', "chunker key 'type': must be one of"),
    (HEAD + '[tool.ragretrieval.chunker]\ntype = "markdown"\noverlap = 1\n', "chunker: unknown key 'overlap'"),
    (HEAD + '[tool.ragretrieval.chunker]\nsize = 5\n', "chunker: missing key 'type'"),
    (HEAD + '[tool.ragretrieval.chunker]\npython = "split"\n', "chunker key 'python': must be \"module:function\""),
])
def test_wrong_combinations_are_one_line(tmp_path: Path, text: str, message: str) -> None:
    assert message in error_of(tmp_path, text)


def test_the_fingerprint_records_the_chunker_and_the_documents(tmp_path: Path) -> None:
    """A chunking change and a documents change each show in `fingerprint.chunks`, beside the chunks' own digests."""
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "a.md").write_text("# A\n\nOne. Two.\n", encoding="utf-8")
    small = config_at(tmp_path, HEAD + '\n[tool.ragretrieval.chunker]\ntype = "tokens"\nsize = 256\noverlap = 32\n')
    large = config_at(tmp_path, HEAD + '\n[tool.ragretrieval.chunker]\ntype = "tokens"\n')
    recorded = chunking(small)
    assert recorded["chunker"] == {"type": "tokens", "size": 256, "overlap": 32, "tokenizer": "unicode"}
    assert chunking(large)["chunker"]["size"] == 512 and chunking(large)["documents"] == recorded["documents"]
    (tmp_path / "kb" / "a.md").write_text("# A\n\nOne. Three.\n", encoding="utf-8")
    assert chunking(small)["documents"]["sha256"] != recorded["documents"]["sha256"]
    assert chunking(small)["documents"]["count"] == 1
