"""The `sql` retriever's query check (one SELECT, read by a tokenizer), settings that round-trip through
the baseline, echoed values cut, and the team server's messages (issue 40, items 8, 10 and 11)."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from projects import retriever

from pytest_ragretrieval.baseline.fingerprint import retriever_fingerprint
from pytest_ragretrieval.baseline.since import corpus_change
from pytest_ragretrieval.config.settings import Config, load_config
from pytest_ragretrieval.core.errors import ConfigError, RetrieverError
from pytest_ragretrieval.core.values import quoted
from pytest_ragretrieval.database.session import TeamCorpus, limits_note
from pytest_ragretrieval.evalset.records import Question
from pytest_ragretrieval.record.codec import decode, encode
from pytest_ragretrieval.retrievers.sql import body, statement_problem
from pytest_ragretrieval.runner.execute import checked_ranking

HEAD = '[tool.ragretrieval]\nevalset = "evalset.jsonl"\nchunks = "chunks.jsonl"\n'
DOCS_QUERY = """
SELECT id FROM kb.docs
WHERE lang = 'zh' AND to_tsvector('simple', body) @@ plainto_tsquery('simple', %(query)s)
ORDER BY ts_rank(to_tsvector('simple', body), plainto_tsquery('simple', %(query)s)) DESC, id
LIMIT %(k)s
"""
"""The Database page's own example, as TOML's multi-line string gives it: it begins with a line break."""


def config_at(folder: Path, text: str) -> Config:
    (folder / "pyproject.toml").write_text(text, encoding="utf-8")
    return load_config(None, folder)


def query_error(tmp_path: Path, query: str) -> str:
    with pytest.raises(ConfigError) as error:
        config_at(tmp_path, HEAD + retriever("fts", "sql", query=query))
    assert "\n" not in str(error.value)
    return str(error.value)


@pytest.mark.parametrize("query", [
    DOCS_QUERY,
    "SELECT id FROM docs ORDER BY emb <=> %(embedding)s LIMIT %(k)s;  -- best first\n",
    "WITH RECURSIVE near(id) AS MATERIALIZED (SELECT id FROM docs), far AS (VALUES ('x')) SELECT id FROM near",
    "SELECT id FROM docs WHERE body <> ';' AND note <> $$; DROP TABLE docs$$ /* ; /* nested ; */ */ -- ;\nLIMIT 5",
    "SELECT substring(id FROM 1 FOR 8) FROM docs WHERE body <> E'\\'; DELETE FROM docs'",
    'SELECT "for" FROM "docs;" LIMIT %(k)s',
])
def test_one_select_is_accepted(tmp_path: Path, query: str) -> None:
    assert statement_problem(query) is None
    assert config_at(tmp_path, HEAD + retriever("fts", "sql", query=query)).retriever("fts").params["query"] == query


@pytest.mark.parametrize(("query", "problem"), [
    ("COPY (SELECT id FROM docs) TO PROGRAM 'touch /tmp/owned'", "must be one SELECT (or WITH ... SELECT), got COPY"),
    ("COPY docs TO '/tmp/docs.csv'", "got COPY"),
    ("ANALYZE docs", "got ANALYZE"),
    ("REINDEX TABLE docs", "got REINDEX"),
    ("LOCK TABLE docs IN ACCESS EXCLUSIVE MODE", "got LOCK"),
    ("EXPLAIN ANALYZE SELECT id FROM docs", "got EXPLAIN"),
    ("/* SELECT */ DELETE FROM docs RETURNING id", "got DELETE"),
    ("WITH gone AS (DELETE FROM docs RETURNING id) SELECT id FROM gone", "holds DELETE in its WITH clause"),
    ("WITH a AS (WITH b AS (INSERT INTO t VALUES (1) RETURNING 1) SELECT 1) SELECT 1", "holds INSERT in its WITH"),
    ("WITH a AS (SELECT 1) UPDATE docs SET body = ''", "got UPDATE"),
    ("SELECT id INTO copied FROM docs", "SELECT ... INTO"),
    ("SELECT id FROM docs FOR UPDATE", "FOR UPDATE or FOR SHARE"),
    ("SELECT id FROM (SELECT id FROM docs FOR KEY SHARE) AS s", "FOR UPDATE or FOR SHARE"),
    ("SELECT 1 -- one\n; ANALYZE", "must be one statement"),
    ("SELECT ';' ; SELECT 2", "must be one statement"),
    ("SELECT 'open", "unterminated quoted string"),
    ("SELECT $x$ open", "unterminated dollar quote $x$"),
    ("SELECT 1 /* open", "unterminated /* comment"),
    ("SELECT (1", "'(' without its ')'"),
])
def test_anything_else_is_refused_in_one_line_naming_the_key(tmp_path: Path, query: str, problem: str) -> None:
    """On 571473c only `;` and unknown placeholders were refused: COPY ... TO PROGRAM ran a shell command
    on the server, once per question, and ANALYZE, REINDEX and LOCK ran as the role could."""
    message = query_error(tmp_path, query)
    assert "[tool.ragretrieval.retrievers.fts] key 'query': " in message and problem in message, message


@pytest.mark.parametrize(("query", "problem"), [
    ("SELECT id FROM (WITH gone AS (DELETE FROM docs RETURNING id) SELECT id FROM gone) AS s", "holds DELETE inside"),
    ("SELECT id FROM docs WHERE id IN (WITH a AS ((SELECT 1)), b AS (\n  insert INTO t VALUES (1) RETURNING 1) "
     "SELECT 1)", "holds INSERT inside"),
    ("SELECT * FROM (SELECT * FROM (WITH u AS (/* c */ UpDaTe docs SET body = '' RETURNING id) SELECT id FROM u) a) b",
     "holds UPDATE inside"),
    ('SELECT * FROM (WITH u AS (UPDATE "docs" SET body = \'\' RETURNING id) SELECT id FROM u) a', "holds UPDATE inside"),
    ("SELECT * FROM (WITH m AS (MERGE INTO docs USING t ON true WHEN MATCHED THEN DELETE RETURNING id) "
     "SELECT id FROM m) a", "holds MERGE inside"),
    ("SELECT pg_read_file('PG_VERSION')", "must not call pg_read_file()"),
    ("SELECT id FROM docs, PG_CATALOG.Pg_Ls_Dir ( '.' ) AS f", "must not call pg_ls_dir()"),
    ('SELECT id FROM docs WHERE pg_catalog."pg_read_binary_file"(\'x\') IS NULL', "must not call pg_read_binary_file()"),
    ("SELECT lo_export(1, '/tmp/x') FROM docs", "must not call lo_export()"),
    ("SELECT LO_IMPORT /* a comment */ ('/etc/passwd')", "must not call lo_import()"),
    ("SELECT pg_stat_file('base')", "must not call pg_stat_file()"),
    ("SELECT pg_stat_reset()", "must not call pg_stat_reset()"),
    ("SELECT id FROM docs WHERE pg_stat_reset_shared('bgwriter') IS NULL", "must not call pg_stat_reset_shared()"),
    ("SELECT pg_terminate_backend(pid) FROM pg_stat_activity", "must not call pg_terminate_backend()"),
    ("SELECT id FROM docs WHERE NOT pg_cancel_backend(1)", "must not call pg_cancel_backend()"),
    ("SELECT query_to_xml('select pg_read_file(''x'')', true, true, '')", "must not call query_to_xml()"),
    ('SELECT id FROM docs WHERE U&"pg_read_file"(\'x\') IS NULL', 'holds a U&"..." identifier'),
])
def test_a_nested_data_modifying_with_and_server_functions_are_refused(
    tmp_path: Path, query: str, problem: str
) -> None:
    """On 577255f each of these passed the check: a data-modifying WITH nested in parentheses (the server
    refused it), and functions that read the server's files, reset its statistics or end other sessions."""
    message = query_error(tmp_path, query)
    assert "[tool.ragretrieval.retrievers.fts] key 'query': " in message and problem in message, message


@pytest.mark.parametrize(("accepted", "refused"), [
    ('SELECT "PG_READ_FILE"(body) FROM docs', 'SELECT "pg_read_file"(body) FROM docs'),
    ("SELECT id FROM docs WHERE body <> 'pg_read_file(x)' AND note <> $$ (DELETE FROM docs) $$ -- lo_export(\n",
     "SELECT id FROM docs WHERE body <> 'pg_read_file(x)' AND note <> lo_export(1, $$ (DELETE FROM docs) $$)"),
    ("SELECT (update) AS updated, pg_read_file_name FROM docs ORDER BY (update + 1), (delete) LIMIT %(k)s",
     "SELECT id FROM (WITH d AS (delete FROM docs RETURNING id) SELECT id FROM d) AS s LIMIT %(k)s"),
    ('SELECT "pg_stat_reset" FROM docs', 'SELECT "pg_stat_reset"() FROM docs'),
])
def test_names_that_only_look_like_them_are_accepted(accepted: str, refused: str) -> None:
    """A quoted name is case-sensitive (another function), a literal or comment is no call, and a column
    named update is no statement; the call and the statement beside each are refused."""
    assert statement_problem(accepted) is None, statement_problem(accepted)
    assert statement_problem(refused) is not None


def test_the_statement_run_is_the_query_without_its_trailing_semicolons_and_comments() -> None:
    assert body("SELECT id FROM t WHERE x = 'a;' ; ; -- done\n") == "SELECT id FROM t WHERE x = 'a;'"
    assert body(DOCS_QUERY) == DOCS_QUERY.rstrip()


def toml_string(text: str) -> str:
    """A TOML basic string holding `text` exactly (JSON's escapes are TOML's; DEL must be escaped too)."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def round_trip(folder: Path, text: str) -> None:
    """Load the config; if it loads, its retrievers' fingerprint is recorded in a baseline that reads back."""
    try:
        config = config_at(folder, text)
    except ConfigError as exc:
        assert "\n" not in str(exc)
        return
    setup = {spec.name: {"engine": {"server": "16.4"}} for spec in config.retrievers}
    found: dict[str, Any] = {spec.name: retriever_fingerprint(config, spec.name, setup) for spec in config.retrievers}
    record = decode(Path("base.json"), json.dumps({
        "format_version": 3, "k": 5, "plugin_version": "0.1.0", "fingerprint": {"retrievers": {name: {} for name in found}},
        "retrievers": {name: {"metrics": {"ndcg@5": 0.4}, "latency_ms": {"p50": 1.0, "p95": 2.0}} for name in found},
    })).record
    written = encode(msgspec.structs.replace(record, fingerprint={"retrievers": found}))
    assert decode(Path("baselines/retrieval.json"), written).record.fingerprint["retrievers"] == found


def test_the_docs_multi_line_query_is_recorded_and_read_back(tmp_path: Path) -> None:
    """On 571473c the baseline recorded with this query was refused by every later run:
    `fingerprint.retrievers.fts.query holds a control character (U+000A)`, exit 4."""
    round_trip(tmp_path, HEAD + retriever("fts", "sql", query=DOCS_QUERY, where="lang = 'zh'\n  AND live"))
    assert config_at(tmp_path, HEAD + retriever("fts", "sql", query=DOCS_QUERY)).retriever("fts").params["query"]


@settings(max_examples=80, deadline=None)
@given(st.text(max_size=30))
def test_every_setting_the_loader_accepts_round_trips_through_the_baseline(text: str) -> None:
    """Generated strings as a python retriever's option value, option key and version, and inside a
    multi-line sql query's dollar quote: loaded, they are recorded and read back; refused, in one line."""
    lines = [HEAD, retriever("mine", "python", factory="mine:make", version=text),
             f"options = {{ note = {toml_string(text)}, {toml_string(text or 'k')} = 1 }}\n",
             retriever("fts", "sql", query=f"SELECT id\nFROM docs\nWHERE body = $q${text}$q$\nLIMIT %(k)s")]
    with tempfile.TemporaryDirectory() as folder:
        round_trip(Path(folder), "".join(lines))


def test_a_nul_character_is_refused_by_the_loader_as_the_reader_would(tmp_path: Path) -> None:
    text = HEAD + retriever("mine", "python", factory="mine:make") + 'options = { note = "a\\u0000b" }\n'
    with pytest.raises(ConfigError, match=r"key 'options.note' holds a NUL character|options.note holds a NUL"):
        config_at(tmp_path, text)


def test_a_condition_is_described_on_one_line() -> None:
    corpus = TeamCorpus("kb.docs", "id", "body", "lang = 'zh'\nAND live", "md5")
    assert corpus.describe() == "table kb.docs where lang = 'zh'\\nAND live"


def test_an_echoed_id_is_cut() -> None:
    """On 571473c `SELECT id || repeat('x', 100000000)` printed the whole id: 400 MB of output."""
    huge = "doc-1" + "x" * 10_000_000
    question = Question(id="q1", query="w01", relevance={"doc-1": 1})
    with pytest.raises(RetrieverError) as error:
        checked_ranking("fts", question, [huge], 5, {"doc-1"})
    assert len(str(error.value)) < 200, len(str(error.value))
    assert "'doc-1xxxxx" in str(error.value) and "(10,000,005 characters)" in str(error.value)
    assert quoted("doc-1") == "'doc-1'" and quoted(None) == "None"


def test_a_table_read_from_another_table_names_both() -> None:
    """On 571473c a `table` retriever pointed at another table with the same rows said
    `chunks: changed (600 -> 600 chunks in table public.copy; md5:ab -> md5:ab)`: the digests alike."""
    old = {"sha256": "0" * 64, "count": 600, "table": "table public.docs", "digest": "md5:ab"}
    new = {"sha256": "1" * 64, "count": 600, "table": "table public.copy", "digest": "md5:ab"}
    assert str(corpus_change(old, new)) == (
        "chunks: changed (read from table public.docs, now from table public.copy; 600 -> 600 chunks; "
        "md5:ab -> md5:ab, the same digest)")


def test_the_limit_that_ended_a_statement_is_named() -> None:
    errors = pytest.importorskip("psycopg.errors")
    assert limits_note(errors.QueryCanceled("canceling statement")) == (
        " (the plugin's sessions run with statement_timeout = 5min)")
    assert "lock_timeout = 10s" in limits_note(errors.LockNotAvailable("canceling statement due to lock timeout"))
    assert limits_note(ValueError("x")) == ""
