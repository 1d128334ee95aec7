"""db: choosing the mode, the embedded and url lifecycles, password hygiene, the Docker boundary."""
from __future__ import annotations

import http.server
import json
import socket
import socketserver
import subprocess
import sys
import threading
import traceback
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import numpy
import psutil
import psycopg
import pytest
from psycopg import sql

from pytest_ragretrieval.core.errors import DatabaseError, RagError
from pytest_ragretrieval.database.docker import DOCKER_IMAGE, docker_answers
from pytest_ragretrieval.database.dsn import redact, scrub
from pytest_ragretrieval.database.handle import open_database
from pytest_ragretrieval.database.schemas import lock_key
from pytest_ragretrieval.database.seed import seed, table_name
from pytest_ragretrieval.database.servers import Choice, choose
from pytest_ragretrieval.database.settings import IndexSettings
from pytest_ragretrieval.evalset.records import Chunk

if TYPE_CHECKING:
    from pgserver.postgres_server import PostgresServer

PASSWORD = "S3cr3t-p@ss:w/rd"
ROLE = "rag_user"
CHUNKS = tuple(Chunk(f"c{i}", f"text {i}", doc=None if i % 2 else "d", metadata={"i": i}) for i in range(5))
VECTORS = numpy.array([[1, 0, 0], [1, 1, 0], [0, 1, 0], [-1, 0, 0], [1, 0, 1]], dtype=numpy.float32)


@dataclass(frozen=True)
class Target:
    """A second server standing in for someone else's: a canary, another schema, a password role."""

    server: PostgresServer

    def uri(self, database: str = "postgres") -> str:
        return self.server.get_uri(database)

    @property
    def socket_dir(self) -> str:
        return str(self.server.get_postmaster_info().socket_dir)


def _run(uri: str, *statements: str) -> None:
    with psycopg.connect(uri, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pgserver.postgres_server import get_server
    server = get_server(tmp_path_factory.mktemp("target") / "data", cleanup_mode="delete")
    found = Target(server)
    _run(
        found.uri(),
        "CREATE TABLE public.canary (id int PRIMARY KEY, name text)",
        "INSERT INTO public.canary VALUES (1, 'tweety')",
        "CREATE SCHEMA other",
        "CREATE TABLE other.things (x int)",
        "INSERT INTO other.things VALUES (7)",
        "CREATE DATABASE withvec",
        "CREATE DATABASE dockerish",
        "CREATE DATABASE stale",
        f"CREATE ROLE {ROLE} LOGIN PASSWORD '{PASSWORD}'",
        f"GRANT CREATE ON DATABASE withvec TO {ROLE}",
    )
    _run(found.uri("withvec"), "CREATE EXTENSION vector")
    _run(
        found.uri("stale"),
        "CREATE SCHEMA rag_eval_000000000000",
        "CREATE EXTENSION vector SCHEMA rag_eval_000000000000",
    )
    yield found
    server.cleanup()


SNAPSHOT = {
    "schemas": "SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg_%' ORDER BY 1",
    "extensions": "SELECT e.extname, n.nspname, e.extversion FROM pg_extension e"
    " JOIN pg_namespace n ON n.oid = e.extnamespace ORDER BY 1",
    "columns": "SELECT table_schema, table_name, column_name, data_type FROM information_schema.columns"
    " WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2, 3",
}
CANARY = {
    "canary": "SELECT * FROM public.canary ORDER BY id",
    "other": "SELECT * FROM other.things ORDER BY x",
}


def snapshot(uri: str, *, canary: bool = False) -> dict[str, list[tuple[Any, ...]]]:
    """What a url-mode run must leave as it was."""
    queries = {**SNAPSHOT, **CANARY} if canary else SNAPSHOT
    with psycopg.connect(uri) as conn:
        return {key: conn.execute(text).fetchall() for key, text in queries.items()}


def seed_and_rank(db: Any) -> list[str]:
    with db.connect() as conn:
        seed(conn, db.schema, CHUNKS, VECTORS, IndexSettings())
        query = sql.SQL("SELECT id FROM {} ORDER BY embedding <=> %s, id").format(table_name(db.schema))
        return [row[0] for row in conn.execute(query, (numpy.array([1.0, 0.0, 0.0]),))]


EXPECTED_RANKING = ["c0", "c1", "c4", "c2", "c3"]


def test_embedded_lifecycle() -> None:
    db = open_database(choose("embedded", None))
    with db.connect() as conn:
        data = Path(conn.info.host)
    folder = data.parent
    postmaster = int((data / "postmaster.pid").read_text().split()[0])
    assert folder.name.startswith("rag-eval-pg-") and psutil.pid_exists(postmaster)
    assert db.mode == "embedded" and db.schema.startswith("rag_eval_") and len(db.schema) == len("rag_eval_") + 12
    assert db.describe().startswith("embedded: PostgreSQL 16") and "pgvector 0.6" in db.describe()
    assert seed_and_rank(db) == EXPECTED_RANKING
    db.close()
    assert not folder.exists()
    assert not psutil.pid_exists(postmaster) or psutil.Process(postmaster).status() == psutil.STATUS_ZOMBIE
    db.close()
    with pytest.raises(DatabaseError, match="already closed"):
        db.connect()


def test_url_mode_leaves_the_server_as_it_was_but_for_vector_in_a_schema_of_its_own(target: Target) -> None:
    before = snapshot(target.uri(), canary=True)
    assert "vector" not in [row[0] for row in before["extensions"]]
    with open_database(choose("url", target.uri()), target.uri()) as db:
        assert db.vector_schema == "rag_eval_ext"
        assert seed_and_rank(db) == EXPECTED_RANKING
        during = snapshot(target.uri())
        assert (db.schema,) in during["schemas"] and ("vector", "rag_eval_ext", "0.6.2") in during["extensions"]
    after = snapshot(target.uri(), canary=True)
    assert after["schemas"] == sorted([*before["schemas"], ("rag_eval_ext",)])
    assert after["extensions"] == sorted([*before["extensions"], ("vector", "rag_eval_ext", "0.6.2")])
    assert {key: after[key] for key in ("columns", *CANARY)} == {key: before[key] for key in ("columns", *CANARY)}
    assert before["canary"] == [(1, "tweety")] and before["other"] == [(7,)]
    with open_database(choose("url", target.uri()), target.uri()) as again:
        assert again.vector_schema == "rag_eval_ext" and seed_and_rank(again) == EXPECTED_RANKING
    assert snapshot(target.uri(), canary=True) == after


def test_url_mode_uses_vector_where_it_is(target: Target) -> None:
    before = snapshot(target.uri("withvec"))
    with open_database(choose("url", target.uri("withvec")), target.uri("withvec")) as db:
        assert db.vector_schema == "public"
        assert seed_and_rank(db) == EXPECTED_RANKING
    assert snapshot(target.uri("withvec")) == before
    assert ("vector", "public", "0.6.2") in before["extensions"]


def test_failure_inside_the_run_still_drops_the_schema(target: Target) -> None:
    open_database(Choice("url", "test"), target.uri()).close()
    before = snapshot(target.uri(), canary=True)
    with pytest.raises(RuntimeError, match="boom"):
        with open_database(Choice("url", "test"), target.uri()) as db:
            seed_and_rank(db)
            raise RuntimeError("boom")
    assert snapshot(target.uri(), canary=True) == before
    db.close()


def test_a_killed_runs_schema_is_reclaimed_with_the_vector_it_held(target: Target) -> None:
    """rag_eval_000000000000 holds vector, as runs of 0.1 left it, and nobody holds its lock."""
    with open_database(Choice("url", "test"), target.uri("stale")) as db:
        assert db.reclaimed == ["rag_eval_000000000000"] and db.vector_schema == "rag_eval_ext"
        assert "dropped 1 schema left by killed runs (rag_eval_000000000000)" in db.describe()
        assert seed_and_rank(db) == EXPECTED_RANKING
    schemas = [name for (name,) in snapshot(target.uri("stale"))["schemas"]]
    assert schemas == ["information_schema", "public", "rag_eval_ext"]


def _held(uri: str, schema: str, *statements: str) -> psycopg.Connection:
    """A schema as a live run holds it: created, with its advisory lock held on a connection kept open."""
    conn = psycopg.connect(uri, autocommit=True)
    conn.execute("SELECT pg_advisory_lock(%s)", (lock_key(schema),))
    conn.execute(f"CREATE SCHEMA {schema}")
    for statement in statements:
        conn.execute(statement)
    return conn


def test_a_schema_whose_lock_is_held_is_never_dropped(target: Target) -> None:
    _run(target.uri(), "CREATE DATABASE inuse")
    live = _held(target.uri("inuse"), "rag_eval_111111111111", "CREATE TABLE rag_eval_111111111111.chunks (id text)")
    try:
        with open_database(Choice("url", "test"), target.uri("inuse")) as db, open_database(
            Choice("url", "test"), target.uri("inuse")
        ) as other:
            assert db.reclaimed == [] and other.reclaimed == []
            assert seed_and_rank(db) == EXPECTED_RANKING and seed_and_rank(other) == EXPECTED_RANKING
        schemas = [name for (name,) in snapshot(target.uri("inuse"))["schemas"]]
        assert schemas == ["information_schema", "public", "rag_eval_111111111111", "rag_eval_ext"]
    finally:
        live.close()
    with open_database(Choice("url", "test"), target.uri("inuse")) as db:
        assert db.reclaimed == ["rag_eval_111111111111"]


def test_vector_in_a_schema_a_run_still_holds_is_refused(target: Target) -> None:
    _run(target.uri(), "CREATE DATABASE oldrun")
    live = _held(target.uri("oldrun"), "rag_eval_222222222222", "CREATE EXTENSION vector SCHEMA rag_eval_222222222222")
    try:
        before = snapshot(target.uri("oldrun"))
        with pytest.raises(DatabaseError, match=r"lives in schema rag_eval_222222222222, which a run still holds"):
            open_database(Choice("url", "test"), target.uri("oldrun"))
        assert snapshot(target.uri("oldrun")) == before
    finally:
        live.close()


@pytest.mark.parametrize(
    "form",
    [
        "url",
        "keyvalue",
    ],
)
def test_password_never_shown(target: Target, form: str) -> None:
    if form == "url":
        dsn = f"postgresql://{ROLE}:{quote(PASSWORD, safe='')}@/withvec?host={target.socket_dir}"
    else:
        dsn = f"host={target.socket_dir} dbname=withvec user={ROLE} password='{PASSWORD}'"
    choice = choose("url", dsn)
    with open_database(choice, dsn) as db:
        with db.connect() as conn:
            assert conn.execute("SELECT current_user").fetchone() == (ROLE,)
        assert seed_and_rank(db) == EXPECTED_RANKING
        shown = " ".join([choice.reason, db.describe(), db.dsn_safe, repr(choice)])
    assert "***" in db.dsn_safe and ROLE in db.dsn_safe
    for secret in (PASSWORD, quote(PASSWORD, safe="")):
        assert secret not in shown


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _assert_hidden(exc: BaseException, *secrets: str) -> None:
    text = "".join(traceback.format_exception(exc))
    assert "\n" not in str(exc)
    for secret in secrets:
        assert secret not in text


@pytest.mark.parametrize(
    "template",
    [
        "postgresql://bob:{pw}@127.0.0.1:{port}/db",
        "host=127.0.0.1 port={port} user=bob password={pw} dbname=db",
    ],
)
def test_connection_error_hides_the_password(template: str) -> None:
    dsn = template.format(pw="hunter2-Zq9", port=_closed_port())
    with pytest.raises(DatabaseError, match=r"cannot connect to .*127\.0\.0\.1.*Connection refused") as caught:
        open_database(choose("url", dsn), dsn)
    _assert_hidden(caught.value, "hunter2-Zq9")
    assert "bob:***@" in str(caught.value) or "password=***" in str(caught.value)
    assert "--rag-db-url" in str(caught.value)


def test_driver_echo_of_the_password_is_scrubbed() -> None:
    dsn = "postgresql://bob:hunter2 Zq9@127.0.0.1/db"
    with pytest.raises(DatabaseError) as caught:
        open_database(Choice("url", "test"), dsn)
    _assert_hidden(caught.value, "hunter2 Zq9", "hunter2%20Zq9")
    assert "unexpected spaces" in str(caught.value)


def test_url_mode_needs_a_dsn() -> None:
    with pytest.raises(DatabaseError, match=r"--rag-db-url DSN or set RAG_EVAL_DATABASE_URL"):
        choose("url", None)
    with pytest.raises(DatabaseError, match="RAG_EVAL_DATABASE_URL"):
        open_database(Choice("url", "test"), "")


def test_unknown_modes() -> None:
    with pytest.raises(DatabaseError, match="unknown database mode 'sqlite'"):
        choose("sqlite", None)  # type: ignore[arg-type]  # what an untyped caller may pass
    with pytest.raises(DatabaseError, match="resolve it with choose"):
        open_database(Choice("auto", "test"))  # type: ignore[arg-type]  # what an untyped caller may pass


def test_docker_mode_without_docker_names_the_alternatives(no_docker: str) -> None:
    with pytest.raises(DatabaseError) as caught:
        choose("docker", None)
    message = str(caught.value)
    assert isinstance(caught.value, RagError) and "\n" not in message
    assert f"no Docker engine answered at {no_docker} (from DOCKER_HOST)" in message
    for alternative in ("--rag-db=embedded", "--rag-db=url", "--rag-db-url", "RAG_EVAL_DATABASE_URL"):
        assert alternative in message


def test_auto_without_docker_chooses_embedded(no_docker: str) -> None:
    assert docker_answers(timeout=0.5) == (False, f"no Docker engine answered at {no_docker} (from DOCKER_HOST)")
    choice = choose("auto", None)
    assert choice.mode == "embedded"
    assert choice.reason.startswith("auto: no Docker engine answered") and no_docker in choice.reason


def test_default_socket_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    monkeypatch.setattr("docker.from_env", lambda **kwargs: (_ for _ in ()).throw(OSError("nope")))
    assert docker_answers() == (
        False,
        "no Docker engine answered at unix:///var/run/docker.sock (the default socket; set DOCKER_HOST to use another)",
    )


class _EngineHandler(http.server.BaseHTTPRequestHandler):
    """Just enough of the Docker Engine API for the SDK's version probe and ping, an empty container
    list (reclaim finds nothing) and an image that is present (nothing to pull)."""

    protocol_version = "HTTP/1.1"
    VERSION = {"ApiVersion": "1.44", "MinAPIVersion": "1.24", "Version": "25.0.0", "Os": "linux", "Arch": "amd64"}

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        if path.endswith("/_ping"):
            self._reply(200, b"OK", "text/plain")
        elif path.endswith("/version"):
            self._reply(200, json.dumps(self.VERSION).encode(), "application/json")
        elif path.endswith("/containers/json"):
            self._reply(200, b"[]", "application/json")
        elif "/images/" in path and path.endswith("/json"):
            self._reply(200, json.dumps({"Id": "sha256:" + "0" * 64}).encode(), "application/json")
        else:
            self._reply(404, b'{"message": "not faked"}', "application/json")

    def _reply(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def address_string(self) -> str:
        return "fake-docker"

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _UnixHTTPServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


@pytest.fixture
def fake_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    path = tmp_path / "docker.sock"
    server = _UnixHTTPServer(str(path), _EngineHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host = f"unix://{path}"
    monkeypatch.setenv("DOCKER_HOST", host)
    for name in ("DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH", "DOCKER_CONTEXT", "TESTCONTAINERS_HOST_OVERRIDE"):
        monkeypatch.delenv(name, raising=False)
    yield host
    server.shutdown()
    server.server_close()


def test_auto_with_docker_chooses_docker(fake_docker: str) -> None:
    choice = choose("auto", None)
    assert choice == Choice("docker", f"auto: a Docker engine answered at {fake_docker} (from DOCKER_HOST)")
    assert choose("docker", None).mode == "docker"


@pytest.fixture
def container_calls(monkeypatch: pytest.MonkeyPatch, target: Target) -> list[tuple[str, str]]:
    """PostgresContainer with start/stop recorded and its URL pointing at the target server."""
    from testcontainers.community.postgres import PostgresContainer

    calls: list[tuple[str, str]] = []

    def start(self: Any) -> Any:
        calls.append(("start", self.image))
        return self

    monkeypatch.setattr(PostgresContainer, "start", start)
    def stop(self: Any, *args: Any, **kwargs: Any) -> None:
        calls.append(("stop", self.image))
        self.get_docker_client().client.close()

    monkeypatch.setattr(PostgresContainer, "stop", stop)
    monkeypatch.setattr(PostgresContainer, "get_connection_url", lambda self, *a, **k: target.uri("dockerish"))
    monkeypatch.setattr(PostgresContainer, "get_container_host_ip", lambda self: "127.0.0.1")
    monkeypatch.setattr(PostgresContainer, "get_wrapped_container", lambda self: type("C", (), {"short_id": "0123456789ab"})())
    return calls


def test_docker_mode_starts_the_pgvector_image(fake_docker: str, container_calls: list[tuple[str, str]]) -> None:
    db = open_database(choose("docker", None))
    assert container_calls == [("start", DOCKER_IMAGE)]
    assert db.mode == "docker" and db.describe().startswith("docker: PostgreSQL 16")
    assert seed_and_rank(db) == EXPECTED_RANKING
    db.close()
    db.close()
    assert container_calls == [("start", DOCKER_IMAGE), ("stop", DOCKER_IMAGE)]


def test_docker_start_failure_is_one_line(
    fake_docker: str, container_calls: list[tuple[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from testcontainers.community.postgres import PostgresContainer

    def fail(self: Any) -> Any:
        raise RuntimeError("pull access denied\nfor pgvector")

    monkeypatch.setattr(PostgresContainer, "start", fail)
    with pytest.raises(DatabaseError, match=r"pgvector:pg16 container did not start: pull access denied for") as caught:
        open_database(Choice("docker", "test"))
    assert "--rag-db=embedded" in str(caught.value) and "\n" not in str(caught.value)
    assert container_calls == [("stop", DOCKER_IMAGE)]


@pytest.mark.parametrize(
    ("dsn", "safe"),
    [
        ("postgresql://bob:hunter2@db.example:5432/app", "postgresql://bob:***@db.example:5432/app"),
        ("postgres://bob@db.example/app", "postgres://bob@db.example/app"),
        ("postgresql://db.example/app", "postgresql://db.example/app"),
        ("postgresql://bob:p%40ss%2Fw%3A@h/app?sslmode=require", "postgresql://bob:***@h/app?sslmode=require"),
        ("postgresql://bob:p@ss/w:rd@h/app", "postgresql://bob:***@h/app"),
        (
            "postgresql://h/app?user=bob&password=hunter2&sslmode=require",
            "postgresql://h/app?user=bob&password=***&sslmode=require",
        ),
        ("tcp://ops:hunter2@docker.example:2376", "tcp://ops:***@docker.example:2376"),
        ("postgresql://postgres:@/postgres?host=/tmp/x", "postgresql://postgres:@/postgres?host=/tmp/x"),
        ("postgresql://postgres:postgres@h/postgres", "postgresql://postgres:***@h/postgres"),
        ("host=h user=bob password=hunter2 dbname=app", "host=h user=bob password=*** dbname=app"),
        ("host=h password = 'it\\'s a secret' dbname=app", "host=h password = *** dbname=app"),
        ("host=h user=bob dbname=app", "host=h user=bob dbname=app"),
        ("", ""),
    ],
)
def test_redact(dsn: str, safe: str) -> None:
    assert redact(dsn) == safe


def test_scrub_masks_echoes_and_joins_lines() -> None:
    dsn = "host=h password=s3cr3t"
    message = 'bad value "s3cr3t"\n\tsee postgresql://u:other@h/db or password=zzz'
    assert scrub(message, dsn) == 'bad value "***" see postgresql://u:***@h/db or password=***'
    long = scrub("x " * 1000, dsn)
    assert len(long) == 400 and long.endswith("...")


def test_import_costs_nothing() -> None:
    code = (
        "import sys, pytest_ragretrieval.database.handle, pytest_ragretrieval.database.seed; "
        "print(sorted(m for m in ('psycopg', 'pgserver', 'testcontainers', 'docker', 'pgvector') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_a_role_with_a_tiny_statement_timeout_still_works(target: Target) -> None:
    _run(
        target.uri(),
        "DROP ROLE IF EXISTS rag_hurried",
        "CREATE ROLE rag_hurried LOGIN",
        "ALTER ROLE rag_hurried SET statement_timeout = '1ms'",
        "GRANT CREATE ON DATABASE withvec TO rag_hurried",
    )
    dsn = f"postgresql://rag_hurried@/withvec?host={target.socket_dir}"
    with open_database(choose("url", dsn), dsn) as db:
        assert seed_and_rank(db) == EXPECTED_RANKING
        with db.connect() as conn:
            assert conn.execute("SHOW statement_timeout").fetchone() == ("5min",)


def test_a_server_that_never_answers_is_given_up_at_the_connect_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_ragretrieval.database import servers

    monkeypatch.setattr(servers, "CONNECT_TIMEOUT", 2)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        dsn = f"postgresql://bob@127.0.0.1:{silent.getsockname()[1]}/db"
        with pytest.raises(DatabaseError, match=r"^cannot connect to postgresql://bob@127\.0\.0\.1:\d+/db within 2 s \(connect_timeout\): "):
            open_database(choose("url", dsn), dsn)
