"""Pure vector search in pgvector: cosine distance `<=>`, ties by id, over a small pool of connections."""
from __future__ import annotations

import queue
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

from ..core.optional import need
from ..evalset.records import Question
from ..files.tables import Table
from ..scoring.metrics import ann_overlap
from .candidates import Candidates, Earlier
from .protocol import Context, Query, Setup


def ann_recall(overlaps: Sequence[float]) -> float:
    """The mean share of each query's exact top k that the index returned, ties counted (`ann_overlap`)."""
    return sum(overlaps) / len(overlaps)


def ann_recall_worst(overlaps: Sequence[float]) -> float:
    """The worst query's share: a mean near 1 can hide questions the index fails outright."""
    return min(overlaps)


ANN_DIAGNOSTICS: dict[str, Callable[[Sequence[float]], float]] = {
    "ann_recall": ann_recall,
    "ann_recall_worst": ann_recall_worst,
}
"""What `diagnostics` reports per depth from the queries' overlaps with exact search."""


def parse(table: Table) -> dict[str, Any]:
    return {"min_score": table.number("min_score", None, minimum=-1.0, maximum=1.0)}


class VectorRetriever:
    """Embeds the query through the cache and asks the database for the nearest chunks.

    With the default exact search the SQL orders by (distance, id), which never uses an index,
    so results are deterministic. With an HNSW index the SQL has the index-friendly form and
    each query is also run exactly, to report the index's recall against exact search.
    `min_score` drops chunks whose cosine similarity (1 - distance) is below it.

    Run over the whole eval set (`search_many`), the queries are embedded in one call, the
    chunks that can be in each exact top k are found at once (`candidates.py`), and pgvector
    ranks only those, on `workers` connections at once: the same rankings as a full scan. Where
    numpy's bound decides a ranking, or an earlier run's ranking of the same query vector does after
    a corpus edit (`narrow`), no SQL runs (the database is started all the same: a run of the same
    settings needs it whatever the data, and says so at build).
    """

    def __init__(self, ctx: Context, min_score: float | None, approximate: bool) -> None:
        sql = need("psycopg.sql", f"retriever {ctx.name!r}")
        need("pgvector.psycopg", f"retriever {ctx.name!r}")

        self.ctx = ctx
        self._candidates = Candidates(*ctx.corpus_vectors())
        """The corpus embedded before the database starts, as seeding it needs: a cold run tokenizes ahead meanwhile."""
        self.conn = ctx.connect()
        self.pool: list[Any] = []
        self.earlier: Earlier | None = None
        self.narrowed = 0
        """Questions whose earlier ranking decided their search (`narrow`)."""
        self.min_score = min_score
        self.approximate = approximate
        table = sql.SQL(ctx.table)
        self.exact_sql = sql.SQL(
            "SELECT id, embedding <=> %(q)s AS distance FROM {table} ORDER BY distance, id LIMIT %(k)s"
        ).format(table=table)
        self.among_sql = sql.SQL(
            "SELECT id, embedding <=> %(q)s AS distance FROM {table} WHERE id = ANY(%(ids)s) "
            "ORDER BY distance, id LIMIT %(k)s"
        ).format(table=table)
        self.ann_sql = sql.SQL(
            "SELECT id, embedding <=> %(q)s AS distance FROM {table} ORDER BY embedding <=> %(q)s LIMIT %(k)s"
        ).format(table=table)
        self.overlaps: dict[int, list[float]] = {}

    def _search(self, conn: Any, statement: Any, params: dict[str, Any]) -> list[tuple[str, float]]:
        """(chunk id, distance) rows, nearest first, ties by id; those below `min_score` dropped."""
        with conn.cursor() as cursor:
            cursor.execute(statement, params)
            rows = [(chunk_id, float(distance)) for chunk_id, distance in cursor.fetchall()]
        conn.rollback()
        rows.sort(key=lambda row: (row[1], row[0]))
        if self.min_score is not None:
            rows = [row for row in rows if 1.0 - row[1] >= self.min_score]
        return rows

    def narrow(self, earlier: Earlier) -> None:
        """Search after a corpus edit from an earlier exact run of the same table (`candidates.Earlier`)."""
        if not self.approximate:
            self.earlier = earlier

    def __call__(self, query: str, k: int) -> list[str]:
        ranking, overlap = self._rank(self.conn, self.ctx.embed([query])[0], k, None)
        if overlap is not None:
            self.overlaps.setdefault(k, []).append(overlap)
        return ranking

    def preload(self, queries: Sequence[Query], batched: bool) -> Mapping[str, float]:
        """The embedder's model, loaded before the first question is timed when a query is not cached (a
        call embeds through the cache as `search_many` does); a warm run loads nothing."""
        return self.ctx.load_embedder([query.query for query in queries])

    def _rank(self, conn: Any, vector: Any, k: int, among: list[str] | None) -> tuple[list[str], float | None]:
        """The ranking and, with an ANN index, its overlap with exact search (None without one).
        `among`: the chunks that can be in the exact top k; None searches every row."""
        if among is None:
            exact = self._search(conn, self.exact_sql, {"q": vector, "k": k})
        else:
            exact = self._search(conn, self.among_sql, {"q": vector, "k": k, "ids": among})
        if not self.approximate:
            return [chunk_id for chunk_id, _ in exact], None
        found = self._search(conn, self.ann_sql, {"q": vector, "k": k})
        share = ann_overlap(found, exact, self.ctx.ann_tie_epsilon) if exact else None
        return [chunk_id for chunk_id, _ in found], share

    def search_many(
        self, queries: Sequence[str], k: int, tick: Callable[[int], None]
    ) -> list[tuple[Sequence[str], float]]:
        """Every query's ranking and latency: its search, plus its share of the embedding call and of
        finding the candidates."""
        started = time.perf_counter()
        vectors = self.ctx.embed(list(queries))
        plans = self._candidates.plan(vectors, k, self.earlier, order=self.min_score is None and not self.approximate)
        self.narrowed += sum(plan.earlier for plan in plans)
        share = (time.perf_counter() - started) * 1000.0 / max(1, len(queries))
        found: list[tuple[Sequence[str], float]] = [((), 0.0)] * len(queries)
        for position, plan in enumerate(plans):
            if plan.ranking is not None:
                found[position] = (list(plan.ranking), share)
                tick(1)
        searched = [position for position, plan in enumerate(plans) if plan.ranking is None]
        if not searched:
            return found
        while len(self.pool) < self.ctx.workers - 1:
            self.pool.append(self.ctx.connect())
        idle: queue.SimpleQueue[Any] = queue.SimpleQueue()
        for conn in [self.conn, *self.pool]:
            idle.put(conn)

        def search(position: int) -> tuple[int, list[str], float | None, float]:
            conn = idle.get()
            try:
                began = time.perf_counter()
                ranking, overlap = self._rank(conn, vectors[position], k, plans[position].among)
                return position, ranking, overlap, (time.perf_counter() - began) * 1000.0
            finally:
                idle.put(conn)

        overlaps: list[float | None] = [None] * len(queries)
        with ThreadPoolExecutor(1 + len(self.pool), thread_name_prefix="rag-vector") as pool:
            for future in as_completed([pool.submit(search, i) for i in searched]):
                position, ranking, overlap, took = future.result()
                found[position] = (ranking, took + share)
                overlaps[position] = overlap
                tick(1)
        if self.approximate:
            self.overlaps.setdefault(k, []).extend(value for value in overlaps if value is not None)
        return found

    def diagnostics(self, questions: Sequence[Question]) -> dict[str, float]:
        """The ANN index's recall against exact search at each depth asked, over the queries asked."""
        return {
            f"{name}@{k}": round(function(values), 6)
            for k, values in sorted(self.overlaps.items())
            for name, function in ANN_DIAGNOSTICS.items()
        }

    def close(self) -> None:
        for conn in [self.conn, *self.pool]:
            conn.close()


def build(params: Mapping[str, Any], ctx: Context) -> VectorRetriever:
    return VectorRetriever(ctx, params["min_score"], ctx.index_kind == "hnsw")


def sources(params: Mapping[str, Any]) -> list[str]:
    return []


def fingerprint(params: Mapping[str, Any], setup: Setup) -> dict[str, Any]:
    """Rankings depend on the embedder (id and dimension) and on how the table is searched."""
    return {"embedding": setup.embedding(), "index": setup.index}


def details(params: Mapping[str, Any]) -> dict[str, str]:
    return {}
