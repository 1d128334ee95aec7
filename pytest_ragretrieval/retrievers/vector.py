"""Pure vector search in pgvector: cosine distance `<=>`, ties by id, one connection reused."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..config.toml import Table
from ..evalset.records import Question
from .protocol import Context, Setup


def parse(table: Table) -> dict[str, Any]:
    return {"min_score": table.number("min_score", None, minimum=-1.0, maximum=1.0)}


class VectorRetriever:
    """Embeds the query through the cache and asks the database for the nearest chunks.

    With the default exact search the SQL orders by (distance, id), which never uses an index,
    so results are deterministic. With an HNSW index the SQL has the index-friendly form and
    each query is also run exactly, to report the index's recall against exact search.
    `min_score` drops chunks whose cosine similarity (1 - distance) is below it.
    """

    def __init__(self, ctx: Context, min_score: float | None, approximate: bool) -> None:
        from psycopg import sql

        self.ctx = ctx
        self.conn = ctx.connect()
        self.min_score = min_score
        self.approximate = approximate
        table = sql.SQL(ctx.table)
        self.exact_sql = sql.SQL(
            "SELECT id, embedding <=> %(q)s AS distance FROM {table} ORDER BY distance, id LIMIT %(k)s"
        ).format(table=table)
        self.ann_sql = sql.SQL(
            "SELECT id, embedding <=> %(q)s AS distance FROM {table} ORDER BY embedding <=> %(q)s LIMIT %(k)s"
        ).format(table=table)
        self.overlaps: dict[int, list[float]] = {}

    def _search(self, statement: Any, vector: Any, k: int) -> list[tuple[str, float]]:
        with self.conn.cursor() as cursor:
            cursor.execute(statement, {"q": vector, "k": k})
            rows = [(chunk_id, float(distance)) for chunk_id, distance in cursor.fetchall()]
        self.conn.rollback()
        rows.sort(key=lambda row: (row[1], row[0]))
        if self.min_score is not None:
            rows = [row for row in rows if 1.0 - row[1] >= self.min_score]
        return rows

    def __call__(self, query: str, k: int) -> list[str]:
        vector = self.ctx.embed([query])[0]
        if not self.approximate:
            return [chunk_id for chunk_id, _ in self._search(self.exact_sql, vector, k)]
        found = [chunk_id for chunk_id, _ in self._search(self.ann_sql, vector, k)]
        exact = [chunk_id for chunk_id, _ in self._search(self.exact_sql, vector, k)]
        if exact:
            self.overlaps.setdefault(k, []).append(len(set(found) & set(exact)) / len(exact))
        return found

    def diagnostics(self, questions: Sequence[Question]) -> dict[str, float]:
        """The ANN index's recall against exact search at each depth asked, over the queries asked."""
        return {f"ann_recall@{k}": round(sum(v) / len(v), 6) for k, v in sorted(self.overlaps.items())}

    def close(self) -> None:
        self.conn.close()


def build(params: Mapping[str, Any], ctx: Context) -> VectorRetriever:
    return VectorRetriever(ctx, params["min_score"], ctx.index_kind == "hnsw")


def sources(params: Mapping[str, Any]) -> list[str]:
    return []


def fingerprint(params: Mapping[str, Any], setup: Setup) -> dict[str, Any]:
    """Rankings depend on the embedder (id and dimension) and on how the table is searched."""
    return {"embedding": setup.embedding(), "index": setup.index}


def details(params: Mapping[str, Any]) -> dict[str, str]:
    return {}
