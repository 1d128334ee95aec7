"""The team's own pgvector table, read through a role that may only SELECT (the `table` and `sql` types).

One embedded server for the module holds `docs(id text, body text, emb vector(8))` with an HNSW
index, built as a team would; the gate runs against it without a chunks file. A small python
embedder (eight dimensions from each text's sha256) keeps each run to a few seconds.
"""
from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pgvector.psycopg import register_vector
from projects import jsonl, retriever

from pytest_ragretrieval.core.errors import DatabaseError
from pytest_ragretrieval.database.team import connect, session
from pytest_ragretrieval.retrievers.table import apply_settings, search_sql

EMBEDDER = '''
import hashlib

import numpy


def word(text):
    return numpy.frombuffer(hashlib.sha256(text.encode()).digest()[:8], dtype=numpy.uint8).astype(numpy.float32)


def embed(texts):
    """Eight dimensions per text: the sum of its words' vectors (each from the word's sha256)."""
    return numpy.array([sum(word(w) for w in text.split()) + 1.0 for text in texts], dtype=numpy.float32)
'''
ROWS = 600
WORDS = [f"w{n:02d}" for n in range(40)]


def corpus() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """ROWS chunks of six words each, and 12 questions asking for three words of one chunk."""
    pick = random.Random(20261206)
    chunks = [{"id": f"doc-{i:04d}", "text": " ".join(pick.sample(WORDS, 6))} for i in range(ROWS)]
    questions = []
    for n, chunk in enumerate(pick.sample(chunks, 12)):
        questions.append({"id": f"q{n:02d}", "query": " ".join(chunk["text"].split()[:3]), "relevant": [chunk["id"]]})
    return chunks, questions


def embed(texts: list[str]) -> Any:
    namespace: dict[str, Any] = {}
    exec(EMBEDDER, namespace)
    return namespace["embed"](texts)


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, str]]:
    """(the owner's DSN, the reader's DSN): `reader` has LOGIN, USAGE on public and SELECT on docs, nothing else."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pgserver.postgres_server import get_server
    folder = Path(tempfile.mkdtemp(prefix="rag-team-"))  # /tmp: the server's own user can reach it
    pg = get_server(folder / "data", cleanup_mode="delete")
    host = pg.get_postmaster_info().socket_dir
    owner = f"postgresql://postgres@/postgres?host={host}"
    chunks, _ = corpus()
    vectors = embed([chunk["text"] for chunk in chunks])
    with psycopg.connect(owner, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute("CREATE TABLE docs (id text PRIMARY KEY, body text NOT NULL, emb vector(8) NOT NULL)")
        with conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO docs VALUES (%s, %s, %s::vector)",
                [(c["id"], c["text"], str([float(x) for x in v])) for c, v in zip(chunks, vectors, strict=True)],
            )
        conn.execute("CREATE INDEX docs_emb_idx ON docs USING hnsw (emb vector_cosine_ops) WITH (m = 16, ef_construction = 64)")
        conn.execute("ANALYZE docs")
        conn.execute("CREATE ROLE reader LOGIN")
        conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        conn.execute("GRANT USAGE ON SCHEMA public TO reader")
        conn.execute("GRANT SELECT ON docs TO reader")
    yield owner, f"postgresql://reader@/postgres?host={host}"
    pg.cleanup()
    shutil.rmtree(folder, ignore_errors=True)


def catalog(dsn: str) -> set[tuple[str, str]]:
    """Every schema and relation on the server: a run that created anything changes this."""
    with psycopg.connect(dsn) as conn:
        schemas = {("schema", name) for (name,) in conn.execute("SELECT nspname FROM pg_namespace")}
        relations = {("relation", f"{n}.{r}") for n, r in conn.execute(
            "SELECT nspname, relname FROM pg_class JOIN pg_namespace ON pg_namespace.oid = relnamespace")}
    return schemas | relations


def project(folder: Path, retrievers: str, *, chunks: bool = False) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rows, questions = corpus()
    (folder / "hashed.py").write_text(EMBEDDER, encoding="utf-8")
    (folder / "evalset.jsonl").write_text(jsonl(questions), encoding="utf-8")
    lines = ['evalset = "evalset.jsonl"', 'embedding = "python:hashed:embed"', 'embedding_id = "hashed-8"',
             'metrics = ["ndcg", "recall@10", "precision"]', "k = 5", f'cache = "{folder / "cache"}"']
    if chunks:
        (folder / "chunks.jsonl").write_text(jsonl(rows), encoding="utf-8")
        lines += ['chunks = "chunks.jsonl"', 'db = "embedded"', "keep_database = false"]
    (folder / "pyproject.toml").write_text("[tool.ragretrieval]\n" + "\n".join(lines) + "\n" + retrievers, encoding="utf-8")
    return folder


def prod(ef_search: int, **more: object) -> str:
    return retriever("prod", "table", table="public.docs", id_column="id", text_column="body",
                     embedding_column="emb", **more) + f'search_settings = {{ "hnsw.ef_search" = {ef_search} }}\n'


def gate(folder: Path, dsn: str | None, *flags: str) -> tuple[int, str]:
    command = [sys.executable, "-m", "pytest", "--rag-eval", "-p", "no:cacheprovider", *flags]
    if dsn is not None:
        command += ["--rag-db-url", dsn]
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout + done.stderr


def results(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document


def test_table_runs_read_only_like_seeded_exact(server: tuple[str, str], tmp_path: Path) -> None:
    owner, reader = server
    before = catalog(owner)
    team = project(tmp_path / "team", prod(1000, where="id LIKE 'doc-%'"))  # every row; a literal %
    code, out = gate(team, reader, "--rag-update-baseline", "--rag-json", str(tmp_path / "team.json"))
    assert code == 0, out
    assert "rag: 600 chunks (the team's table public.docs where id LIKE 'doc-%'), 12 questions" in out, out
    seeded = project(tmp_path / "seeded", retriever("prod", "vector"), chunks=True)
    code, out = gate(seeded, None, "--rag-json", str(tmp_path / "seeded.json"), "--rag-update-baseline")
    assert code == 0, out
    team_results, seeded_results = results(tmp_path / "team.json"), results(tmp_path / "seeded.json")
    assert team_results["retrievers"]["prod"]["metrics"] == seeded_results["retrievers"]["prod"]["metrics"]
    assert {q: v["ranking"] for q, v in team_results["retrievers"]["prod"]["questions"].items()} == {
        q: v["ranking"] for q, v in seeded_results["retrievers"]["prod"]["questions"].items()}
    engine = team_results["fingerprint"]["retrievers"]["prod"]["engine"]
    assert engine["hnsw.ef_search"] == 1000 and engine["vector"] and engine["server"].startswith("16")
    assert engine["indexes"]["docs_emb_idx"]["method"] == "hnsw"
    assert engine["indexes"]["docs_emb_idx"]["options"] == ["ef_construction=64", "m=16"]
    assert "vector" not in seeded_results["fingerprint"]["retrievers"]["prod"].get("engine", {})
    assert catalog(owner) == before
    with psycopg.connect(reader) as conn:
        register_vector(conn)
        cursor = conn.cursor()
        params = {"table": "public.docs", "id_column": "id", "embedding_column": "emb", "operator": "cosine",
                  "where": None}
        apply_settings(cursor, {"hnsw.ef_search": 1000})
        cursor.execute(b"EXPLAIN " + search_sql(params).as_bytes(conn), {"q": embed(["w01 w02"])[0], "k": 10})
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Index Scan using docs_emb_idx" in plan, plan
    with session(owner) as conn, pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
        conn.execute("CREATE TEMP TABLE scratch (x int)")  # the plugin's sessions write nothing, even as the owner


def test_a_changed_search_setting_is_named_and_exact_check_measures_the_index(
    server: tuple[str, str], tmp_path: Path
) -> None:
    owner, reader = server
    folder = project(tmp_path / "team", prod(1000))
    code, out = gate(folder, reader, "--rag-update-baseline")
    assert code == 0, out
    project(folder, prod(1, exact_check=6))
    edit = "UPDATE docs SET body = body || %s WHERE id = 'doc-0000'"
    with psycopg.connect(owner, autocommit=True) as conn:
        conn.execute(edit, (" edited",))
    try:
        code, out = gate(folder, reader, "--rag-json", str(tmp_path / "low.json"))
    finally:
        with psycopg.connect(owner, autocommit=True) as conn:
            conn.execute("UPDATE docs SET body = left(body, -7) WHERE id = 'doc-0000'")
    assert "prod.engine.hnsw.ef_search 1000 -> 1" in out, out
    assert "chunks: changed (600 -> 600 chunks in table public.docs; md5:" in out, out
    assert code == 1, out
    diagnostics = results(tmp_path / "low.json")["retrievers"]["prod"]["diagnostics"]
    assert 0 <= diagnostics["ann_recall@10"] < 1, diagnostics


FULL_TEXT = (
    "SELECT id FROM public.docs WHERE to_tsvector('simple', body) @@ plainto_tsquery('simple', %(query)s) "
    "ORDER BY ts_rank(to_tsvector('simple', body), plainto_tsquery('simple', %(query)s)) DESC, id LIMIT %(k)s"
)

NEAREST = "SELECT id FROM public.docs ORDER BY emb <=> %(embedding)s, id LIMIT %(k)s"
"""An exact nearest-neighbour query (the ORDER BY's tie-break keeps the index out): the seeded values."""


def test_a_full_text_sql_retriever_is_gated(server: tuple[str, str], tmp_path: Path) -> None:
    _, reader = server
    keys = {"table": "public.docs", "text_column": "body"}
    knn = retriever("knn", "sql", query=NEAREST, **keys) + prod(1000)
    folder = project(tmp_path / "team", retriever("fts", "sql", query=FULL_TEXT, **keys) + knn)
    code, out = gate(folder, reader, "--rag-update-baseline", "--rag-json", str(tmp_path / "fts.json"))
    assert code == 0, out
    found = results(tmp_path / "fts.json")["retrievers"]
    assert found["fts"]["metrics"]["recall@10"] == 1.0
    assert found["knn"]["metrics"] == found["prod"]["metrics"]
    worse = FULL_TEXT.replace("plainto_tsquery('simple', %(query)s)) DESC, id", "plainto_tsquery('simple', %(query)s)), id")
    project(folder, retriever("fts", "sql", query=worse, **keys) + knn)
    code, out = gate(folder, reader)
    assert code == 1, out
    assert "fts.query" in out, out


def test_a_gold_id_the_table_lacks_is_one_line(server: tuple[str, str], tmp_path: Path) -> None:
    _, reader = server
    folder = project(tmp_path / "team", prod(40))
    with (folder / "evalset.jsonl").open("a", encoding="utf-8") as lines:
        lines.write(json.dumps({"id": "q99", "query": "w01", "relevant": ["doc-9999"]}) + "\n")
    code, out = gate(folder, reader)
    assert code != 0
    assert "evalset.jsonl:13: unknown chunk id 'doc-9999' in 'relevant' (table public.docs has no row with that id)" in out


def test_a_role_that_may_do_more_than_read_is_refused(server: tuple[str, str], tmp_path: Path) -> None:
    """On 571473c the Database page only advised a SELECT-only role: a superuser's `sql` retriever ran
    `COPY ... TO PROGRAM` on the server, once per question. Now every session's role is checked."""
    owner, reader = server
    host = owner.partition("?")[2]
    with psycopg.connect(owner, autocommit=True) as conn:
        for role, grant in [("writer", "GRANT INSERT ON docs TO writer"), ("filer", "GRANT pg_read_server_files TO filer"),
                            ("runner", "GRANT pg_execute_server_program TO runner"),
                            ("scribe", "GRANT pg_write_server_files TO scribe"),
                            ("keeper", "CREATE TABLE kept (x int); ALTER TABLE kept OWNER TO keeper")]:
            conn.execute(f"CREATE ROLE {role} LOGIN")
            conn.execute(f"GRANT USAGE ON SCHEMA public TO {role}; GRANT SELECT ON docs TO {role}")
            conn.execute(grant)
    try:
        for role, reason in [("postgres", "is a superuser"), ("writer", "may write table docs"),
                             ("filer", "is a member of pg_read_server_files"),
                             ("runner", "is a member of pg_execute_server_program"),
                             ("scribe", "is a member of pg_write_server_files"), ("keeper", "owns table kept")]:
            with pytest.raises(DatabaseError) as error:
                connect(f"postgresql://{role}@/postgres?{host}")
            assert f"role {role!r} on " in str(error.value) and reason in str(error.value), str(error.value)
            assert "\n" not in str(error.value)
        with connect(reader) as conn:
            assert [conn.execute(f"SHOW {name}").fetchone() for name in ("lock_timeout",
                    "idle_in_transaction_session_timeout", "statement_timeout")] == [("10s",), ("1min",), ("5min",)]
        folder = project(tmp_path / "team", retriever("fts", "sql", query=FULL_TEXT, table="public.docs",
                                                      text_column="body"))
        code, out = gate(folder, owner)
        assert code != 0, out
        assert "role 'postgres' on " in out and "is a superuser: a table or sql retriever reads" in out, out
    finally:
        with psycopg.connect(owner, autocommit=True) as conn:
            conn.execute("DROP TABLE kept; DROP OWNED BY writer, filer, runner, scribe, keeper; "
                         "DROP ROLE writer, filer, runner, scribe, keeper")


GRANTS = {
    "signaller": ("GRANT pg_signal_backend TO signaller",
                  "is a member of pg_signal_backend (REVOKE pg_signal_backend FROM signaller)"),
    "member": ("CREATE ROLE app LOGIN; GRANT app TO member",
               "is a member of role app, whose sessions it may cancel and terminate (REVOKE app FROM member)"),
    "exporter": ("GRANT EXECUTE ON FUNCTION lo_export(oid, text) TO exporter",
                 "may execute lo_export(oid,text) (REVOKE EXECUTE ON FUNCTION lo_export(oid,text) FROM exporter)"),
    "lister": ("GRANT EXECUTE ON FUNCTION pg_read_file(text) TO lister",
               "may execute pg_read_file(text) (REVOKE EXECUTE ON FUNCTION pg_read_file(text) FROM lister)"),
    "resetter": ("CREATE ROLE stats; GRANT EXECUTE ON FUNCTION pg_stat_reset() TO stats; GRANT stats TO resetter",
                 "may execute pg_stat_reset() (REVOKE EXECUTE ON FUNCTION pg_stat_reset() FROM stats)"),
    "inserter": ("GRANT INSERT (body) ON docs TO inserter",
                 "may write column docs.body (REVOKE INSERT (body) ON docs FROM inserter)"),
    "definer": ("CREATE FUNCTION run_it() RETURNS int LANGUAGE sql SECURITY DEFINER AS 'SELECT 1'; "
                "REVOKE EXECUTE ON FUNCTION run_it() FROM PUBLIC; GRANT EXECUTE ON FUNCTION run_it() TO definer",
                "may execute SECURITY DEFINER function run_it() owned by superuser postgres, which may do more than "
                "read (REVOKE EXECUTE ON FUNCTION run_it() FROM definer)"),
}
"""A role per grant the issue-52 campaign ran programs, read files, reset statistics or ended sessions
with, the grant that made it so, and the reason (with the statement that takes it away) it is refused for."""


def test_a_role_that_may_execute_more_than_reads_is_refused(server: tuple[str, str], tmp_path: Path) -> None:
    """On 577255f each of these roles passed the check: through a SECURITY DEFINER function a superuser
    owned a query ran `COPY ... TO PROGRAM`, lo_export wrote a server file, pg_read_file read PG_VERSION,
    pg_stat_reset() ran, a pg_signal_backend member ended another application's session (as a member of the
    application's role may), and a column's INSERT grant was not seen. Each is now one line naming the grant to revoke; a SECURITY DEFINER function
    owned by a role that may only read is no reason, nor is the documented role."""
    owner, reader = server
    host = owner.partition("?")[2]
    with psycopg.connect(owner, autocommit=True) as conn:
        for role, (grant, _) in GRANTS.items():
            conn.execute(f"CREATE ROLE {role} LOGIN; GRANT USAGE ON SCHEMA public TO {role}; GRANT SELECT ON docs TO {role}")
            conn.execute(grant)
        conn.execute("CREATE FUNCTION harmless() RETURNS int LANGUAGE sql SECURITY DEFINER AS 'SELECT 1'; "
                     "ALTER FUNCTION harmless() OWNER TO reader")
    try:
        for role, (_, reason) in GRANTS.items():
            with pytest.raises(DatabaseError) as error:
                connect(f"postgresql://{role}@/postgres?{host}")
            message = str(error.value)
            assert message.startswith(f"role {role!r} on postgresql://{role}@") and f" {reason}: " in message, message
            assert "\n" not in message and "signal another role's sessions" in message, message
        connect(reader).close()
        with psycopg.connect(owner, autocommit=True) as conn:
            conn.execute("GRANT EXECUTE ON FUNCTION run_it() TO PUBLIC")
        with pytest.raises(DatabaseError, match=r"owned by superuser postgres, .* run_it\(\) FROM PUBLIC\): "):
            connect(reader)
    finally:
        with psycopg.connect(owner, autocommit=True) as conn:
            conn.execute("DROP FUNCTION run_it(); DROP FUNCTION harmless()")
            roles = ", ".join([*GRANTS, "stats", "app"])
            conn.execute(f"DROP OWNED BY {roles}; DROP ROLE {roles}")


def test_a_role_without_its_own_limits_is_warned_about(server: tuple[str, str], tmp_path: Path) -> None:
    """On 577255f nothing said that the role had no statement_timeout or temp_file_limit of its own: a
    runaway statement filled 7.7 GB of temporary files on the team's server in 190 s."""
    owner, reader = server
    folder = project(tmp_path / "team", prod(40))
    code, out = gate(folder, reader, "--rag-update-baseline")
    assert code == 0, out
    warning = ("rag: warning: role reader has no statement_timeout and no temp_file_limit of its own: "
               "the plugin's sessions set statement_timeout = 5min")
    assert out.count(warning) == 1, out
    assert "ask the DBA for ALTER ROLE reader SET statement_timeout = '5min'; ALTER ROLE reader SET temp_file_limit" in out
    with psycopg.connect(owner, autocommit=True) as conn:
        conn.execute("ALTER ROLE reader SET statement_timeout = '2min'; ALTER ROLE reader SET temp_file_limit = '1GB'")
    try:
        code, out = gate(folder, reader)
    finally:
        with psycopg.connect(owner, autocommit=True) as conn:
            conn.execute("ALTER ROLE reader RESET statement_timeout; ALTER ROLE reader RESET temp_file_limit")
    assert code == 0, out
    assert "of its own" not in out, out


def test_a_retriever_past_its_time_budget_stops_for_the_run(server: tuple[str, str], tmp_path: Path) -> None:
    """On 577255f a slow statement was bounded only by 5 minutes a question, and each retriever reading it
    (here a hybrid) asked it again: 12 questions of 3 s each took 36 s a reader, 1,000 questions days.
    Now the statement left with less than the budget is cancelled, and the retriever stops for the run:
    one line, its remaining questions unavailable, every other reader told the same at once."""
    _, reader = server
    keys = {"table": "public.docs", "text_column": "body"}
    slow = "SELECT id FROM (SELECT pg_sleep(3)) AS nap, public.docs ORDER BY id LIMIT %(k)s"
    folder = project(tmp_path / "team", retriever("slow", "sql", query=slow, time_budget=4, **keys)
                     + retriever("fts", "sql", query=FULL_TEXT, **keys)
                     + retriever("mix", "hybrid", sources=["slow", "fts"]))
    pyproject = folder / "pyproject.toml"
    pyproject.write_text(pyproject.read_text(encoding="utf-8").replace("k = 5\n", "k = 5\nworkers = 1\n"),
                         encoding="utf-8")
    started = time.monotonic()
    code, out = gate(folder, reader)
    took = time.monotonic() - started
    assert code != 0, out
    stop = ("retriever 'slow': its time_budget of 4 s on the team's server ran out (raise time_budget in "
            "[tool.ragretrieval.retrievers.slow] or make the query faster); it stops for this run, its ")
    assert stop in out and " remaining questions of 12 unavailable" in out, out
    assert re.search(r"its 1[01] remaining questions of 12 unavailable", out), out
    assert out.count("retriever 'fts'") == 0, out
    assert took < 30, (took, out)  # 4 s of budget: not 12 questions x 3 s, once for slow and once for mix


def test_sql_messages_name_the_row_and_the_limit(server: tuple[str, str], tmp_path: Path) -> None:
    """On 571473c a NULL id was reported as 'None' (an unknown chunk id), a huge id was echoed whole,
    and a statement the session's limit cancelled came without the note naming the limit."""
    owner, reader = server
    keys = {"table": "public.docs", "text_column": "body"}
    queries = {"nulls": "SELECT NULL::text FROM public.docs LIMIT %(k)s",
               "huge": "SELECT id || repeat('x', 100000) FROM public.docs LIMIT %(k)s",
               "waits": "SELECT id FROM public.docs WHERE NOT EXISTS (SELECT 1 FROM held) ORDER BY id LIMIT %(k)s"}
    folder = project(tmp_path / "team", "".join(retriever(name, "sql", query=query, **keys)
                                                 for name, query in queries.items()))
    with psycopg.connect(owner, autocommit=True) as conn:
        conn.execute("CREATE TABLE held (x int); GRANT SELECT ON held TO reader")
    try:
        with psycopg.connect(owner) as holder:
            holder.execute("LOCK TABLE held IN ACCESS EXCLUSIVE MODE")  # held until the run ends
            code, out = gate(folder, reader)
    finally:
        with psycopg.connect(owner, autocommit=True) as conn:
            conn.execute("DROP TABLE held")
    assert code != 0, out
    assert "retriever 'nulls': row 1 of the query's answer has NULL as its chunk id (the first column)" in out, out
    assert "retriever 'huge': row 1 of the query's answer has a chunk id longer than 1000 characters" in out, out
    assert "'None'" not in out and "x" * 1000 not in out
    assert "retriever 'waits': the team's server answered: canceling statement due to lock timeout (the plugin's " in out, out
    assert "(the plugin's sessions run with lock_timeout = 10s)" in out, out
def test_without_a_url_the_team_retrievers_are_unavailable_and_their_entries_kept(
    server: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, a `table` or `sql` retriever without a database URL failed the run (8 failed items), so a CI
    runner that cannot reach the team's server had to deselect them; an update then could not keep them."""
    monkeypatch.delenv("RAG_EVAL_DATABASE_URL", raising=False)
    _, reader = server
    keys = {"table": "public.docs", "text_column": "body"}
    team = retriever("words", "bm25") + retriever("fts", "sql", query=FULL_TEXT, **keys) + prod(40)
    folder = project(tmp_path / "team", team, chunks=True)
    code, out = gate(folder, reader, "--rag-update-baseline")
    assert code == 0, out
    path = folder / "baselines" / "retrieval.json"
    before = json.loads(path.read_bytes())
    code, out = gate(folder, None, "--rag-eval", "--rag-json", str(tmp_path / "out.json"))
    assert code == 0, out
    reason = "no database URL to read the team's table: set the secret RAG_EVAL_DATABASE_URL or pass --rag-db-url DSN"
    assert f"k=5, 12 answerable questions; unavailable: fts, prod ({reason})" in out, out
    assert "compared across changes" not in out, out  # their engines were not read: nothing to name
    command = [sys.executable, "-c", "from pytest_ragretrieval.cli import main; main()", "comment", "out.json"]
    comment = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=True).stdout
    gate_line = next(line for line in comment.splitlines() if line.startswith("- **"))
    assert f"unavailable: `fts`, `prod` ({reason})" in gate_line, comment
    code, out = gate(folder, None, "--rag-update-baseline")
    assert code == 0, out
    assert "removed" not in out, out
    after = json.loads(path.read_bytes())
    (tmp_path / "old.json").write_text(json.dumps(before), encoding="utf-8")
    command = [sys.executable, "-c", "from pytest_ragretrieval.cli import main; main()", "comment", "--baseline-diff",
               str(tmp_path / "old.json"), str(tmp_path / "out.json")]
    review = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=60, check=True).stdout
    assert "✅ 未降低 / not lowered" in review and "removed" not in review, review
    for name in ("fts", "prod"):
        assert json.dumps(after["retrievers"][name]) == json.dumps(before["retrievers"][name])
        assert json.dumps(after["fingerprint"]["retrievers"][name]) == json.dumps(before["fingerprint"]["retrievers"][name])
    assert "unavailable" not in after
    project(folder, team.replace('type = "sql"', 'type = "sql"\nrequired = true'), chunks=True)
    code, out = gate(folder, None, "--rag-eval")
    assert code == 1, out
    assert f"retriever 'fts' is required (required = true) but cannot run here: {reason}" in out, out


def test_a_role_setting_is_named_and_a_pin_warns_once(server: tuple[str, str], tmp_path: Path) -> None:
    """Before, `ALTER ROLE reader SET hnsw.ef_search = 4` was invisible: the fingerprint held only the pins."""
    owner, reader = server
    unpinned = retriever("prod", "table", table="public.docs", id_column="id", text_column="body",
                         embedding_column="emb")
    folder = project(tmp_path / "team", unpinned)
    code, out = gate(folder, reader, "--rag-update-baseline", "--rag-json", str(tmp_path / "before.json"))
    assert code == 0, out
    session = results(tmp_path / "before.json")["fingerprint"]["retrievers"]["prod"]["engine"]["session"]
    assert session["hnsw.ef_search"] == "40 (server default)", session
    with psycopg.connect(owner, autocommit=True) as conn:
        conn.execute("ALTER ROLE reader SET hnsw.ef_search = 4")
    try:
        _, out = gate(folder, reader)
        assert 'prod.engine.session.hnsw.ef_search "40 (server default)" -> "4 (role)"' in out, out
        project(folder, prod(40))
        code, out = gate(folder, reader, "--rag-json", str(tmp_path / "pinned.json"))
    finally:
        with psycopg.connect(owner, autocommit=True) as conn:
            conn.execute("ALTER ROLE reader RESET hnsw.ef_search")
    warning = ("prod: search_settings pins hnsw.ef_search = 40, but the database's own value is 4 "
               "(from the role); the run measures 40")
    assert out.count(warning) == 1, out
    pinned = results(tmp_path / "pinned.json")
    assert pinned["fingerprint"]["retrievers"]["prod"]["engine"]["session"]["hnsw.ef_search"] == "40 (search_settings)"
    assert pinned["retrievers"]["prod"]["metrics"] == results(tmp_path / "before.json")["retrievers"]["prod"]["metrics"]


def test_a_table_edited_beside_a_chunks_file_is_named(server: tuple[str, str], tmp_path: Path) -> None:
    """Before, with both a chunks file and a `table` configured, an edit to the table alone went unnoticed."""
    owner, reader = server
    folder = project(tmp_path / "team", prod(40), chunks=True)
    code, out = gate(folder, reader, "--rag-update-baseline")
    assert code == 0, out
    assert "differs from" not in out, out
    with psycopg.connect(owner, autocommit=True) as conn:
        conn.execute("UPDATE docs SET body = body || ' edited' WHERE id = 'doc-0003'")
    try:
        _, out = gate(folder, reader)
    finally:
        with psycopg.connect(owner, autocommit=True) as conn:
            conn.execute("UPDATE docs SET body = left(body, -7) WHERE id = 'doc-0003'")
    assert ("prod: table public.docs differs from chunks.jsonl (600 rows, 600 chunks): 1 texts differ (doc-0003); "
            "the run judges the file's texts, the table answers") in out, out


def test_a_seeded_retriever_on_a_read_only_role_names_the_embedded_database(
    server: tuple[str, str], tmp_path: Path
) -> None:
    """Before, --rag-db-url beside a seeded `vector` retriever on a role that cannot create a schema failed
    with 'cannot create schema ... permission denied' and no word of --rag-db=embedded."""
    _, reader = server
    folder = project(tmp_path / "team", retriever("seeded", "vector") + prod(40), chunks=True)
    text = (folder / "pyproject.toml").read_text(encoding="utf-8").replace('db = "embedded"\n', "")
    (folder / "pyproject.toml").write_text(text, encoding="utf-8")
    code, out = gate(folder, reader)
    assert code != 0
    lines = [line for line in out.splitlines() if line.startswith(("cannot create schema", "seeded: error:"))]
    assert lines and all(line.endswith("add --rag-db=embedded: the seeded retrievers run on a local Postgres, "
                                       "the team's table on this server") for line in lines), out
