"""What a run without a chunks file pays to read the team's table: the rows (ids and texts) and the
corpus digest computed in the database, `md5` against `count_and_max:updated_at`.

Starts an embedded Postgres (pgserver) in a temporary folder, fills `docs(id text, body text,
updated_at timestamptz)` with N rows of 320-character texts in SQL, then times
`database.team.read_corpus` for each digest (median of --repeat runs) and the digest statements
alone. Usage: python benchmarks/team_table.py [--rows 200000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import psycopg

from pytest_ragretrieval.database.session import TeamCorpus
from pytest_ragretrieval.database.team import connect, read_corpus


def timed(function: Callable[[], object], repeat: int) -> float:
    took = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        took.append(time.perf_counter() - started)
    return statistics.median(took)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver
    folder = Path(tempfile.mkdtemp(prefix="rag-bench-team-"))
    server = pgserver.get_server(folder / "data", cleanup_mode="delete")
    dsn = f"postgresql://postgres@/postgres?host={server.get_postmaster_info().socket_dir}"
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE docs (id text PRIMARY KEY, body text NOT NULL, updated_at timestamptz)")
            conn.execute(
                "INSERT INTO docs SELECT 'doc-' || lpad(i::text, 9, '0'), repeat(md5(i::text), 10), "
                "'2026-01-01'::timestamptz + i * interval '1 second' FROM generate_series(1, %s) AS i",
                (args.rows,),
            )
            conn.execute("VACUUM ANALYZE docs")
        print(f"{args.rows:,} rows of 320 characters; median of {args.repeat} runs")
        for digest in ("md5", "count_and_max:updated_at"):
            corpus = TeamCorpus("public.docs", "id", "body", None, digest)
            seconds = timed(lambda corpus=corpus: read_corpus(dsn, corpus), args.repeat)
            print(f"read_corpus, digest {digest}: {seconds:.2f} s ({args.rows / seconds:,.0f} rows/s)")
        statements = {
            "md5": "SELECT count(*), md5(string_agg(id || ':' || md5(body), ',' ORDER BY id COLLATE \"C\")) FROM docs",
            "count_and_max:updated_at": "SELECT count(*), max(updated_at) FROM docs",
        }
        with connect(dsn) as conn:
            for digest, statement in statements.items():
                seconds = timed(lambda statement=statement: conn.execute(statement).fetchone(), args.repeat)
                print(f"digest {digest} alone: {seconds:.3f} s")
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
