"""The team's own pgvector table, read as it is: nothing seeded, nothing created, nothing written.

The retriever connects to the server named by `--rag-db-url` / `RAG_EVAL_DATABASE_URL` through
a read-only session (`ctx.team_connection()`), embeds each query with the configured embedder
and asks the named table for its nearest rows with the configured operator, in the index-friendly
form (`ORDER BY emb <=> q LIMIT k`), so the team's own index answers, under the retriever's
`search_settings` (set with SET LOCAL in every transaction). Rows come back ordered by (distance,
id), as the seeded `vector` retriever orders them. With `exact_check = N`, N sampled questions are
also answered by an exact scan of the same rows (index scans off in that transaction), and the
index's recall against it is reported (`ann_recall@k`), as the seeded mode does.

The keys that name the corpus (`table`, `id_column`, `text_column`, `where`, `digest`) are shared
with the `sql` type (`corpus_keys`): when the config has no `chunks` file, the run reads the
chunks (ids and texts) from that table and the corpus's fingerprint is computed there.
"""
from __future__ import annotations

import hashlib
import math
import queue
import re
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from ..core.errors import DatabaseError, RetrieverError
from ..core.optional import need
from ..core.redact import one_line
from ..database.session import CHEAP, TeamCorpus, condition, deadline, identifier, limits_note, setting_text, shut
from ..evalset.records import Question
from ..files.tables import Table, shown
from ..scoring.metrics import ann_overlap
from .protocol import Context, Query, Setup
from .vector import ANN_DIAGNOSTICS

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

OPERATORS = {"cosine": "<=>", "l2": "<->", "ip": "<#>"}
"""pgvector's distance operators by the name the config gives them; smaller is nearer for each."""
SETTING = re.compile(r"(hnsw|ivfflat|diskann|vchordrq|vchordg)\.[a-z_][a-z0-9_]*")
"""The search settings a run may apply: those of pgvector (hnsw, ivfflat), pgvectorscale (diskann)
and VectorChord (vchordrq, vchordg), as `extension.name`."""
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
"""A table, schema or column name as the config may give it (quoted in every statement)."""
DIGESTS = ("md5",)
"""`digest = "md5"` (the default): md5 over every row's id and md5(text), computed in the database;
or `"count_and_max:COLUMN"`: the row count and the largest value of COLUMN (an `updated_at`)."""
ID_LENGTH = 1000
"""The longest chunk id read from the team's server: a longer one is cut there, so a query that
returns a huge value (`id || repeat('x', 100000000)`) costs neither the memory nor the output."""


def _name(table: Table, key: str, value: str, parts: int) -> str:
    pieces = value.split(".")
    if len(pieces) > parts or not all(NAME.fullmatch(piece) for piece in pieces):
        form = "schema.table or table" if parts == 2 else "a column name"
        raise table.error(key, f"must be {form} (letters, digits, '_', '$'), got {shown(value)}")
    return value


TIME_BUDGET = 1800.0
"""Seconds a `table` or `sql` retriever may spend on the team's server in one run (`time_budget`): past
them its statement is cancelled and it stops, whatever the number of questions."""
STATEMENT_MS = 300_000
"""The sessions' statement_timeout (database.session.SESSION), in ms: a budget with less left sets less."""


def time_budget(table: Table) -> float:
    """`time_budget = 1800`: the retriever's seconds on the team's server in one run, 1 s to a day."""
    return table.number("time_budget", TIME_BUDGET, minimum=1.0, maximum=86400.0)


def corpus_keys(table: Table, required: bool) -> dict[str, Any]:
    """The keys naming the team's table and how its rows are read; `required`: `table` must be given."""
    name = table.text("table") if required else table.text("table", None)
    if name is None:
        for key in ("id_column", "text_column", "where", "digest"):
            if table.has(key):
                raise table.error(key, 'names a column or rows of `table`, which is not given; add table = "NAME"')
        return {}
    found: dict[str, Any] = {
        "table": _name(table, "table", name, 2),
        "id_column": _name(table, "id_column", table.text("id_column", "id"), 1),
        "text_column": _name(table, "text_column", table.text("text_column", "text"), 1),
        "where": table.text("where", None),
        "digest": table.text("digest", "md5"),
    }
    digest = found["digest"]
    if digest not in DIGESTS and not (digest.startswith(CHEAP) and NAME.fullmatch(digest[len(CHEAP):])):
        wanted = 'must be "md5" or "count_and_max:COLUMN" (an updated_at, say)'
        raise table.error("digest", f"{wanted}, got {shown(digest)}")
    if found["where"] is not None and (";" in found["where"] or not found["where"].strip()):
        raise table.error("where", "must be one SQL condition without ';', such as \"tenant = 'acme'\"")
    return found


def corpus_of(params: Mapping[str, Any]) -> TeamCorpus | None:
    """The team table a `table` or `sql` retriever names, None when it names none."""
    if "table" not in params:
        return None
    return TeamCorpus(params["table"], params["id_column"], params["text_column"], params["where"], params["digest"])


def search_settings(table: Table) -> dict[str, Any]:
    """`search_settings = { "hnsw.ef_search" = 100 }` (quoted or dotted keys): names checked, values
    numbers, booleans or strings."""
    value = table.raw("search_settings", {})
    if not isinstance(value, dict):
        raise table.error(
            "search_settings", f'must be a table such as {{ "hnsw.ef_search" = 100 }}, got {shown(value)}'
        )
    # Unquoted, `hnsw.ef_search = 100` is a dotted key, which TOML reads as {"hnsw": {"ef_search": 100}}.
    value = {
        f"{key}.{name}" if isinstance(setting, dict) else key: inner
        for key, setting in value.items()
        for name, inner in (setting.items() if isinstance(setting, dict) else [("", setting)])
    }
    for key, setting in value.items():
        if not SETTING.fullmatch(key):
            raise table.error(
                f"search_settings.{key}",
                "is not a search setting; use hnsw.*, ivfflat.*, diskann.*, vchordrq.* or vchordg.* "
                "(hnsw.ef_search, say)",
            )
        if not isinstance(setting, (bool, int, float, str)):
            problem = f"must be a number, a boolean or a string, got {shown(setting)}"
            raise table.error(f"search_settings.{key}", problem)
    return dict(sorted(value.items()))


def parse(table: Table) -> dict[str, Any]:
    params = corpus_keys(table, True)
    params["embedding_column"] = _name(table, "embedding_column", table.text("embedding_column", "embedding"), 1)
    params["operator"] = table.text("operator", "cosine", choices=OPERATORS)
    params["engine"] = search_settings(table)
    params["exact_check"] = table.integer("exact_check", 0, minimum=0)
    params["time_budget"] = time_budget(table)
    return params


def apply_settings(cursor: Any, settings: Mapping[str, Any]) -> None:
    """The search settings for this transaction only (SET LOCAL), in one statement."""
    if settings:
        names = list(settings)
        cursor.execute(
            "SELECT set_config(name, value, true) FROM unnest(%s::text[], %s::text[]) AS s(name, value)",
            (names, [setting_text(settings[name]) for name in names]),
        )


def search_sql(params: Mapping[str, Any]) -> Any:
    """The nearest rows in the form the table's index answers: ORDER BY the distance expression, LIMIT k."""
    sql = need("psycopg.sql", "the table retriever")
    distance = sql.SQL("{column} {op} %(q)s").format(
        column=sql.Identifier(params["embedding_column"]), op=sql.SQL(OPERATORS[params["operator"]])
    )
    return sql.SQL("SELECT {id}::text, {distance} FROM {table}{where} ORDER BY {distance} LIMIT %(k)s").format(
        id=sql.Identifier(params["id_column"]), distance=distance, table=identifier(params["table"]),
        where=condition(params["where"], bound=True),
    )


EXACT = {"enable_indexscan": "off", "enable_bitmapscan": "off", "enable_indexonlyscan": "off"}
"""What turns the index off for one transaction: the same statement is then an exact scan."""


def sampled(questions: Sequence[Query], count: int) -> set[str]:
    """The query texts of `count` questions, chosen by the sha256 of their ids: the same sample on
    every run over the same questions, spread over the eval set whatever its order."""
    chosen = sorted(questions, key=lambda question: hashlib.sha256(question.id.encode("utf-8")).hexdigest())
    return {question.query for question in chosen[:count]}


class TeamRetriever(ABC):
    """What the `table` and `sql` types share: read-only connections to the team's server (up to
    `workers` at once, as the seeded `vector` retriever uses), the search settings, the queries
    embedded through the cache, all at once, when the type needs their vectors, and the run's
    deadline: `budget` seconds from its first statement, each statement's statement_timeout cut to
    what is left; the first statement cancelled (a limit, the budget or the client-side deadline)
    stops the retriever for the run, every later question answered with the same line at once."""

    embeds = True

    def __init__(self, ctx: Context, settings: Mapping[str, Any], budget: float) -> None:
        self.ctx = ctx
        self.settings = settings
        self.budget = budget
        self.began: float | None = None
        """When the retriever's first statement began (time.monotonic)."""
        self.answered = 0
        self.stopped: str | None = None
        """The line every question gets once the retriever stopped for the run."""
        self._lock = threading.Lock()
        self.conn = ctx.team_connection()
        self.pool: list[Any] = []

    @abstractmethod
    def answer(self, conn: Any, query: str, vector: Any, k: int, limits: Mapping[str, str]) -> list[str]:
        """One query's ranking, on `conn` (a connection no other thread uses meanwhile); `limits` are
        set for its transaction with the search settings (`apply_settings`)."""

    def _vectors(self, queries: Sequence[str]) -> NDArray[np.float32] | list[None]:
        return self.ctx.embed(list(queries)) if self.embeds else [None] * len(queries)

    def preload(self, queries: Sequence[Query], batched: bool) -> Mapping[str, float]:
        """The embedder's model, loaded before the first question is timed when the type embeds and a query
        is not cached; a warm run, or a query without a vector, loads nothing."""
        return self.ctx.load_embedder([query.query for query in queries]) if self.embeds else {}

    def _stop(self, why: str) -> RetrieverError:
        """Stop the retriever for the run: `why` and what it leaves unasked, as the one line it fails with."""
        with self._lock:
            if self.stopped is None:
                total = len(self.ctx.questions)
                left = max(0, total - self.answered)
                self.stopped = (f"retriever {self.ctx.name!r}: {why}; it stops for this run, its {left} remaining "
                                f"question{'s' if left != 1 else ''} of {total} unavailable")
            return RetrieverError(self.stopped)

    def _limits(self) -> tuple[dict[str, str], bool]:
        """The statement's statement_timeout when the budget has less left than the session's, and whether
        the budget set it; a spent budget stops the retriever."""
        if self.stopped is not None:
            raise RetrieverError(self.stopped)
        now = time.monotonic()
        with self._lock:
            self.began = now if self.began is None else self.began
            left = self.budget - (now - self.began)
        if left <= 0:
            raise self._stop(self._spent())
        if left * 1000.0 >= STATEMENT_MS:
            return {}, False
        return {"statement_timeout": f"{max(1, math.floor(left * 1000.0))}ms"}, True

    def _spent(self) -> str:
        return (f"its time_budget of {self.budget:g} s on the team's server ran out (raise time_budget in "
                f"[tool.ragretrieval.retrievers.{self.ctx.name}] or make the query faster)")

    def _asked(self, conn: Any, query: str, vector: Any, k: int) -> list[str]:
        """`answer` within the client-side deadline and the run's budget; the server's error one line,
        naming the session's limit that ended the statement. A cancelled statement stops the retriever."""
        psycopg = need("psycopg", f"retriever {self.ctx.name!r}")
        where = f"retriever {self.ctx.name!r}"
        limits, budgeted = self._limits()
        try:
            with deadline(conn, where):
                found = self.answer(conn, query, vector, k, limits)
        except psycopg.errors.QueryCanceled as exc:
            with suppress(Exception):
                conn.rollback()
            if budgeted:
                raise self._stop(self._spent()) from None
            said = one_line(getattr(exc.diag, "message_primary", None) or str(exc))
            raise self._stop(f"the team's server answered: {said}{limits_note(exc)}") from None
        except psycopg.Error as exc:
            with suppress(Exception):
                conn.rollback()
            said = getattr(exc.diag, "message_primary", None) or str(exc)  # without the statement's LINE 1: ...
            answered = f"{one_line(said)}{limits_note(exc)}"
            raise RetrieverError(f"{where}: the team's server answered: {answered}") from None
        except DatabaseError as exc:  # the client-side deadline cut the connection
            raise self._stop(str(exc).removeprefix(f"{where}: ")) from None
        with self._lock:
            self.answered += 1
        return found

    def __call__(self, query: str, k: int) -> list[str]:
        if self.stopped is not None:
            raise RetrieverError(self.stopped)
        return self._asked(self.conn, query, self._vectors([query])[0], k)

    def search_many(
        self, queries: Sequence[str], k: int, tick: Callable[[int], None]
    ) -> list[tuple[Sequence[str], float]]:
        """Every query's ranking and latency: its search, plus its share of the embedding call."""
        if self.stopped is not None:
            raise RetrieverError(self.stopped)
        started = time.perf_counter()
        vectors = self._vectors(queries)
        share = (time.perf_counter() - started) * 1000.0 / max(1, len(queries))
        while len(self.pool) < self.ctx.workers - 1:
            self.pool.append(self.ctx.team_connection())
        idle: queue.SimpleQueue[Any] = queue.SimpleQueue()
        for conn in [self.conn, *self.pool]:
            idle.put(conn)

        def search(position: int) -> tuple[int, list[str], float]:
            conn = idle.get()
            try:
                began = time.perf_counter()
                ranking = self._asked(conn, queries[position], vectors[position], k)
                return position, ranking, (time.perf_counter() - began) * 1000.0
            finally:
                idle.put(conn)

        found: list[tuple[Sequence[str], float]] = [((), 0.0)] * len(queries)
        pool = ThreadPoolExecutor(1 + len(self.pool), thread_name_prefix="rag-team")
        try:
            for future in as_completed([pool.submit(search, i) for i in range(len(queries))]):
                position, ranking, took = future.result()
                found[position] = (ranking, took + share)
                tick(1)
        except BaseException:
            for conn in [self.conn, *self.pool]:  # Ctrl-C, SIGTERM or a failed query: no thread waits on
                shut(conn)                        # a server that may never answer
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return found

    def close(self) -> None:
        for conn in [self.conn, *self.pool]:
            conn.close()


class TableRetriever(TeamRetriever):
    """Asks the team's table for the nearest rows to each query's vector."""

    def __init__(self, params: Mapping[str, Any], ctx: Context) -> None:
        need("pgvector.psycopg", f"retriever {ctx.name!r}")
        self.statement = search_sql(params)
        self.checked = sampled(ctx.questions, params["exact_check"])
        self.overlaps: dict[int, list[float]] = {}
        super().__init__(ctx, params["engine"], params["time_budget"])

    def _rows(self, conn: Any, vector: Any, k: int, exact: bool, limits: Mapping[str, str]) -> list[tuple[str, float]]:
        with conn.cursor() as cursor:
            apply_settings(cursor, {**self.settings, **(EXACT if exact else {}), **limits})
            cursor.execute(self.statement, {"q": vector, "k": k})
            rows = [(str(chunk_id), float(distance)) for chunk_id, distance in cursor.fetchall()]
        conn.rollback()
        rows.sort(key=lambda row: (row[1], row[0]))
        return rows

    def answer(self, conn: Any, query: str, vector: Any, k: int, limits: Mapping[str, str]) -> list[str]:
        found = self._rows(conn, vector, k, False, limits)
        if query in self.checked:
            exact = self._rows(conn, vector, k, True, limits)
            if exact:
                self.overlaps.setdefault(k, []).append(ann_overlap(found, exact, self.ctx.ann_tie_epsilon))
        return [chunk_id for chunk_id, _ in found]

    def diagnostics(self, questions: Sequence[Question]) -> dict[str, float]:
        """The index's recall against an exact scan of the same rows, over the sampled questions."""
        return {
            f"{name}@{k}": round(function(sorted(values)), 6)
            for k, values in sorted(self.overlaps.items())
            for name, function in ANN_DIAGNOSTICS.items()
        }



def build(params: Mapping[str, Any], ctx: Context) -> TableRetriever:
    return TableRetriever(params, ctx)


def sources(params: Mapping[str, Any]) -> list[str]:
    return []


def fingerprint(params: Mapping[str, Any], setup: Setup) -> dict[str, Any]:
    """The embedder, and the engine that answers: server, extensions, the embedding column's
    indexes as the catalog reports them, and the search settings applied."""
    return {
        "embedding": setup.embedding(),
        "engine": setup.engine(params["engine"], params["table"], params["embedding_column"]),
    }


def details(params: Mapping[str, Any]) -> dict[str, str]:
    return {"table": params["table"]}
