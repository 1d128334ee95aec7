"""Config parsing: defaults, every key checked, errors that name the file, table and key."""
from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from projects import retriever

from pytest_ragretrieval.config.settings import Config, Tolerance, load_config
from pytest_ragretrieval.core.errors import ConfigError, one_of
from pytest_ragretrieval.scoring.metrics import MetricSpec

MINIMAL = """
[tool.ragretrieval]
chunks = "data/chunks.jsonl"
evalset = "data/evalset.jsonl"

[tool.ragretrieval.retrievers.bm25]
type = "bm25"
"""


def config_at(tmp_path: Path, text: str) -> Config:
    (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
    return load_config(None, tmp_path)


def error_of(tmp_path: Path, text: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as error:
        config_at(tmp_path, text)
    assert "\n" not in str(error.value)
    return str(error.value)


def test_defaults(tmp_path: Path) -> None:
    config = config_at(tmp_path, MINIMAL)
    assert config.chunks == tmp_path / "data" / "chunks.jsonl"
    assert config.baseline == tmp_path / "baselines" / "retrieval.json"
    assert config.k == 5 and config.depth == 5
    assert [spec.label for spec in config.metrics] == ["precision@5", "recall@5", "f1@5", "ndcg@5"]
    assert config.tokenizer == "jieba" and config.tolerance == Tolerance()
    assert config.retriever("bm25").params == {"k1": 1.5, "b": 0.75, "epsilon": 0.25, "min_score": 0.0}
    assert config.db == "auto" and config.index.kind == "exact" and config.significance == "none"
    assert config.keep_database is True
    assert config_at(tmp_path, MINIMAL.replace("[tool.ragretrieval]\n", "[tool.ragretrieval]\nkeep_database = false\n", 1)).keep_database is False


def test_metric_cutoffs_and_depth(tmp_path: Path) -> None:
    config = config_at(tmp_path, MINIMAL.replace("[tool.ragretrieval.retrievers", 'k = 3\nmetrics = ["ndcg", "recall@20", "mrr@1"]\n[tool.ragretrieval.retrievers'))
    assert [spec.label for spec in config.metrics] == ["ndcg@3", "recall@20", "mrr@1"]
    assert config.depth == 20


def test_tolerance_per_metric_by_name_or_label(tmp_path: Path) -> None:
    text = MINIMAL.replace("[tool.ragretrieval.retrievers", 'tolerance = {default = 0.02, ndcg = 0.01, "recall@5" = 0.05}\n[tool.ragretrieval.retrievers')
    tolerance = config_at(tmp_path, text).tolerance
    assert tolerance.for_metric(MetricSpec("ndcg", 5)) == 0.01
    assert tolerance.for_metric(MetricSpec("recall", 5)) == 0.05
    assert tolerance.for_metric(MetricSpec("recall", 10)) == 0.02
    assert tolerance.for_metric(MetricSpec("precision", 5)) == 0.02


def test_a_dependency_graph_of_retrievers(tmp_path: Path) -> None:
    text = MINIMAL + retriever("mine", "python", factory="pkg.mod:make", sources=["bm25"]) + "options = {alpha = 1}\n"
    config = config_at(tmp_path, text)
    assert config.retriever("mine").sources == ("bm25",)
    assert config.retriever("mine").params == {"factory": "pkg.mod:make", "options": {"alpha": 1}, "sources": ["bm25"]}



@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("[tool.ragretrieval]\n", "[tool.ragretrieval]\nkay = 5\n"), "pyproject.toml [tool.ragretrieval]: unknown key 'kay'; known keys: "),
        (("[tool.ragretrieval]\n", "[tool.ragretrieval]\nk = 2.5\n"), "pyproject.toml [tool.ragretrieval] key 'k': must be an integer, got 2.5"),
        (("[tool.ragretrieval]\n", "[tool.ragretrieval]\nk = true\n"), "pyproject.toml [tool.ragretrieval] key 'k': must be an integer, got True"),
        (('chunks = "data/chunks.jsonl"\n', ""), "pyproject.toml [tool.ragretrieval]: missing key 'chunks'"),
        (("[tool.ragretrieval]\n", '[tool.ragretrieval]\nmetrics = []\n'), "pyproject.toml [tool.ragretrieval] key 'metrics': must not be empty"),
        (("[tool.ragretrieval]\n", '[tool.ragretrieval]\nmetrics = ["ndcg", "ndcg@5"]\n'), "pyproject.toml [tool.ragretrieval] key 'metrics': names the same metric and cutoff twice"),
        (("[tool.ragretrieval]\n", '[tool.ragretrieval]\ntokenizer = "spacy"\n'), "pyproject.toml [tool.ragretrieval] key 'tokenizer': must be one of 'jieba', 'jieba-search', 'jieba-rs', 'whitespace', 'english', got 'spacy'"),
        (("[tool.ragretrieval]\n", "[tool.ragretrieval]\ntolerance = -0.1\n"), "pyproject.toml [tool.ragretrieval] key 'tolerance': must be >= 0.0, got -0.1"),
        (("[tool.ragretrieval]\n", '[tool.ragretrieval]\ntolerance = "small"\n'), "pyproject.toml [tool.ragretrieval] key 'tolerance': must be a number, got 'small'"),
        (("[tool.ragretrieval]\n", '[tool.ragretrieval]\nkeep_database = "no"\n'), "pyproject.toml [tool.ragretrieval] key 'keep_database': must be true or false, got 'no'"),
        (("[tool.ragretrieval]\n", '[tool.ragretrieval]\ndb = "sqlite"\n'), "pyproject.toml [tool.ragretrieval] key 'db': must be one of 'auto', 'docker', 'embedded', 'url', got 'sqlite'"),
        (("[tool.ragretrieval]\n", '[tool.ragretrieval]\nindex = "hsnw"\n'), "pyproject.toml [tool.ragretrieval] key 'index': must be one of 'exact', 'hnsw', got 'hsnw'; did you mean 'hnsw'?"),
        (("[tool.ragretrieval]\n", '[tool.ragretrieval]\nsignificance = "bootstrapping"\n'), "pyproject.toml [tool.ragretrieval] key 'significance': must be one of 'none', 'randomization', 'bootstrap', got 'bootstrapping'; did you mean 'bootstrap'?"),
        (("[tool.ragretrieval]\n", '[tool.ragretrieval]\nreport_language = "zh"\n'), "pyproject.toml [tool.ragretrieval] key 'report_language': must be one of 'both', 'en', got 'zh'"),
        (("[tool.ragretrieval]\n", '[tool.ragretrieval]\nembedding = "cohere:x"\n'), "pyproject.toml [tool.ragretrieval] key 'embedding': must start with"),
        (("[tool.ragretrieval]\n", '[tool.ragretrieval]\nembedding = "python:m:f"\n'), "pyproject.toml [tool.ragretrieval] key 'embedding_id': is required with a python: embedder"),
        (("[tool.ragretrieval]\n", '[tool.ragretrieval]\nfail_on = ["metrics"]\n'), "pyproject.toml [tool.ragretrieval] key 'fail_on': entries must be 'metric' or 'question', got 'metrics'"),
        (("[tool.ragretrieval]\n", "[tool.ragretrieval]\nhnsw = {m = 1}\n"), "pyproject.toml [tool.ragretrieval] hnsw key 'm': must be >= 2, got 1"),
        (('type = "bm25"', 'type = "bm25"\nk1 = "high"'), "pyproject.toml [tool.ragretrieval.retrievers.bm25] key 'k1': must be a number, got 'high'"),
        (('type = "bm25"', 'kind = "bm25"'), "pyproject.toml [tool.ragretrieval.retrievers.bm25]: missing key 'type'"),
        (("retrievers.bm25]", 'retrievers."my retriever"]'), "pyproject.toml [tool.ragretrieval.retrievers.my retriever]: retriever names may hold letters, digits"),
        (('type = "bm25"', 'type = "python"\nfactory = "nocolon"'), "pyproject.toml [tool.ragretrieval.retrievers.bm25] key 'factory': must look like 'package.module:function', got 'nocolon'"),
        (('type = "bm25"', 'type = "python"\nfactory = "m:f"\nsources = ["bm25"]'), "pyproject.toml [tool.ragretrieval.retrievers.bm25]: a retriever cannot read from itself"),
        (("[tool.ragretrieval.retrievers.bm25]\ntype = \"bm25\"\n", ""), "pyproject.toml [tool.ragretrieval]: missing key 'retrievers'"),
    ],
)
def test_bad_values_name_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: tuple[str, str], message: str) -> None:
    assert error_of(tmp_path, MINIMAL.replace(*edit), monkeypatch).startswith(message)


def test_a_closed_set_is_read_as_the_member_given(tmp_path: Path) -> None:
    """`Table.choice` returns the member that was given (typed as the Literal), not the default."""
    given = '[tool.ragretrieval]\ndb = "embedded"\nindex = "hnsw"\nsignificance = "bootstrap"\nadjustment = "none"\n'
    config = config_at(tmp_path, MINIMAL.replace("[tool.ragretrieval]\n", given, 1))
    assert (config.db, config.index.kind, config.significance, config.adjustment) == ("embedded", "hnsw", "bootstrap", "none")
    assert one_of("readwrite", "readonly", "off")("readonly") == "readonly"
    with pytest.raises(argparse.ArgumentTypeError, match=r"^invalid choice: 'read-only'; did you mean 'readonly'\?"):
        one_of("readwrite", "readonly", "off")("read-only")


def test_a_cycle_of_sources_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = MINIMAL + "".join(
        retriever(name, "python", factory="m:f", sources=[source])
        for name, source in (("a", "b"), ("b", "c"), ("c", "a"))
    )
    assert error_of(tmp_path, text, monkeypatch) == "pyproject.toml [tool.ragretrieval.retrievers.a]: sources form a cycle (a -> b -> c -> a)"


def test_missing_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"^no pyproject.toml in \.; add a \[tool.ragretrieval\] table there or pass --rag-config PATH$"):
        load_config(None, tmp_path)


def test_a_config_file_holds_the_keys_at_top_level(tmp_path: Path) -> None:
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "rag.toml").write_text('chunks = "c.jsonl"\nevalset = "e.jsonl"\n[retrievers.x]\ntype = "bm25"\n', encoding="utf-8")
    config = load_config(str(tmp_path / "eval" / "rag.toml"), tmp_path)
    assert config.chunks == tmp_path / "eval" / "c.jsonl"
    assert config.baseline == tmp_path / "eval" / "baselines" / "retrieval.json"


@pytest.mark.parametrize("key", ["ndcg\n", " ndcg", "recall@5\n"])
def test_a_metric_name_with_a_line_break_or_blank_is_no_metric(key: str) -> None:
    with pytest.raises(ValueError, match="unknown metric"):
        MetricSpec.parse(key, 5)


def test_embedding_deadlines_default_to_a_dead_server_costing_under_two_minutes(tmp_path: Path) -> None:
    from pytest_ragretrieval.embedding.openai import make

    config = config_at(tmp_path, MINIMAL)
    assert (config.embedding_timeout, config.embedding_retries) == (30.0, 2)
    assert make("m", config.embedder_settings).budget == 91.5
    tuned = config_at(tmp_path, MINIMAL.replace("[tool.ragretrieval]\n", "[tool.ragretrieval]\nembedding_timeout = 2\nembedding_retries = 1\n"))
    settings = tuned.embedder_settings
    assert (settings.timeout, settings.retries) == (2.0, 1)
    assert make("m", settings).budget == 4.5


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("embedding_timeout = 0", "key 'embedding_timeout': must be >= 0.1, got 0"),
        ("embedding_timeout = 7200", "key 'embedding_timeout': must be <= 3600.0, got 7200"),
        ('embedding_timeout = "30s"', "key 'embedding_timeout': must be a number, got '30s'"),
        ("embedding_retries = -1", "key 'embedding_retries': must be >= 0, got -1"),
        ("embedding_retries = 1.5", "key 'embedding_retries': must be an integer, got 1.5"),
    ],
)
def test_embedding_deadlines_are_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str, message: str) -> None:
    text = MINIMAL.replace("[tool.ragretrieval]\n", f"[tool.ragretrieval]\n{line}\n")
    assert error_of(tmp_path, text, monkeypatch) == f"pyproject.toml [tool.ragretrieval] {message}"


HUGE = "9" * 400


@pytest.mark.parametrize(
    ("table", "line", "key"),
    [
        ("bm25", f"k1 = {HUGE}", "k1"),
        ("bm25", f"epsilon = {HUGE}", "epsilon"),
        ("bm25", f"min_score = {HUGE}", "min_score"),
        ("bm25", f"max_latency_ms = {HUGE}", "max_latency_ms"),
        ("bm25", "max_latency_ms = inf", "max_latency_ms"),
        ("bm25", "k1 = 1e400", "k1"),
        ("h", f"weights = [1, {HUGE}]", "weights"),
        ("h", f"depth = {HUGE}", "depth"),
        ("h", f"rrf_k = {HUGE}", "rrf_k"),
    ],
)
def test_a_number_of_400_digits_is_one_line_naming_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table: str, line: str, key: str
) -> None:
    """TOML integers have no size limit: one too large for a float (or an int the code can use) is refused by name."""
    text = MINIMAL + '\n[tool.ragretrieval.retrievers.h]\ntype = "hybrid"\nsources = ["bm25", "bm25b"]\n'
    text += '\n[tool.ragretrieval.retrievers.bm25b]\ntype = "bm25"\n'
    text = text.replace(f"[tool.ragretrieval.retrievers.{table}]\n", f"[tool.ragretrieval.retrievers.{table}]\n{line}\n")
    message = error_of(tmp_path, text, monkeypatch)
    assert message.startswith(f"pyproject.toml [tool.ragretrieval.retrievers.{table}] key '{key}': ")
    assert len(message) < 300 and "99999999999999999999999" not in message


def test_top_level_numbers_of_400_digits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for line, key in ((f"k = {HUGE}", "k"), (f"alpha = {HUGE}", "alpha"), (f"tolerance = {HUGE}", "tolerance"),
                      (f"embedding_timeout = {HUGE}", "embedding_timeout"), (f"workers = {HUGE}", "workers")):
        message = error_of(tmp_path, MINIMAL.replace("[tool.ragretrieval]\n", f"[tool.ragretrieval]\n{line}\n"), monkeypatch)
        assert message.startswith(f"pyproject.toml [tool.ragretrieval] key '{key}': must be <= "), message


def test_find_reports_a_huge_number_in_a_retriever_as_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_ragretrieval.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(MINIMAL.replace('type = "bm25"', f'type = "bm25"\nk1 = {HUGE}'), encoding="utf-8")
    assert main(["find", "x"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("ragretrieval: error: pyproject.toml [tool.ragretrieval.retrievers.bm25] key 'k1': must be a finite")


def test_adjustment_and_detect_default_and_are_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = config_at(tmp_path, MINIMAL)
    assert (config.adjustment, config.detect) == ("maxt", 0.05)
    given = MINIMAL.replace("[tool.ragretrieval]\n", '[tool.ragretrieval]\nadjustment = "holm"\ndetect = 0.1\n', 1)
    assert (config_at(tmp_path, given).adjustment, config_at(tmp_path, given).detect) == ("holm", 0.1)
    for line, found in (('adjustment = "max-t"', "key 'adjustment': must be one of 'maxt', 'holm', 'none', got 'max-t'"),
                        ("detect = 0", "key 'detect': must be above 0"), ("detect = 1.5", "key 'detect': must be <= 1")):
        text = MINIMAL.replace("[tool.ragretrieval]\n", f"[tool.ragretrieval]\n{line}\n", 1)
        assert found in error_of(tmp_path, text, monkeypatch)
