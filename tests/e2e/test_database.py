"""Database modes through the plugin, and what a python factory may do with the seeded table."""
from __future__ import annotations

import json
import re
import warnings
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import psycopg
import pytest
from projects import (
    E2E_CHUNKS,
    RUN,
    VECTOR_AND_BM25,
    e2e_settings,
    rankings,
    read_results,
    retriever,
    write_e2e_project,
    write_project,
)

from pytest_ragretrieval.database.schemas import RUN_SCHEMA

pytestmark = pytest.mark.usefixtures("minilm")

PASSWORD = "c4nary-S3cret"
OWN_SQL = '''
import json
from pathlib import Path


def make(ctx):
    """Cosine search written by hand over ctx.table, with vectors from ctx.embed."""
    conn = ctx.connect()
    rows = conn.execute(f"SELECT count(*) FROM {ctx.table}").fetchone()[0]
    conn.rollback()
    (Path(__file__).parent / "seen.json").write_text(json.dumps({"table": ctx.table, "rows": rows}))

    def retrieve(query, k):
        vector = ctx.embed([query])[0]
        found = conn.execute(
            f"SELECT id FROM {ctx.table} ORDER BY embedding <=> %s, id LIMIT %s", (vector, k)
        ).fetchall()
        conn.rollback()
        return [row[0] for row in found]

    return retrieve
'''
BROKEN = '''
def make(ctx):
    conn = ctx.connect()

    def retrieve(query, k):
        conn.execute(f"SELECT id FROM {ctx.table} FOR UPDATE")
        raise RuntimeError("index exploded")

    return retrieve
'''
SNAPSHOT = {
    "schemas": "SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg_%' ORDER BY 1",
    "extensions": "SELECT e.extname, n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace ORDER BY 1",
    "canary": "SELECT * FROM public.canary ORDER BY id",
}


@pytest.fixture(scope="module")
def server_dsn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A second embedded server standing in for someone else's, with a canary table; pgserver trusts any password."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pgserver.postgres_server import get_server
    server = get_server(tmp_path_factory.mktemp("target") / "data", cleanup_mode="delete")
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute("CREATE TABLE public.canary (id int PRIMARY KEY, name text)")
        conn.execute("INSERT INTO public.canary VALUES (1, 'tweety'), (2, 'sylvester')")
    yield f"postgresql://postgres:{quote(PASSWORD, safe='')}@/postgres?host={server.get_postmaster_info().socket_dir}"
    server.cleanup()


def snapshot(dsn: str) -> dict[str, list[tuple[Any, ...]]]:
    with psycopg.connect(dsn) as conn:
        return {key: conn.execute(query).fetchall() for key, query in SNAPSHOT.items()}


def but_vector(found: dict[str, list[tuple[Any, ...]]]) -> dict[str, list[tuple[Any, ...]]]:
    """A snapshot without what the first url run may leave for good: vector, in a schema of its own."""
    return {
        **found,
        "schemas": [row for row in found["schemas"] if row != ("rag_eval_ext",)],
        "extensions": [row for row in found["extensions"] if row != ("vector", "rag_eval_ext")],
    }


def assert_left_as_it_was(dsn: str, before: dict[str, list[tuple[Any, ...]]]) -> None:
    after = snapshot(dsn)
    assert but_vector(after) == but_vector(before)
    assert after["canary"] == [(1, "tweety"), (2, "sylvester")]
    assert ("vector", "rag_eval_ext") in after["extensions"]
    assert not [name for (name,) in after["schemas"] if RUN_SCHEMA.fullmatch(name)]


def assert_password_hidden(result: pytest.RunResult) -> None:
    shown = result.stdout.str() + result.stderr.str()
    assert PASSWORD not in shown and quote(PASSWORD, safe="") not in shown
    result.stdout.fnmatch_lines(["rag: database url: PostgreSQL * working schema rag_eval_* (url: existing server *)*"])
    assert "(url: existing server postgresql://postgres:***@/postgres?host=" in shown


def test_a_python_factory_queries_the_seeded_table_itself(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(own_sql=OWN_SQL)
    write_e2e_project(pytester.path, VECTOR_AND_BM25 + retriever("own", "python", factory="own_sql:make"), "cache")
    result = pytester.runpytest("--rag-update-baseline", "--rag-json", "results.json", *RUN)
    result.assert_outcomes(passed=6)
    seen = json.loads((pytester.path / "seen.json").read_text())
    assert re.fullmatch(r'"rag_eval_[0-9a-f]{12}"\."chunks"', seen["table"]) and seen["rows"] == len(E2E_CHUNKS)
    results = read_results(pytester.path / "results.json")
    assert rankings(results, "own") == rankings(results, "vector")
    assert all(len(ranking) == len(E2E_CHUNKS) for ranking in rankings(results, "own").values())


def test_url_mode_leaves_the_server_as_it_was_when_a_retriever_raises(
    pytester: pytest.Pytester, server_dsn: str
) -> None:
    """The raising retriever holds row locks in an open transaction when the run ends."""
    before = snapshot(server_dsn)
    pytester.makepyfile(broken=BROKEN)
    write_e2e_project(pytester.path, VECTOR_AND_BM25 + retriever("broken", "python", factory="broken:make"), "cache")
    result = pytester.runpytest("--rag-update-baseline", "--rag-db=url", "--rag-db-url", server_dsn, *RUN)
    result.assert_outcomes(passed=4, failed=2)
    result.stdout.fnmatch_lines(["retriever 'broken' raised RuntimeError: index exploded (*broken.py:*)"])
    assert_password_hidden(result)
    assert_left_as_it_was(server_dsn, before)


def test_the_url_can_come_from_the_environment(
    pytester: pytest.Pytester, server_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = snapshot(server_dsn)
    monkeypatch.setenv("RAG_EVAL_DATABASE_URL", server_dsn)
    write_e2e_project(pytester.path, VECTOR_AND_BM25, "cache")
    result = pytester.runpytest("--rag-update-baseline", "--rag-db=url", *RUN)
    result.assert_outcomes(passed=4)
    assert_password_hidden(result)
    assert_left_as_it_was(server_dsn, before)


def test_auto_takes_the_url_from_the_environment(
    pytester: pytest.Pytester, server_dsn: str, monkeypatch: pytest.MonkeyPatch, no_docker: str
) -> None:
    """RAG_EVAL_DATABASE_URL names the user's server as plainly as --rag-db=url: auto uses it, and says so."""
    before = snapshot(server_dsn)
    monkeypatch.setenv("RAG_EVAL_DATABASE_URL", server_dsn)
    settings = e2e_settings("cache").replace('db = "embedded"', "")
    write_project(pytester.path, retrievers=VECTOR_AND_BM25, settings=settings, chunks=E2E_CHUNKS)
    result = pytester.runpytest("--rag-update-baseline", *RUN)
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        ["rag: database url: * (auto: a server is given (--rag-db-url or RAG_EVAL_DATABASE_URL): postgresql://postgres:***@*)*"]
    )
    assert_left_as_it_was(server_dsn, before)
    monkeypatch.setenv("RAG_EVAL_DATABASE_URL", "")
    result = pytester.runpytest("--rag-eval", *RUN)
    result.stdout.fnmatch_lines(["rag: database embedded: *"])


def test_docker_mode_without_docker_fails_vector_items_only(pytester: pytest.Pytester, no_docker: str) -> None:
    write_e2e_project(pytester.path, VECTOR_AND_BM25, "cache")
    result = pytester.runpytest("--rag-update-baseline", "--rag-db=docker", *RUN)
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        [
            f"--rag-db=docker: no Docker engine answered at {no_docker} (from DOCKER_HOST); start Docker, or use "
            "--rag-db=embedded (a local Postgres from pgserver) or --rag-db=url with --rag-db-url DSN "
            "or RAG_EVAL_DATABASE_URL"
        ]
    )
    result.stdout.fnmatch_lines(["FAILED rag::vector::ndcg@3*", "FAILED rag::vector::recall@9*"])
    result.stdout.no_fnmatch_line("FAILED rag::bm25::*")


def test_auto_without_docker_says_it_used_embedded_and_why(pytester: pytest.Pytester, no_docker: str) -> None:
    write_e2e_project(pytester.path, VECTOR_AND_BM25, "cache")
    result = pytester.runpytest("--rag-update-baseline", "--rag-db=auto", *RUN)
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        [f"rag: database embedded: PostgreSQL * (auto: no Docker engine answered at {no_docker} (from DOCKER_HOST))*"]
    )
