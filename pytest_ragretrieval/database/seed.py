"""Loading the corpus and its embeddings into `<schema>.chunks` with one binary COPY.

Without an index every query is an exact scan, so rankings are deterministic; `hnsw` builds
the ANN index production would use, so its recall loss shows up in the metrics too.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy

from ..core.errors import ConfigError, DatabaseError, RagError
from ..evalset.records import Chunk
from .dsn import scrub
from .servers import timeout_note

if TYPE_CHECKING:
    import psycopg
    from psycopg import sql

    from .kept import Delta
    from .settings import IndexSettings

TABLE = "chunks"
MAX_DIMENSIONS = 16000
MAX_HNSW_DIMENSIONS = 2000
EF_SEARCH_RANGE = (1, 1000)
COLUMN_TYPES = ["text", "text", "text", "jsonb", "vector"]
SEED_SECONDS = 300
"""The seeding statements' base `statement_timeout`, as every other statement's; it grows with the corpus."""
SECONDS_PER_ROW = {"exact": 0.0005, "hnsw": 0.005}
"""What a row may add to it: a million-row COPY takes about a minute, an hnsw build over them many on 2 cores."""
INDEX_MEMORY_CAP_MB = 4096


def seed_timeout(rows: int, index: IndexSettings) -> str:
    """`statement_timeout` of the seeding transaction: a large corpus is not cancelled for its size,
    a stuck server still is."""
    return f"{SEED_SECONDS + math.ceil(rows * SECONDS_PER_ROW[index.kind])}s"


def index_memory_mb(rows: int, dimensions: int, index: IndexSettings) -> int:
    """`maintenance_work_mem` that holds the hnsw graph (each row's vector and about 2·m neighbour
    entries of 16 bytes, plus its header): pgvector builds it on disk, several times slower, when it
    does not fit the default 64 MB (from about 30,000 rows of 384 dimensions). Capped."""
    need = rows * (4 * dimensions + 32 * index.m + 200)
    return max(64, min(INDEX_MEMORY_CAP_MB, math.ceil(need / 2**20)))


class VectorError(RagError):
    """Embeddings that cannot be stored: wrong shape or type, or not finite."""


def table_name(schema: str) -> sql.Composed:
    """`"<schema>"."chunks"` for composing queries with psycopg.sql."""
    from psycopg import sql

    return sql.SQL("{}.{}").format(sql.Identifier(schema), sql.Identifier(TABLE))


def table_label(schema: str) -> str:
    """The same quoted name as plain text, for retrievers that build SQL strings (`ctx.table`)."""
    return ".".join('"' + part.replace('"', '""') + '"' for part in (schema, TABLE))


def _as_array(vectors: Any) -> numpy.ndarray:
    try:
        return numpy.asarray(vectors)
    except ValueError as exc:
        raise VectorError(f"embeddings must be a 2-D array, one row per chunk ({exc})") from None


def storable(chunks: Sequence[Chunk], vectors: Any, index: IndexSettings) -> numpy.ndarray:
    """The embeddings as pgvector will store them (float32 rows within its limits), or a VectorError naming the chunk.

    The embedder's own output is checked by `embedding.base.check_vectors`; this is the storage check, for
    callers (and factories) that seed vectors from anywhere.
    """
    array = _as_array(vectors)
    if array.ndim != 2:
        raise VectorError(f"embeddings must be a 2-D array, one row per chunk; got shape {array.shape}")
    if not numpy.issubdtype(array.dtype, numpy.floating):
        raise VectorError(f"embeddings must be floats; got dtype {array.dtype}")
    rows, dimensions = array.shape
    if rows != len(chunks):
        raise VectorError(f"got {rows} embeddings for {len(chunks)} chunks; the embedder must return one per text")
    if not 1 <= dimensions <= MAX_DIMENSIONS:
        raise VectorError(f"embeddings have {dimensions} dimensions; pgvector stores 1 to {MAX_DIMENSIONS}")
    if index.kind == "hnsw" and dimensions > MAX_HNSW_DIMENSIONS:
        raise VectorError(
            f"embeddings have {dimensions} dimensions; an hnsw index takes at most {MAX_HNSW_DIMENSIONS}, "
            'use index = "exact"'
        )
    with numpy.errstate(over="ignore", invalid="ignore"):
        stored = array.astype(numpy.float32, copy=False)  # a million rows: no second copy
    finite = numpy.isfinite(stored).all(axis=1)
    if not finite.all():
        row = int(numpy.argmin(finite))
        problem = "overflows float32" if numpy.isfinite(array[row]).all() else "holds NaN or infinity"
        raise VectorError(f"embedding of chunk {chunks[row].id!r} (row {row}) {problem}")
    return stored


def _statements(schema: str, dimensions: int, index: IndexSettings) -> tuple[sql.Composed, ...]:
    from psycopg import sql

    table = table_name(schema)
    create = sql.SQL(
        "CREATE TABLE {} (id text PRIMARY KEY, doc text, text text, metadata jsonb, embedding vector({}))"
    ).format(table, sql.Literal(dimensions))
    copy = sql.SQL("COPY {} (id, doc, text, metadata, embedding) FROM STDIN WITH (FORMAT BINARY)").format(table)
    statements = [create, copy]
    if index.kind == "hnsw":
        statements.append(
            sql.SQL(
                "CREATE INDEX {} ON {} USING hnsw (embedding vector_cosine_ops) WITH (m = {}, ef_construction = {})"
            ).format(
                sql.Identifier(f"{TABLE}_embedding_hnsw"),
                table,
                sql.Literal(int(index.m)),
                sql.Literal(int(index.ef_construction)),
            )
        )
    statements.append(sql.SQL("ANALYZE {}").format(table))
    return tuple(statements)


def seed(
    conn: psycopg.Connection, schema: str, chunks: Sequence[Chunk], vectors: Any, index: IndexSettings
) -> None:
    """Create and fill `<schema>.chunks`, build the index if asked, ANALYZE, and commit.

    The DDL takes its numbers as literals: utility statements accept no bound parameters.
    """
    import psycopg

    stored = storable(chunks, vectors, index)
    create, copy_sql, *after = _statements(schema, stored.shape[1], index)
    try:
        with conn.cursor() as cursor:
            cursor.execute("SELECT set_config('statement_timeout', %s, true)", (seed_timeout(len(stored), index),))
            if index.kind == "hnsw":
                memory = f"{index_memory_mb(stored.shape[0], stored.shape[1], index)}MB"
                cursor.execute("SELECT set_config('maintenance_work_mem', %s, true)", (memory,))
            cursor.execute(create)
            with cursor.copy(copy_sql) as copy:
                copy.set_types(COLUMN_TYPES)
                for chunk, row in zip(chunks, stored, strict=True):
                    copy.write_row((chunk.id, chunk.doc, chunk.text, dict(chunk.metadata), row))
            for statement in after:
                cursor.execute(statement)
        conn.commit()
    except psycopg.Error as exc:
        conn.rollback()
        raise DatabaseError(f"cannot seed {table_label(schema)}: {scrub(str(exc), '')}{timeout_note(exc)}") from None


def update(conn: psycopg.Connection, schema: str, chunks: Sequence[Chunk], vectors: Any, delta: Delta) -> None:
    """Turn a copy of another corpus's seeded table into this one's (database.kept's `Delta`): delete the
    removed and changed rows, COPY the changed and new ones, ANALYZE, commit, then VACUUM the deleted rows."""
    import psycopg
    from psycopg import sql

    table = table_name(schema)
    stored = numpy.asarray(vectors, dtype=numpy.float32)
    gone = [*delta.removed, *sorted(delta.written)]
    copy_sql = sql.SQL("COPY {} (id, doc, text, metadata, embedding) FROM STDIN WITH (FORMAT BINARY)").format(table)
    try:
        with conn.cursor() as cursor:
            cursor.execute("SELECT set_config('statement_timeout', %s, true)", (f"{SEED_SECONDS}s",))
            cursor.execute(sql.SQL("DELETE FROM {} WHERE id = ANY(%s)").format(table), (gone,))
            with cursor.copy(copy_sql) as copy:
                copy.set_types(COLUMN_TYPES)
                for chunk, row in zip(chunks, stored, strict=True):
                    if chunk.id in delta.written:
                        copy.write_row((chunk.id, chunk.doc, chunk.text, dict(chunk.metadata), row))
            cursor.execute(sql.SQL("ANALYZE {}").format(table))
        conn.commit()
        conn.autocommit = True
        conn.execute(sql.SQL("VACUUM {}").format(table))
    except psycopg.Error as exc:
        conn.rollback()
        raise DatabaseError(f"cannot update {table_label(schema)}: {scrub(str(exc), '')}{timeout_note(exc)}") from None


def configure_search(conn: psycopg.Connection, index: IndexSettings) -> None:
    """Set `hnsw.ef_search` for this session; call it on an idle connection (right after connect).

    A SET is transactional: on an idle connection we commit it at once, so no later rollback
    undoes it; inside an open transaction it lasts only if the caller commits.
    """
    from psycopg import pq

    if index.kind != "hnsw":
        return
    low, high = EF_SEARCH_RANGE
    if not low <= index.ef_search <= high:
        raise ConfigError(f"hnsw ef_search must be between {low} and {high} (pgvector's limit); got {index.ef_search}")
    idle = conn.info.transaction_status == pq.TransactionStatus.IDLE
    conn.execute("SELECT set_config('hnsw.ef_search', %s, false)", (str(index.ef_search),))
    if idle and not conn.autocommit:
        conn.commit()
