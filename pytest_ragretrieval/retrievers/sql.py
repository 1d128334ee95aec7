"""The team's own query, run as it is on their server: the production SQL is what is gated.

`query` is one SELECT (or WITH ... SELECT) whose first column is the chunk id, best first. The
config check reads its structure with a small tokenizer (`statement_problem`: quotes, dollar
quotes, comments and parentheses understood), not a pattern, and refuses anything else (COPY,
LOCK, ANALYZE, a data-modifying WITH at any depth, SELECT INTO, FOR UPDATE, the functions of
`FUNCTIONS` by name), before any server is asked; the server then runs it in a read-only session
of a role that may only read (database.team). It may use three bound parameters, named as psycopg
names them: `%(query)s` (the question's text), `%(embedding)s` (its vector from the configured
embedder, as a pgvector `vector`; embedded only when the query uses it) and `%(k)s` (how many ids
the run asks for). A literal `%` is written `%%`. It runs in a read-only transaction under the
retriever's `search_settings`, like the `table` type; `table`, `id_column` and `text_column` may name
the table its ids come from, for a run without a chunks file.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..core.errors import RetrieverError
from ..core.optional import need
from ..files.tables import Table
from .protocol import Context, Setup
from .table import ID_LENGTH, TeamRetriever, apply_settings, corpus_keys, search_settings, time_budget

PARAMETERS = ("query", "embedding", "k")
PLACEHOLDER = re.compile(r"%\((\w*)\)s|%(%|.?)")
_TOKEN = re.compile(
    r"(?P<space>\s+)|(?P<line>--[^\n]*)|(?P<block>/\*)|(?P<dollar>\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$)"
    r"|(?P<escape>[Ee]')|(?P<quote>')|(?P<unicode>[Uu]&\")|(?P<ident>\")|(?P<word>[A-Za-z_][A-Za-z0-9_$]*)"
    r"|(?P<mark>[(),;])|(?P<other>.)",
    re.DOTALL,
)
QUERIES = ("select", "values", "with", "table", "(")
"""How a query expression (a WITH clause's body) may start; anything else there modifies data."""
LOCKS = ("update", "share", "no", "key")
"""The word after FOR that makes it a locking clause (FOR UPDATE, FOR SHARE, FOR NO KEY UPDATE, FOR KEY SHARE)."""
MODIFIES = {"insert": ("into",), "delete": ("from",), "merge": ("into",), "update": None}
"""A data-modifying statement's first word, and the words that may follow it (None: a table's name): after
'(' it is a data-modifying WITH, at whatever depth (the server refuses all but the top level)."""
FUNCTIONS = ("lo_export", "lo_import", "pg_ls_dir", "pg_read_file", "pg_read_binary_file", "pg_stat_file",
             "pg_stat_reset", "pg_terminate_backend", "pg_cancel_backend",
             "query_to_xml", "query_to_xmlschema", "query_to_xml_and_xmlschema", "ts_stat", "dblink", "dblink_exec")
"""Functions a query may not call, by name (`pg_stat_reset` with every `pg_stat_reset_*`): those that read or
write the server's files, reset its statistics or end and cancel sessions, and those that run a query
given as text, which would hide the others from this check."""


def _skip_quoted(text: str, at: int, close: str, backslash: bool) -> int:
    """The position after the closing `close` of a literal that began before `at` (doubled `close` is one)."""
    while at < len(text):
        char = text[at]
        if backslash and char == "\\":
            at += 2
        elif char == close:
            if text[at + 1:at + 2] != close:
                return at + 1
            at += 2
        else:
            at += 1
    raise ValueError("holds an unterminated quoted string or identifier")


def _skip_comment(text: str, at: int) -> int:
    """The position after a /* comment */ that began before `at` (Postgres nests them)."""
    depth = 1
    while depth:
        opening, closing = text.find("/*", at), text.find("*/", at)
        if closing < 0:
            raise ValueError("holds an unterminated /* comment")
        if 0 <= opening < closing:
            depth, at = depth + 1, opening + 2
        else:
            depth, at = depth - 1, closing + 2
    return at


Token = tuple[str, int, int]
"""(what, parenthesis depth, where it ends in the text): `what` is a word in lower case, a quoted
identifier as `"` and its name, a mark `(`, `)`, `,` or `;`, or '' for a literal or an operator."""


def tokens(text: str) -> list[Token]:
    """The statement's tokens, comments skipped; ValueError for an unterminated literal or comment,
    or unbalanced parentheses."""
    found: list[Token] = []
    depth, at = 0, 0
    while at < len(text):
        match = _TOKEN.match(text, at)
        assert match is not None
        kind, at = match.lastgroup, match.end()
        what = ""
        if kind in ("space", "line"):
            continue
        if kind == "block":
            at = _skip_comment(text, at)
            continue
        if kind == "dollar":
            end = text.find(match.group(), at)
            if end < 0:
                raise ValueError(f"holds an unterminated dollar quote {match.group()}")
            at = end + len(match.group())
        elif kind == "unicode":
            raise ValueError('holds a U&"..." identifier; write names as they are, or in plain double quotes')
        elif kind in ("escape", "quote", "ident"):
            start = at
            at = _skip_quoted(text, at, "'" if kind != "ident" else '"', kind == "escape")
            what = '"' + text[start:at - 1].replace('""', '"') if kind == "ident" else ""
        elif kind == "word":
            what = match.group().lower()
        elif kind == "mark":
            what = match.group()
            depth -= what == ")"
            if depth < 0:
                raise ValueError("holds a ')' without its '('")
        found.append((what, depth, at))
        depth += what == "("
    if depth:
        raise ValueError("holds a '(' without its ')'")
    return found


def body(text: str) -> str:
    """The statement without what follows its last token but ';' (the semicolons, comments, spaces):
    what a subquery may hold."""
    ends = [end for what, _, end in tokens(text) if what != ";"]
    return text[: ends[-1]] if ends else text


def _closing(found: list[Token], at: int) -> int:
    """The index of the ')' closing the '(' at `at`."""
    depth = found[at][1]
    return next(i for i in range(at + 1, len(found)) if found[i][:2] == (")", depth))


def _with_clause(found: list[Token], at: int) -> int:
    """Check `WITH [RECURSIVE] name [(columns)] AS [NOT] [MATERIALIZED] (query), ...` from `at`
    (the word after WITH); the index of what follows the clause."""
    if at < len(found) and found[at][0] == "recursive":
        at += 1
    while True:
        at += 1  # the name
        if at < len(found) and found[at][0] == "(":
            at = _closing(found, at) + 1
        while at < len(found) and found[at][0] in ("as", "not", "materialized"):
            at += 1
        if at >= len(found) or found[at][0] != "(":
            raise ValueError("holds a WITH clause that is not `name AS (SELECT ...)`")
        end = _closing(found, at)
        body = found[at + 1:end]
        first = body[0][0] if body else ""
        if first not in QUERIES:
            raise ValueError(f"holds {first.upper() or 'nothing'} in its WITH clause; only a SELECT may be there")
        if first == "with":
            _with_clause(body, 1)
        at = end + 1
        if at < len(found) and found[at][0] in ("search", "cycle"):
            while at < len(found) and found[at][0] not in (",", "select", "("):
                at += 1  # SEARCH ... SET ..., CYCLE ... USING ...
        if at >= len(found) or found[at][0] != ",":
            return at
        at += 1


def _modifies(found: list[Token], at: int) -> bool:
    """Whether the word at `at` (INSERT, UPDATE, DELETE or MERGE) begins a statement: it is followed by
    the word that statement takes (INTO, FROM) or, for UPDATE, by a table's name, not by `)` or an operator."""
    wanted = MODIFIES[found[at][0]]
    after = found[at + 1][0] if at + 1 < len(found) else ""
    return after in wanted if wanted is not None else after not in ("", "(", ")", ",", ";")


def statement_problem(text: str) -> str | None:
    """Why `text` is not one SELECT (or WITH ... SELECT) that reads only (None: it is one)."""
    try:
        found = tokens(text)
        while found and found[-1][0] == ";":
            found.pop()
        if any(token[0] == ";" for token in found):
            return "must be one statement (a ';' ends it, and nothing may follow)"
        at = _with_clause(found, 1) if found and found[0][0] == "with" else 0
    except ValueError as exc:
        return str(exc)
    first = found[at][0] if at < len(found) else ""
    if first != "select":
        return f"must be one SELECT (or WITH ... SELECT), got {first.upper() or 'nothing'}"
    for index, (word, depth, _) in enumerate(found):
        after = found[index + 1][0] if index + 1 < len(found) else ""
        name = word[1:] if word.startswith('"') else word  # a quoted name is the name as written
        if after == "(" and (name in FUNCTIONS or name.startswith("pg_stat_reset_")):
            return (f"must not call {name}(): it reads or writes the server's files, resets its statistics, ends "
                    "or cancels sessions, or runs a query given as text; a query may only read the team's tables")
        if word == "(" and after in MODIFIES and _modifies(found, index + 1):
            return f"holds {after.upper()} inside parentheses; a WITH clause or subquery may only read"
        if word == "into" and depth == 0:
            return "must not hold SELECT ... INTO, which creates a table"
        if word == "for" and index + 1 < len(found) and found[index + 1][0] in LOCKS:
            return "must not hold FOR UPDATE or FOR SHARE, which lock rows"
    return None


def placeholders(text: str) -> set[str]:
    """The named parameters the query uses, or ValueError naming the first it cannot take."""
    used: set[str] = set()
    for match in PLACEHOLDER.finditer(text):
        name, other = match.group(1), match.group(2)
        if name is not None:
            if name not in PARAMETERS:
                raise ValueError(f"uses %({name})s; the parameters are %(query)s, %(embedding)s and %(k)s")
            used.add(name)
        elif other != "%":
            raise ValueError(f"holds a bare '%{other}'; write a literal % as %% and parameters as %(query)s")
    return used


def parse(table: Table) -> dict[str, Any]:
    text = table.text("query")
    try:
        used = placeholders(text)
    except ValueError as exc:
        raise table.error("query", str(exc)) from None
    problem = statement_problem(text)
    if problem is not None:
        raise table.error("query", problem)
    params = {"query": text, **corpus_keys(table, False), "engine": search_settings(table),
              "time_budget": time_budget(table)}
    params["embeds"] = "embedding" in used
    return params


class SqlRetriever(TeamRetriever):
    """Runs the team's query once per question, its parameters bound, and keeps the first column."""

    def __init__(self, params: Mapping[str, Any], ctx: Context) -> None:
        sql = need("psycopg.sql", f"retriever {ctx.name!r}")
        # Only the first column, as text cut to ID_LENGTH + 1 characters, and k rows, leave the server.
        self.statement = sql.SQL(
            "SELECT left(rag_found.rag_id::text, {}) FROM ({}\n) AS rag_found(rag_id) LIMIT %(k)s"
        ).format(sql.Literal(ID_LENGTH + 1), sql.SQL(body(params["query"])))
        self.embeds = bool(params["embeds"])
        super().__init__(ctx, params["engine"], params["time_budget"])

    def answer(self, conn: Any, query: str, vector: Any, k: int, limits: Mapping[str, str]) -> list[str]:
        bound = {"query": query, "k": k, **({"embedding": vector} if self.embeds else {})}
        with conn.cursor() as cursor:
            apply_settings(cursor, {**self.settings, **limits})
            cursor.execute(self.statement, bound)
            rows = [row[0] for row in cursor.fetchall()]
        conn.rollback()
        for number, chunk_id in enumerate(rows, start=1):
            if chunk_id is None:
                raise RetrieverError(f"retriever {self.ctx.name!r}: row {number} of the query's answer has NULL as "
                                     "its chunk id (the first column); every row must name a chunk")
            if len(chunk_id) > ID_LENGTH:
                raise RetrieverError(f"retriever {self.ctx.name!r}: row {number} of the query's answer has a chunk id "
                                     f"longer than {ID_LENGTH} characters, which no chunk has (it begins "
                                     f"{chunk_id[:40]!r})")
        return rows


def build(params: Mapping[str, Any], ctx: Context) -> SqlRetriever:
    return SqlRetriever(params, ctx)


def sources(params: Mapping[str, Any]) -> list[str]:
    return []


def fingerprint(params: Mapping[str, Any], setup: Setup) -> dict[str, Any]:
    """The engine that answers (and the embedder, when the query uses a vector); the table's indexes
    when `table` names it."""
    found: dict[str, Any] = {"engine": setup.engine(params["engine"], params.get("table"), None)}
    if params["embeds"]:
        found["embedding"] = setup.embedding()
    return found


def details(params: Mapping[str, Any]) -> dict[str, str]:
    return {"table": params["table"]} if "table" in params else {}
