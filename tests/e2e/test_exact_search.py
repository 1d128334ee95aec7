"""Exact search over the eval set reads only the candidates, and ranks exactly as a full scan does."""
from __future__ import annotations

import secrets
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest
from psycopg import sql

from pytest_ragretrieval.database.handle import Database, open_database
from pytest_ragretrieval.database.seed import seed, table_label
from pytest_ragretrieval.database.servers import Choice
from pytest_ragretrieval.database.settings import IndexSettings
from pytest_ragretrieval.evalset.records import Chunk
from pytest_ragretrieval.retrievers.candidates import Earlier, vector_digests
from pytest_ragretrieval.retrievers.vector import VectorRetriever


@pytest.fixture(scope="module")
def database() -> Iterator[Database]:
    with open_database(Choice("embedded", "test")) as db:
        yield db


class Ctx:
    """The part of a retriever's context the vector retriever uses, over a seeded schema."""

    def __init__(self, database: Database, schema: str, ids: list[str], matrix: np.ndarray, queries: dict[str, np.ndarray]):
        self.database, self.schema, self.ids, self.matrix, self.queries = database, schema, ids, matrix, queries
        self.name = "vector"
        self.workers = 2

    def connect(self) -> Any:
        return self.database.connect()

    @property
    def table(self) -> str:
        return table_label(self.schema)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray([self.queries[text] for text in texts], dtype=np.float32)

    def corpus_vectors(self) -> tuple[list[str], np.ndarray]:
        return self.ids, self.matrix


def near_ties(rng: np.random.Generator, count: int, dimensions: int) -> np.ndarray:
    """Copies, rescaled copies and copies nudged in their last bits of a few directions."""
    base = rng.standard_normal((12, dimensions)).astype(np.float32)
    rows = base[rng.integers(len(base), size=count)].copy()
    rows[::3] *= rng.uniform(0.5, 4, size=(len(rows[::3]), 1)).astype(np.float32)
    rows[1::3] = np.nextafter(rows[1::3], np.float32(np.inf))
    rows[::7] = rng.standard_normal((len(rows[::7]), dimensions)).astype(np.float32)
    return rows


@pytest.mark.parametrize("dimensions", [3, 384])
def test_search_many_ranks_as_the_full_scan(database: Database, dimensions: int) -> None:
    rng = np.random.default_rng(dimensions)
    matrix = near_ties(rng, 600, dimensions)
    ids = [f"c{i:04d}" for i in range(len(matrix))]
    schema = f"exact_{secrets.token_hex(4)}"
    conn = database.connect()
    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    conn.commit()
    seed(conn, schema, [Chunk(i, f"text {i}") for i in ids], matrix, IndexSettings())
    queries = {f"q{i}": vector for i, vector in enumerate([*matrix[:20], *rng.standard_normal((20, dimensions))])}
    retriever = VectorRetriever(Ctx(database, schema, ids, matrix, queries), None, approximate=False)  # type: ignore[arg-type]
    try:
        for k in (1, 5, 40):
            batch = retriever.search_many(list(queries), k, lambda n: None)
            full = [retriever(query, k) for query in queries]
            assert [list(ranking) for ranking, _ in batch] == full
            assert all(len(ranking) == k for ranking in full)
    finally:
        retriever.close()
        conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))
        conn.commit()
        conn.close()


def test_after_a_corpus_edit_the_earlier_rankings_rank_as_the_full_scan(database: Database) -> None:
    """The cached rankings and the changed rows give the full scan's top k, ties included: rows edited into
    and out of a top k, removed from one, added, and exact copies (ties by id) of the best rows."""
    rng = np.random.default_rng(52)
    before = near_ties(rng, 400, 16)
    ids = [f"c{i:04d}" for i in range(len(before))]
    queries = {f"q{i}": vector for i, vector in enumerate([*before[:30], *rng.standard_normal((30, 16))])}
    after = before.copy()
    edited = rng.choice(len(ids), size=40, replace=False)
    after[edited[:10]] = before[rng.integers(len(ids), size=10)]  # copies: exact ties with unedited rows
    after[edited[10:20]] = rng.standard_normal((10, 16)).astype(np.float32)  # anywhere: out of a top k
    query_rows = [int(i) for i in rng.choice(30, size=10, replace=False)]
    after[edited[20:30]] = before[query_rows] * np.float32(1.5)  # into a query's top k, tied at its head
    after[edited[30:]] = np.nextafter(before[edited[30:]], np.float32(np.inf))  # nudged in their last bits
    removed = {ids[i] for i in rng.choice(30, size=5, replace=False)}  # some the best rows of a query
    kept = [i for i, chunk_id in enumerate(ids) if chunk_id not in removed]
    new_ids = [ids[i] for i in kept] + ["a000", "a001"]
    new_matrix = np.concatenate([after[kept], before[[3, 4]]])  # added: copies of queries' best rows
    searched: dict[str, list[list[str]]] = {}
    for name, table_ids, matrix in (("before", ids, before), ("after", new_ids, new_matrix)):
        schema = f"narrow_{secrets.token_hex(4)}"
        conn = database.connect()
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        conn.commit()
        seed(conn, schema, [Chunk(i, f"text {i}") for i in table_ids], matrix, IndexSettings())
        retriever = VectorRetriever(Ctx(database, schema, table_ids, matrix, queries), None, approximate=False)  # type: ignore[arg-type]
        try:
            if name == "after":
                full = [retriever(query, 10) for query in queries]
                retriever.narrow(Earlier(10, dict(zip(vector_digests(np.asarray(list(queries.values()))),
                                                     searched["before"], strict=True)),
                                         dict(zip(ids, vector_digests(before), strict=True))))
                assert [list(ranking) for ranking, _ in retriever.search_many(list(queries), 10, lambda n: None)] == full
                assert 0 < retriever.narrowed < len(queries)  # some from their earlier ranking, not all
                assert full != searched["before"]
            else:
                searched[name] = [list(ranking) for ranking, _ in retriever.search_many(list(queries), 10, lambda n: None)]
                assert searched[name] == [retriever(query, 10) for query in queries]
        finally:
            retriever.close()
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))
            conn.commit()
            conn.close()
