"""`--rag-config PATH`: the same keys at the top level of another TOML file."""
from __future__ import annotations

import pytest
from projects import RUN, write_project

CONFIG = """
chunks = "../fixtures/chunks.jsonl"
evalset = "../fixtures/evalset.jsonl"
baseline = "baselines/other.json"
k = 2
metrics = ["ndcg", "recall@5"]

[retrievers.lexical]
type = "bm25"
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    write_project(pytester.path)
    (pytester.path / "eval").mkdir()
    (pytester.path / "eval" / "rag.toml").write_text(CONFIG, encoding="utf-8")
    return pytester


def test_paths_are_relative_to_the_config_file(project: pytest.Pytester) -> None:
    result = project.runpytest("--rag-update-baseline", "--rag-config", "eval/rag.toml", *RUN)
    result.assert_outcomes(passed=2)
    assert (project.path / "eval" / "baselines" / "other.json").exists()
    assert not (project.path / "baselines").exists()
    result = project.runpytest("--rag-eval", "--rag-config", "eval/rag.toml", "--collect-only", "-q", *RUN)
    result.stdout.fnmatch_lines(["rag::lexical::ndcg@2", "rag::lexical::recall@5"])


def test_the_header_names_the_config_file(project: pytest.Pytester) -> None:
    result = project.runpytest("--rag-eval", "--rag-config", "eval/rag.toml", "--collect-only", *RUN)
    result.stdout.fnmatch_lines(["rag: config eval/rag.toml", "rag: 8 chunks, 6 questions (5 answerable, 1 no-answer), k=2*"])


def test_errors_name_the_config_file_and_table(project: pytest.Pytester) -> None:
    path = project.path / "eval" / "rag.toml"
    path.write_text(CONFIG.replace('type = "bm25"', 'type = "bm25"\nb = 2.0'), encoding="utf-8")
    result = project.runpytest("--rag-eval", "--rag-config", "eval/rag.toml", *RUN)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: eval/rag.toml [[]retrievers.lexical[]] key 'b': must be <= 1, got 2.0"])


def test_invalid_toml_is_one_line(project: pytest.Pytester) -> None:
    (project.path / "eval" / "rag.toml").write_text("k = [3\n", encoding="utf-8")
    result = project.runpytest("--rag-eval", "--rag-config", "eval/rag.toml", *RUN)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: eval/rag.toml: invalid TOML (*)"])


def test_a_missing_config_file(project: pytest.Pytester) -> None:
    result = project.runpytest("--rag-eval", "--rag-config", "eval/nope.toml", *RUN)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: eval/nope.toml: config file not found"])
