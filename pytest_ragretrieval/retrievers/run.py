"""`type = "run"`: rankings read from a file another system wrote, so a retriever in any service or
language is gated by producing a file.

Two formats. TREC runs, `qid Q0 docno rank score tag` one per line, ordered as trec_eval orders
them: score descending, equal scores by docno descending (trec_eval ignores the rank column),
or by the rank column with `order = "rank"`. trec_eval holds a score in a C float, so scores
equal in single precision (20.000002 and 20.000001) tie as there. JSON Lines, `{"id": "q01", "ranking": ["c1", "c2"]}`,
in the order written. Every problem is an error naming `file:line`. A question the run does not
mention gets an empty ranking, so it scores 0 (trec_eval -c); the summary lists them.
"""
from __future__ import annotations

import json
import math
import re
import struct
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import ConfigError, RetrieverError
from ..core.values import listed, quoted
from ..files.jsontext import MAX_DIGITS, fits_float
from ..files.paths import absolute, display
from ..files.tables import Table
from .protocol import Context, Query, Setup

FORMATS = ("trec", "jsonl")
ORDERS = ("score", "rank")
EXTENSIONS = {".trec": "trec", ".txt": "trec", ".run": "trec", ".jsonl": "jsonl"}
MAX_LISTED = 10
_RANK = re.compile(r"[+-]?[0-9]+")
"""A rank as trec_eval reads one (`atol`): ASCII digits; jsontext.fits_float bounds it, as every reader does."""


def _cut(text: str) -> str:
    return text if len(text) <= 40 else f"{text[:30]}... ({len(text)} characters)"


def parse(table: Table) -> dict[str, Any]:
    path = table.text("path")
    fmt = table.text("format", None, choices=FORMATS)
    if fmt is None:
        fmt = EXTENSIONS.get(Path(path).suffix.lower())
        if fmt is None:
            raise table.error(
                "format", f"cannot tell the format of {path!r} from its extension; set format = \"trec\" or \"jsonl\""
            )
    params: dict[str, Any] = {"path": path, "format": fmt}
    order = table.text("order", None, choices=ORDERS)
    if order is not None and fmt != "trec":
        raise table.error("order", "applies to TREC runs only; a JSON Lines ranking is already in order")
    if fmt == "trec":
        params["order"] = order or "score"
    return params


def sources(params: Mapping[str, Any]) -> list[str]:
    return []


def inputs(params: Mapping[str, Any], root: Path) -> dict[str, Path]:
    """The run file, which the run reads: no output may replace it."""
    return {"path": absolute(root / params["path"])}


@dataclass(frozen=True)
class _Row:
    line: int
    docno: str
    rank: int
    score: float


def read_trec(path: Path, order: str, questions: Collection[str], chunks: Collection[str]) -> dict[str, list[str]]:
    """Rankings by question id; `order` is "score" (trec_eval's: score desc, then docno desc) or "rank"."""
    name = display(path)
    rows: dict[str, dict[str, _Row]] = {}
    for number, line in _lines(path):
        fields = line.split()
        where = f"{name}:{number}"
        if len(fields) != 6:
            raise RetrieverError(f"{where}: expected 6 fields 'qid Q0 docno rank score tag', got {len(fields)}")
        qid, _, docno, rank_text, score_text, _ = fields
        if not _RANK.fullmatch(rank_text) or len(rank_text) > MAX_DIGITS or not fits_float(rank := int(rank_text)):
            raise RetrieverError(f"{where}: rank {_cut(rank_text)!r} is not an integer a float holds (ASCII digits, "
                                 f"up to about 1.8e308)")
        try:
            score = float(score_text)
        except ValueError:
            raise RetrieverError(f"{where}: score {score_text!r} is not a number") from None
        if not math.isfinite(score):
            raise RetrieverError(f"{where}: score {score_text!r} is not finite")
        _check_ids(where, qid, [docno], questions, chunks)
        seen = rows.setdefault(qid, {})
        if docno in seen:
            raise RetrieverError(
                f"{where}: chunk {docno!r} appears twice for question {qid!r} (first on line {seen[docno].line})"
            )
        seen[docno] = _Row(number, docno, rank, score)
    rankings: dict[str, list[str]] = {}
    for qid, by_doc in rows.items():
        found = list(by_doc.values())
        if order == "rank":
            _check_ranks(name, qid, found)
            found.sort(key=lambda row: row.rank)
        else:
            # trec_eval (form_res_rels.c): score descending; equal scores by docno, descending strcmp.
            found.sort(key=lambda row: (single(row.score), row.docno), reverse=True)
        rankings[qid] = [row.docno for row in found]
    return rankings


def single(score: float) -> float:
    """`score` as trec_eval holds it: a C float (its `sim` field), beyond whose range it is infinite."""
    try:
        value: float = struct.unpack("f", struct.pack("f", score))[0]
    except OverflowError:
        return math.copysign(math.inf, score)
    return value


def read_jsonl(path: Path, questions: Collection[str], chunks: Collection[str]) -> dict[str, list[str]]:
    """`{"id": ..., "ranking": [...]}` per line; each ranking is used in the order written."""
    name = display(path)
    rankings: dict[str, list[str]] = {}
    lines: dict[str, int] = {}
    for number, line in _lines(path):
        where = f"{name}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise RetrieverError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(record, dict) or set(record) != {"id", "ranking"}:
            keys = sorted(record) if isinstance(record, dict) else type(record).__name__
            raise RetrieverError(f"{where}: expected an object with exactly the keys 'id' and 'ranking', got {keys}")
        qid, ranking = record["id"], record["ranking"]
        if not isinstance(qid, str) or not qid:
            raise RetrieverError(f"{where}: 'id' must be a non-empty string, got {qid!r}")
        if not isinstance(ranking, list) or not all(isinstance(item, str) and item for item in ranking):
            raise RetrieverError(f"{where}: 'ranking' must be a list of chunk ids (strings)")
        if qid in lines:
            raise RetrieverError(f"{where}: question {qid!r} appears twice (first on line {lines[qid]})")
        duplicate = next((item for i, item in enumerate(ranking) if item in ranking[:i]), None)
        if duplicate is not None:
            raise RetrieverError(f"{where}: chunk {duplicate!r} appears twice in the ranking of {qid!r}")
        _check_ids(where, qid, ranking, questions, chunks)
        lines[qid] = number
        rankings[qid] = list(ranking)
    return rankings


def read_run(
    path: Path, fmt: str, order: str | None, questions: Collection[str], chunks: Collection[str]
) -> dict[str, list[str]]:
    if not path.is_file():
        raise ConfigError(f"{display(path)}: run file not found (`path` is relative to the config file)")
    if fmt == "jsonl":
        return read_jsonl(path, questions, chunks)
    return read_trec(path, order or "score", questions, chunks)


def _lines(path: Path) -> list[tuple[int, str]]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise RetrieverError(f"{display(path)}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return [(number, line) for number, line in enumerate(text.splitlines(), start=1) if line.strip()]


def _check_ids(
    where: str, qid: str, docnos: Sequence[str], questions: Collection[str], chunks: Collection[str]
) -> None:
    if qid not in questions:
        raise RetrieverError(f"{where}: unknown question id {quoted(qid)}; a run must use the eval set's ids")
    unknown = next((docno for docno in docnos if docno not in chunks), None)
    if unknown is not None:
        raise RetrieverError(f"{where}: unknown chunk id {quoted(unknown)}; a run must use the chunks file's ids")


def _check_ranks(name: str, qid: str, rows: list[_Row]) -> None:
    by_rank: dict[int, _Row] = {}
    for row in rows:
        if row.rank in by_rank:
            raise RetrieverError(
                f"{name}:{row.line}: rank {row.rank} of question {qid!r} is also on line {by_rank[row.rank].line}; "
                "with order = \"rank\" every rank must be unique (or use the default order = \"score\")"
            )
        by_rank[row.rank] = row


class RunRetriever:
    """Serves the file's ranking by question id; questions the run lacks get [] and are listed."""

    def __init__(self, name: str, where: str, rankings: Mapping[str, Sequence[str]], total: int) -> None:
        self.name = name
        self.where = where
        self.rankings = rankings
        self.total = total
        self.missing: set[str] = set()

    def ask(self, query: Query, k: int) -> list[str]:
        ranking = self.rankings.get(query.id)
        if ranking is None:
            self.missing.add(query.id)
            return []
        return list(ranking[:k])

    def __call__(self, query: str, k: int) -> list[str]:
        raise RetrieverError(
            f"retriever {self.name!r} reads {self.where} by question id and cannot answer a query text; "
            "call it through a hybrid or rerank retriever, or from a factory with signature = \"question\" "
            "as source.ask(question, k)"
        )

    def notes(self) -> list[str]:
        """The questions the run did not mention, each scored as an empty ranking."""
        if not self.missing:
            return []
        missing = sorted(self.missing)
        return [
            f"{len(missing)} of {self.total} questions are not in {self.where} and got an empty ranking "
            f"(scored 0, as trec_eval -c does): {listed(missing, limit=MAX_LISTED)}"
        ]


def build(params: Mapping[str, Any], ctx: Context) -> RunRetriever:
    path = (ctx.root / params["path"]).resolve()
    questions = {query.id for query in ctx.questions}
    chunks = {chunk.id for chunk in ctx.chunks}
    rankings = read_run(path, params["format"], params.get("order"), questions, chunks)
    return RunRetriever(ctx.name, display(path), rankings, len(questions))


def fingerprint(params: Mapping[str, Any], setup: Setup) -> dict[str, Any]:
    """Path, format and order; not the file's content: a new run of the same system is what the gate judges."""
    return {}


def details(params: Mapping[str, Any]) -> dict[str, str]:
    return {}
