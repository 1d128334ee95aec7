"""The team's own query, run as it is on their server: the production SQL is what is gated.

`query` is one SELECT whose first column is the chunk id, best first. It may use three bound
parameters, named as psycopg names them: `%(query)s` (the question's text), `%(embedding)s` (its
vector from the configured embedder, as a pgvector `vector`; embedded only when the query uses it)
and `%(k)s` (how many ids the run asks for). A literal `%` is written `%%`. It runs in a read-only
transaction under the retriever's `search_settings`, like the `table` type; `table`, `id_column`
and `text_column` may name the table its ids come from, for a run without a chunks file.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..core.optional import need
from ..files.tables import Table
from .protocol import Context, Setup
from .table import TeamRetriever, apply_settings, corpus_keys, search_settings

PARAMETERS = ("query", "embedding", "k")
PLACEHOLDER = re.compile(r"%\((\w*)\)s|%(%|.?)")


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
    if ";" in text.strip().rstrip(";"):
        raise table.error("query", "must be one statement (no ';' inside)")
    params = {"query": text, **corpus_keys(table, False), "engine": search_settings(table)}
    params["embeds"] = "embedding" in used
    return params


class SqlRetriever(TeamRetriever):
    """Runs the team's query once per question, its parameters bound, and keeps the first column."""

    def __init__(self, params: Mapping[str, Any], ctx: Context) -> None:
        sql = need("psycopg.sql", f"retriever {ctx.name!r}")
        self.statement = sql.SQL(params["query"].strip().rstrip(";"))
        self.embeds = bool(params["embeds"])
        super().__init__(ctx, params["engine"])

    def answer(self, conn: Any, query: str, vector: Any, k: int) -> list[str]:
        bound = {"query": query, "k": k, **({"embedding": vector} if self.embeds else {})}
        with conn.cursor() as cursor:
            apply_settings(cursor, self.settings)
            cursor.execute(self.statement, bound)
            rows = [str(row[0]) for row in cursor.fetchmany(k)]
        conn.rollback()
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
