"""The team's own server, read as it is (the `table` and `sql` retriever types).

Unlike `url` mode (database.handle), nothing here creates a schema, seeds a table or writes a
row: every session is read-only (`default_transaction_read_only`), runs under the plugin's
connect timeout, TCP keepalives, its server-side limits (statement, lock and idle-in-transaction
timeouts) and a client-side deadline on every read (database.session.deadline), and its role must
only read: one that is a superuser, holds a predefined server role or another login role, owns or may
write a table or a column, or may execute a server-file function or a privileged SECURITY DEFINER
function is refused (`connect`, `ROLE_SQL`), and one without limits of its own is warned about
(`unset_limits`); SELECT on the team's table and USAGE on its schema are all it needs. This
module reads the corpus from that table for a run without a chunks file, computes the corpus's
digest in the database, and reports the engine for the fingerprint.
"""
from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..core.errors import DatabaseError
from ..core.values import listed
from ..evalset.records import Chunk
from .dsn import redact, scrub
from .hints import URL_ENV
from .servers import open_connection
from .session import CHEAP, SESSION, TeamCorpus, condition, deadline, identifier, limits_note, setting_text

if TYPE_CHECKING:
    import psycopg

EXTENSIONS = ("vector", "vectorscale", "vchord")
"""The extensions whose versions shape a vector search's answers: pgvector, pgvectorscale, VectorChord."""


def need_dsn(dsn: str | None, what: str) -> str:
    if not dsn:
        raise DatabaseError(f"{what} reads the team's own table: pass --rag-db-url DSN or set {URL_ENV}")
    return dsn


def no_url() -> str:
    """Why a `table` or `sql` retriever is unavailable on a runner that has no database URL, and the fix."""
    return f"no database URL to read the team's table: set the secret {URL_ENV} or pass --rag-db-url DSN"


SERVER_ROLES = ("pg_execute_server_program", "pg_write_server_files", "pg_read_server_files", "pg_write_all_data",
                "pg_signal_backend")
"""Predefined roles that reach past the tables (run programs, read or write the server's files, end or
cancel other roles' sessions) or write every table; a role that holds one (or may SET ROLE to it) is refused."""
SERVER_FUNCTIONS = ("lo_export", "lo_import", "pg_ls_dir", "pg_read_file", "pg_read_binary_file", "pg_stat_file")
"""The functions of pg_catalog that read or write the server's files, and (`RESETS`) every `pg_stat_reset*`,
which resets its statistics: only a superuser may run them unless a DBA granted EXECUTE (PUBLIC has
none), and a role that may is refused."""
RESETS = "({0}.proname >= 'pg_stat_reset' AND {0}.proname < 'pg_stat_reseu')"
"""Every function name that begins with pg_stat_reset, as a range pg_proc's index on the name answers."""
SUPERUSER = "is a superuser"
"""The first reason of a superuser, and the only one named: every other follows from it."""
WRITES = "'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE'"
NOT_SYSTEM = "n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%%'"
RELATIONS = "c.relkind IN ('r', 'p', 'v', 'm', 'f')"


def _grantees(acl: str, privileges: str) -> str:
    """SQL for the grantees (PUBLIC, or a role the session's role belongs to) through which the role holds
    one of `privileges` in `acl`: whom the REVOKE names."""
    return (f"(SELECT string_agg(DISTINCT CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid("
            f"a.grantee)) END, ', ') FROM aclexplode({acl}) a WHERE a.privilege_type IN ({privileges}) "
            "AND (a.grantee = 0 OR pg_has_role(current_user, a.grantee, 'MEMBER')))")


def _could_write(role: str) -> str:
    """SQL true when `role` is a superuser, holds a SERVER_ROLES role, may run a SERVER_FUNCTIONS function,
    or owns or may write (a column of) a table outside the system schemas."""
    return f"""(EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolsuper AND pg_has_role({role}, r.oid, 'MEMBER'))
  OR EXISTS (SELECT 1 FROM unnest(%(roles)s::text[]) AS name WHERE pg_has_role({role}, to_regrole(name), 'MEMBER'))
  OR EXISTS (SELECT 1 FROM pg_proc f WHERE f.pronamespace = 'pg_catalog'::regnamespace
             AND (f.proname = ANY(%(functions)s) OR {RESETS.format("f")})
             AND has_function_privilege({role}, f.oid, 'EXECUTE'))
  OR EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE {RELATIONS} AND {NOT_SYSTEM}
             AND (pg_has_role({role}, c.relowner, 'MEMBER')
                  OR has_table_privilege({role}, c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE')
                  OR has_any_column_privilege({role}, c.oid, 'INSERT, UPDATE'))))"""


ROLE_SQL = f"""
WITH privileged AS MATERIALIZED (
  SELECT o.oid, o.rolname, o.rolsuper FROM pg_roles o
  WHERE o.oid IN (SELECT p.proowner FROM pg_proc p WHERE p.prosecdef AND has_function_privilege(p.oid, 'EXECUTE'))
    AND {_could_write("o.oid")})
SELECT current_user, ARRAY(SELECT reason FROM (
  SELECT 1, '{SUPERUSER}'
  WHERE EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolsuper AND pg_has_role(current_user, r.oid, 'MEMBER'))
  UNION ALL
  SELECT 2, 'is a member of ' || name || ' (REVOKE ' || name || ' FROM ' || coalesce((
           SELECT string_agg(DISTINCT quote_ident(pg_get_userbyid(m.member)), ', ') FROM pg_auth_members m
           WHERE m.roleid = to_regrole(name) AND pg_has_role(current_user, m.member, 'MEMBER')),
           quote_ident(current_user)) || ')'
  FROM unnest(%(roles)s::text[]) AS name
  WHERE pg_has_role(current_user, to_regrole(name), 'MEMBER')
  UNION ALL
  SELECT 2, 'is a member of role ' || quote_ident(r.rolname) || ', whose sessions it may cancel and terminate (REVOKE '
         || quote_ident(r.rolname) || ' FROM ' || coalesce((
           SELECT string_agg(DISTINCT quote_ident(pg_get_userbyid(m.member)), ', ') FROM pg_auth_members m
           WHERE m.roleid = r.oid AND pg_has_role(current_user, m.member, 'MEMBER')), quote_ident(current_user)) || ')'
  FROM pg_roles r
  WHERE r.rolcanlogin AND r.rolname <> current_user AND NOT r.rolsuper AND pg_has_role(current_user, r.oid, 'MEMBER')
  UNION ALL
  SELECT 3, CASE WHEN pg_has_role(current_user, c.relowner, 'MEMBER')
                 THEN 'owns ' || kind || c.oid::regclass::text || ' (ALTER ' || upper(kind) || c.oid::regclass::text
                      || ' OWNER TO a role the gate does not use)'
                 ELSE 'may write ' || kind || c.oid::regclass::text || ' (REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON '
                      || c.oid::regclass::text || ' FROM ' || coalesce({_grantees("c.relacl", WRITES)},
                      quote_ident(current_user)) || ')' END
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace,
       LATERAL (SELECT CASE c.relkind WHEN 'v' THEN 'view ' WHEN 'm' THEN 'materialized view '
                       WHEN 'f' THEN 'foreign table ' ELSE 'table ' END) AS k(kind)
  WHERE {RELATIONS} AND {NOT_SYSTEM}
    AND (pg_has_role(current_user, c.relowner, 'MEMBER')
         OR has_table_privilege(c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE'))
  UNION ALL
  SELECT 4, 'may write column ' || c.oid::regclass::text || '.' || quote_ident(a.attname) || ' (REVOKE '
         || (SELECT string_agg(DISTINCT g.privilege_type, ', ') FROM aclexplode(a.attacl) g
             WHERE g.privilege_type IN ('INSERT', 'UPDATE')
               AND (g.grantee = 0 OR pg_has_role(current_user, g.grantee, 'MEMBER')))
         || ' (' || quote_ident(a.attname) || ') ON ' || c.oid::regclass::text || ' FROM '
         || {_grantees("a.attacl", "'INSERT', 'UPDATE'")} || ')'
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attacl IS NOT NULL
  WHERE {RELATIONS} AND {NOT_SYSTEM} AND NOT has_table_privilege(c.oid, 'INSERT, UPDATE')
    AND {_grantees("a.attacl", "'INSERT', 'UPDATE'")} IS NOT NULL
  UNION ALL
  SELECT 5, 'may execute ' || p.oid::regprocedure::text || ' (REVOKE EXECUTE ON FUNCTION ' || p.oid::regprocedure::text
         || ' FROM ' || coalesce({_grantees("coalesce(p.proacl, acldefault('f', p.proowner))", "'EXECUTE'")},
                                 quote_ident(current_user)) || ')'
  FROM pg_proc p
  WHERE p.pronamespace = 'pg_catalog'::regnamespace AND (p.proname = ANY(%(functions)s) OR {RESETS.format("p")})
    AND has_function_privilege(p.oid, 'EXECUTE')
  UNION ALL
  SELECT 6, 'may execute SECURITY DEFINER function ' || p.oid::regprocedure::text || ' owned by '
         || CASE WHEN o.rolsuper THEN 'superuser ' ELSE 'role ' END || quote_ident(o.rolname)
         || ', which may do more than read (REVOKE EXECUTE ON FUNCTION ' || p.oid::regprocedure::text || ' FROM '
         || coalesce({_grantees("coalesce(p.proacl, acldefault('f', p.proowner))", "'EXECUTE'")},
                     quote_ident(current_user)) || ')'
  FROM pg_proc p JOIN privileged o ON o.oid = p.proowner
  WHERE p.prosecdef AND has_function_privilege(p.oid, 'EXECUTE')
) AS found(rank, reason) ORDER BY rank, reason)
"""
"""Who the session is, and every reason it may do more than read, each with the statement that takes it
away: a superuser (or a member of one); a predefined server role (SERVER_ROLES); another role that
logs in (Postgres lets a member cancel and terminate that role's sessions); a table, view or
materialized view (outside the system schemas) it owns or may write, or one of whose columns it may
write (INSERT or UPDATE granted on a column); EXECUTE on a function that reads or writes the server's
files or resets its statistics (SERVER_FUNCTIONS); and EXECUTE on a SECURITY DEFINER function whose
owner could do any of that (it runs with its owner's rights). Refused on any table, not only the one
read: whatever a query escapes to, the role must have nothing to write with."""
LIMITS_SQL = ("SELECT name, reset_val FROM pg_settings WHERE (name, reset_val) IN "
              "(('statement_timeout', '0'), ('temp_file_limit', '-1')) ORDER BY name")
"""The role's own limits the DBA left unset: `reset_val` is what the session started with (the role's,
the database's or the server's setting), whatever the plugin's sessions set since."""
ROLE_LIMITS = {"statement_timeout": "'5min'", "temp_file_limit": "'5GB'"}
"""The values a warning proposes for a role without its own limits."""


def session(dsn: str) -> psycopg.Connection:
    """A read-only session on the team's server under the plugin's limits (`SESSION`), pgvector's
    adapter registered when the type exists; its role is not checked (see `connect`)."""
    import psycopg
    from pgvector.psycopg import register_vector

    hint = f"check that the server is running and that the DSN from --rag-db-url or {URL_ENV} is right"
    conn = open_connection(dsn, hint)
    try:
        with deadline(conn, f"preparing a read-only session on {redact(dsn)}"):
            conn.execute(
                "SELECT set_config(name, value, false) FROM unnest(%s::text[], %s::text[]) AS s(name, value)",
                (["default_transaction_read_only", *SESSION], ["on", *SESSION.values()]),
            )
            if conn.execute("SELECT to_regtype('vector') IS NOT NULL").fetchone() == (True,):
                register_vector(conn)
            conn.commit()
    except (psycopg.Error, DatabaseError) as exc:
        conn.close()
        if isinstance(exc, DatabaseError):
            raise
        raise DatabaseError(f"cannot prepare a read-only session on {redact(dsn)}: {scrub(str(exc), dsn)}") from None
    return conn


def connect(dsn: str) -> psycopg.Connection:
    """`session`, once its role is found to read only (`ROLE_SQL`): one line naming the first reason it
    may do more, with the statement that takes it away, and how many more there are."""
    import psycopg

    conn = session(dsn)
    try:
        with deadline(conn, f"checking the role on {redact(dsn)}"):
            user, reasons = conn.execute(
                ROLE_SQL, {"roles": list(SERVER_ROLES), "functions": list(SERVER_FUNCTIONS)}).fetchone() or ("?", [])
            conn.rollback()
    except psycopg.Error as exc:
        conn.close()
        raise _failed("cannot check the session's role", dsn, exc) from None
    except DatabaseError:
        conn.close()
        raise
    if reasons:
        conn.close()
        more = f" (and {len(reasons) - 1} more such grants)" if len(reasons) > 1 and reasons[0] != SUPERUSER else ""
        raise DatabaseError(
            f"role {user!r} on {redact(dsn)} {reasons[0]}{more}: a table or sql retriever reads the team's server "
            "through a role that may only read (CREATE ROLE gate LOGIN; GRANT USAGE ON SCHEMA kb TO gate; GRANT "
            f"SELECT ON kb.docs TO gate;) so that no query can {GUARANTEE}"
        )
    return conn


GUARANTEE = "write, run programs, read the server's files or signal another role's sessions"
"""What the role check guarantees of any query (docs/database.md says what it does not: a role may
always signal its own role's sessions)."""


def unset_limits(conn: psycopg.Connection) -> str:
    """A warning naming the limits the DBA left unset for the session's role (`LIMITS_SQL`) and the lines
    that set them; "" when the role has both (or the catalog cannot be read)."""
    import psycopg

    try:
        names = [str(name) for name, _ in conn.execute(LIMITS_SQL).fetchall()]
        user = conn.execute("SELECT quote_ident(current_user)").fetchone()
        conn.rollback()
    except psycopg.Error:
        conn.rollback()
        return ""
    if not names or user is None:
        return ""
    why = {"statement_timeout": f"the plugin's sessions set statement_timeout = {SESSION['statement_timeout']}, "
                                "but the role's other sessions run unbounded",
           "temp_file_limit": "one runaway statement may fill the server's disk with temporary files (only a "
                              "superuser can bound them)"}
    fixes = " ".join(f"ALTER ROLE {user[0]} SET {name} = {ROLE_LIMITS[name]};" for name in names)
    return (f"role {user[0]} has no {' and no '.join(names)} of its own: {'; '.join(why[name] for name in names)}; "
            f"ask the DBA for {fixes}")


def where(conn: psycopg.Connection) -> str:
    """host:port/database of a connection (a socket's folder is not named: it differs between machines)."""
    host = conn.info.host
    if host and not host.startswith("/"):
        return f"{host}:{conn.info.port}/{conn.info.dbname}"
    return f"/{conn.info.dbname}"


def _failed(what: str, dsn: str, exc: Exception) -> DatabaseError:
    return DatabaseError(f"{what} on {redact(dsn)}: {scrub(str(exc), dsn)}{limits_note(exc)}")


def read_corpus(dsn: str, corpus: TeamCorpus) -> tuple[tuple[Chunk, ...], dict[str, Any]]:
    """The table's rows as chunks (ids as text, sorted by id), and the corpus's fingerprint record,
    its digest computed by the database: md5 over `id:md5(text)` in id order (byte order, so no
    collation decides it), or the row count and the largest value of a column (`count_and_max:`)."""
    import psycopg
    from psycopg import sql

    key, text = sql.Identifier(corpus.id_column), sql.Identifier(corpus.text_column)
    parts = {"id": key, "text": text, "table": identifier(corpus.table), "where": condition(corpus.where, bound=False)}
    rows_sql = sql.SQL(
        "SELECT {id}::text, coalesce({text}::text, '') FROM {table}{where} ORDER BY {id}::text COLLATE \"C\""
    ).format(**parts)
    if corpus.digest.startswith(CHEAP):
        digest_sql = sql.SQL("SELECT count(*), max({column})::text FROM {table}{where}").format(
            column=sql.Identifier(corpus.digest[len(CHEAP):]), **parts)
    else:
        digest_sql = sql.SQL(
            "SELECT count(*), md5(coalesce(string_agg({id}::text || ':' || md5(coalesce({text}::text, '')), ',' "
            "ORDER BY {id}::text COLLATE \"C\"), '')) FROM {table}{where}"
        ).format(**parts)
    try:
        with connect(dsn) as conn, deadline(conn, f"reading the chunks from {corpus.describe()}"):
            rows = conn.execute(rows_sql).fetchall()
            count, value = conn.execute(digest_sql).fetchone() or (0, None)
    except psycopg.Error as exc:
        raise _failed(f"cannot read the chunks from {corpus.describe()}", dsn, exc) from None
    chunks: list[Chunk] = []
    for chunk_id, body in rows:
        if chunk_id is None:
            raise DatabaseError(
                f"{corpus.describe()} holds a row whose {corpus.id_column} is NULL; every chunk needs an id"
            )
        if chunks and chunks[-1].id == chunk_id:
            raise DatabaseError(f"{corpus.describe()} holds id {chunk_id!r} twice; ids must be unique")
        chunks.append(Chunk(id=chunk_id, text=body))
    if not chunks:
        raise DatabaseError(f"{corpus.describe()} holds no rows; nothing to evaluate")
    digest = f"{corpus.digest}:{value}"
    source = corpus.describe()
    record = {
        "sha256": hashlib.sha256(f"{source}\n{count}\n{digest}".encode()).hexdigest(),
        "count": int(count),
        "table": source,
        "digest": digest,
    }
    return tuple(chunks), record


SEARCH_SETTINGS = r"^(hnsw|ivfflat|diskann|vchordrq|vchordg)\."
"""The search settings of pgvector, pgvectorscale and VectorChord, as pg_settings names them."""
SOURCES = {"default": "server default", "configuration file": "server configuration", "user": "role",
           "database": "database", "database user": "role in database", "override": "server default"}
"""Where a setting in effect came from (pg_settings.source), in the words a change is named with."""


def session_settings(conn: psycopg.Connection) -> dict[str, tuple[str, str]]:
    """Each search setting a session of the gate's role starts with, and where it came from (the role,
    the database, the server): what `ALTER ROLE/DATABASE ... SET hnsw.ef_search` changes. pgvector's
    settings exist once its library is loaded, so one vector is read first when the type exists."""
    if conn.execute("SELECT to_regtype('vector') IS NOT NULL").fetchone() == (True,):
        conn.execute("SELECT '[1]'::vector")
    rows = conn.execute(
        "SELECT name, setting, source FROM pg_settings WHERE name ~ %s ORDER BY name", (SEARCH_SETTINGS,)
    ).fetchall()
    conn.rollback()
    return {str(name): (str(value), SOURCES.get(str(source), str(source))) for name, value, source in rows}


def in_effect(found: Mapping[str, tuple[str, str]], pins: Mapping[str, Any]) -> tuple[dict[str, str], list[str]]:
    """The search settings the run measures, each as `value (where it came from)`: a `search_settings`
    pin over the session's own value; and a line for each pin the database's own value differs from."""
    session = {name: f"{value} ({source})" for name, (value, source) in found.items()}
    lines = []
    for name, pin in pins.items():
        session[name] = f"{setting_text(pin)} (search_settings)"
        if name in found and found[name][0] != setting_text(pin):
            value, source = found[name]
            lines.append(f"search_settings pins {name} = {setting_text(pin)}, but the database's own value is "
                         f"{value} (from the {source}); the run measures {setting_text(pin)}")
    return dict(sorted(session.items())), lines


def pinned_differences(conn: psycopg.Connection, pins: Mapping[str, Any]) -> list[str]:
    """`in_effect`'s lines for a session's connection; a catalog the role cannot read says nothing."""
    import psycopg

    try:
        return in_effect(session_settings(conn), pins)[1]
    except psycopg.Error:
        conn.rollback()
        return []


def corpus_difference(conn: psycopg.Connection, corpus: TeamCorpus, chunks: Sequence[Chunk], source: str) -> str:
    """How the team's table differs from the chunks file the run judges with (ids, and each text's
    md5 computed on both sides), as one note; "" when they hold the same chunks."""
    import psycopg
    from psycopg import sql

    statement = sql.SQL("SELECT {id}::text, md5(coalesce({text}::text, '')) FROM {table}{where}").format(
        id=sql.Identifier(corpus.id_column), text=sql.Identifier(corpus.text_column),
        table=identifier(corpus.table), where=condition(corpus.where, bound=False))
    try:
        rows = {str(key): str(digest) for key, digest in conn.execute(statement).fetchall()}
        conn.rollback()
    except psycopg.Error as exc:
        conn.rollback()
        why = exc.diag.message_primary or type(exc).__name__  # the server's words: no DSN in them
        return f"{corpus.describe()} not compared with {source}: {why}"
    texts = {chunk.id: hashlib.md5(chunk.text.encode("utf-8")).hexdigest() for chunk in chunks}
    groups = (("only in the file", sorted(set(texts) - set(rows))),
              ("only in the table", sorted(set(rows) - set(texts))),
              ("texts differ", sorted(cid for cid in set(texts) & set(rows) if texts[cid] != rows[cid])))
    parts = [f"{len(ids)} {label} ({listed(ids, limit=5)})" for label, ids in groups if ids]
    if not parts:
        return ""
    return (f"{corpus.describe()} differs from {source} ({len(rows):,} rows, {len(texts):,} chunks): "
            + ", ".join(parts) + "; the run judges the file's texts, the table answers")


def engine(conn: psycopg.Connection, table: str | None, column: str | None) -> dict[str, Any]:
    """The server's version, the vector extensions' versions, and the indexes of `table` (those on
    `column` when given) as the catalog reports them: method, definition, build options."""
    found: dict[str, Any] = {"server": conn.info.parameter_status("server_version") or "?"}
    for name, version in conn.execute(
        "SELECT extname, extversion FROM pg_extension WHERE extname = ANY(%s) ORDER BY extname", (list(EXTENSIONS),)
    ).fetchall():
        found[name] = version
    if table is not None:
        name = identifier(table).as_string(conn)
        rows = conn.execute(
            "SELECT i.relname, am.amname, pg_get_indexdef(i.oid), coalesce(i.reloptions, '{}') "
            "FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_am am ON am.oid = i.relam "
            "WHERE x.indrelid = %s::regclass AND (%s::text IS NULL OR EXISTS (SELECT 1 FROM pg_attribute a "
            "WHERE a.attrelid = x.indrelid AND a.attnum = ANY(x.indkey) AND a.attname = %s)) ORDER BY i.relname",
            (name, column, column),
        ).fetchall()
        found["indexes"] = {
            index: {"method": method, "definition": definition, "options": sorted(options)}
            for index, method, definition, options in rows
        }
    conn.rollback()
    return found


def engine_record(
    dsn: str | None, settings: Mapping[str, Any], table: str | None, column: str | None
) -> dict[str, Any]:
    """`engine` for the fingerprint, the settings beside it and the search settings in effect
    (`session`); a failure is recorded as the error, so the fingerprint differs from any recorded one
    and the item shows why."""
    import psycopg

    try:
        with connect(need_dsn(dsn, "a table or sql retriever")) as conn, deadline(conn, "reading the engine"):
            found = engine(conn, table, column)
            found["session"] = in_effect(session_settings(conn), settings)[0]
    except DatabaseError as exc:
        return {"error": str(exc), **settings}
    except psycopg.Error as exc:
        assert dsn is not None
        return {"error": str(_failed("cannot read the engine's catalog", dsn, exc)), **settings}
    return {**found, **settings}
