"""seed(): binary COPY round trip, exact ordering, the optional HNSW index, input validation."""
from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import numpy
import psycopg
import pytest
from psycopg import sql

from pytest_ragretrieval.core.errors import ConfigError, DatabaseError, RagError
from pytest_ragretrieval.database.handle import Database, open_database
from pytest_ragretrieval.database.seed import (
    VectorError,
    configure_search,
    seed,
    storable,
    table_label,
    table_name,
)
from pytest_ragretrieval.database.servers import Choice
from pytest_ragretrieval.database.settings import IndexSettings
from pytest_ragretrieval.evalset.records import Chunk

EXACT = IndexSettings()
HNSW = IndexSettings(kind="hnsw", m=8, ef_construction=32, ef_search=55)
CHUNKS = (
    Chunk("c1", "east", doc="compass", metadata={"n": 1, "tags": ["a", "b"], "note": "naïve 東"}),
    Chunk("c2", "north-east", doc=None, metadata={}),
    Chunk("c3", "north", doc="compass", metadata={"nested": {"x": None}}),
    Chunk("c4", "west", doc=None, metadata={"n": 4}),
    Chunk("c0", "far east", doc="compass", metadata={"n": 0}),
)
VECTORS = numpy.array(
    [[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [2.0, 0.0, 0.0]], dtype=numpy.float64
)


@pytest.fixture(scope="module")
def database() -> Iterator[Database]:
    with open_database(Choice("embedded", "test")) as db:
        yield db


@pytest.fixture
def conn(database: Database) -> Iterator[psycopg.Connection]:
    connection = database.connect()
    yield connection
    connection.close()


@pytest.fixture
def schema(conn: psycopg.Connection) -> Iterator[str]:
    """A fresh schema per test, so each can create its own chunks table on the shared server."""
    name = f"seed_test_{secrets.token_hex(4)}"
    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    conn.commit()
    yield name
    conn.rollback()
    conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(name)))
    conn.commit()


def test_copy_round_trip_and_exact_order(conn: psycopg.Connection, schema: str) -> None:
    seed(conn, schema, CHUNKS, VECTORS, EXACT)
    query = sql.SQL("SELECT id FROM {} ORDER BY embedding <=> %s, id").format(table_name(schema))
    ranked = [row[0] for row in conn.execute(query, (numpy.array([1.0, 0.0, 0.0]),))]
    assert ranked == ["c0", "c1", "c2", "c3", "c4"]
    rows = conn.execute(
        sql.SQL("SELECT id, doc, doc IS NULL, text, metadata, embedding FROM {} ORDER BY id").format(
            table_name(schema)
        )
    ).fetchall()
    by_id = {chunk.id: chunk for chunk in CHUNKS}
    for chunk_id, doc, doc_is_null, text, metadata, embedding in rows:
        chunk = by_id[chunk_id]
        assert (doc, doc_is_null, text, metadata) == (chunk.doc, chunk.doc is None, chunk.text, dict(chunk.metadata))
        expected = VECTORS[[c.id for c in CHUNKS].index(chunk_id)].astype(numpy.float32)
        numpy.testing.assert_array_equal(embedding.to_numpy(), expected)
    assert len(rows) == len(CHUNKS)


def test_no_index_but_the_key_by_default_and_analyzed(conn: psycopg.Connection, schema: str) -> None:
    seed(conn, schema, CHUNKS, VECTORS, EXACT)
    indexes = conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = %s", (schema,)).fetchall()
    assert indexes == [("chunks_pkey",)]
    analyzed = conn.execute(
        "SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE schemaname = %s AND relname = 'chunks'",
        (schema,),
    ).fetchone()
    assert analyzed == (True,)


def test_loads_with_copy_not_inserts(
    conn: psycopg.Connection, schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    statements: list[str] = []
    execute = psycopg.Cursor.execute

    def record(self: psycopg.Cursor, query: Any, *args: Any, **kwargs: Any) -> Any:
        statements.append(query.as_string(conn) if isinstance(query, sql.Composable) else str(query))
        return execute(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", record)
    seed(conn, schema, CHUNKS, VECTORS, EXACT)
    assert not any(text.lstrip().upper().startswith("INSERT") for text in statements)
    assert conn.execute(sql.SQL("SELECT count(*) FROM {}").format(table_name(schema))).fetchone() == (5,)


def test_hnsw_index_and_ef_search(conn: psycopg.Connection, schema: str) -> None:
    seed(conn, schema, CHUNKS, VECTORS, HNSW)
    definitions = [
        row[0] for row in conn.execute("SELECT indexdef FROM pg_indexes WHERE schemaname = %s", (schema,))
    ]
    hnsw = [text for text in definitions if "USING hnsw" in text]
    assert len(hnsw) == 1
    assert "vector_cosine_ops" in hnsw[0] and "m='8'" in hnsw[0] and "ef_construction='32'" in hnsw[0]
    conn.rollback()
    configure_search(conn, HNSW)
    conn.rollback()
    assert conn.execute("SHOW hnsw.ef_search").fetchone() == ("55",)


def test_configure_search_on_a_fresh_connection(database: Database) -> None:
    with database.connect() as fresh:
        configure_search(fresh, HNSW)
        assert fresh.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        assert fresh.execute("SHOW hnsw.ef_search").fetchone() == ("55",)


def test_configure_search_leaves_exact_alone(database: Database) -> None:
    with database.connect() as fresh:
        configure_search(fresh, EXACT)
        assert fresh.execute("SELECT current_setting('hnsw.ef_search', true)").fetchone() == (None,)


def test_configure_search_checks_pgvector_range(conn: psycopg.Connection) -> None:
    with pytest.raises(ConfigError, match="ef_search must be between 1 and 1000"):
        configure_search(conn, IndexSettings(kind="hnsw", ef_search=5000))


def test_table_names(conn: psycopg.Connection) -> None:
    assert table_name("rag_eval_ab").as_string(conn) == '"rag_eval_ab"."chunks"'
    assert table_label("rag_eval_ab") == '"rag_eval_ab"."chunks"'
    assert table_label('we"ird') == '"we""ird"."chunks"'


def test_database_errors_are_one_line(conn: psycopg.Connection, schema: str) -> None:
    seed(conn, schema, CHUNKS, VECTORS, EXACT)
    with pytest.raises(DatabaseError, match="already exists") as caught:
        seed(conn, schema, CHUNKS, VECTORS, EXACT)
    assert "\n" not in str(caught.value)
    assert conn.execute("SELECT 1").fetchone() == (1,)


@pytest.mark.parametrize(
    ("vectors", "index", "message"),
    [
        (VECTORS[0], EXACT, "2-D array"),
        (VECTORS.astype(numpy.int64), EXACT, "must be floats"),
        (VECTORS[:4], EXACT, "got 4 embeddings for 5 chunks"),
        (numpy.zeros((5, 0)), EXACT, "0 dimensions"),
        (numpy.where(numpy.arange(15).reshape(5, 3) == 7, numpy.nan, 1.0), EXACT, r"chunk 'c3' \(row 2\) holds NaN"),
        (numpy.where(numpy.arange(15).reshape(5, 3) == 0, numpy.inf, 1.0), EXACT, "chunk 'c1' .* infinity"),
        (numpy.where(numpy.arange(15).reshape(5, 3) == 14, 1e39, 1.0), EXACT, "chunk 'c0' .* overflows float32"),
        (numpy.ones((5, 2001)), HNSW, "hnsw index takes at most 2000"),
        ([[1.0, 2.0], [1.0]], EXACT, "2-D array"),
    ],
)
def test_bad_vectors_are_named(vectors: object, index: IndexSettings, message: str) -> None:
    with pytest.raises(VectorError, match=message) as caught:
        storable(CHUNKS, vectors, index)
    assert isinstance(caught.value, RagError)


def test_storable_vectors_are_float32() -> None:
    stored = storable(CHUNKS, VECTORS, EXACT)
    assert stored.dtype == numpy.float32 and stored.shape == (5, 3)
