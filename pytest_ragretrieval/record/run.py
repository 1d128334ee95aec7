"""One retriever's raw run, `RetrieverRun`, and its one codec: the runner makes it, the reuse cache
(`runner/reuse.py`) and a shard's partial record (`shards/partial.py`) write it and read it back.

A run is what the retriever returned, before any metric: per question its ranking and latency, what
its type reported (diagnostics, notes), how deep it was asked (`depth`) and the digest of what it was
run under (a reuse entry's key, a shard's configuration). Written, it is the object
`{"questions": {id: {"ranking", "latency_ms"[, "metrics"]}}, "diagnostics", "notes"}` (a shard adds
each question's metric values, checked when merged). Read back, every value is checked where it is read
(`files/jsonshape.py`'s `Node`), within limits: a file of at most MAX_BYTES, JSON within `jsonshape`'s
(nesting, digits), rankings of distinct, printable ids no deeper than the depth, latencies of at least
0, recalls from 0 to 1. Every problem is one line naming the JSON path.
"""
from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from ..evalset.records import Question, Span
from ..files.jsonshape import Node
from ..files.jsontext import control_character, unstorable
from ..files.paths import Unreadable, read_input
from ..scoring.evaluate import Run, score
from ..scoring.metrics import MetricSpec

MAX_BYTES = 1 << 30
"""A written run larger than this (1 GiB) is refused unread: 20,000 questions 100 deep take about 60 MB."""
MAX_DEPTH = 10**6
"""The deepest ranking a run may hold, as the configuration's depth is bounded."""
SHARES = ("ann_recall", "ann_recall_worst", "pool_recall")
"""Diagnostics that are shares of a top k (the built-in types' recalls, `name@depth`): each in [0, 1]."""


class RetrieverRun(msgspec.Struct, frozen=True):
    """One retriever over a set of questions, by question id: its rankings (at most `depth` ids each) and
    latencies in ms; what its type reported; `under`, the digest of what decided the rankings ("" for a
    run not yet written); `values`, the metric values a shard recorded (empty elsewhere)."""

    depth: int
    rankings: Mapping[str, tuple[str, ...]]
    latency_ms: Mapping[str, float]
    diagnostics: Mapping[str, float] = {}
    notes: tuple[str, ...] = ()
    under: str = ""
    values: Mapping[str, Mapping[str, float]] = {}
    loads_ms: Mapping[str, float] = {}
    """One-time loads done before the first question, in ms (`runner/store.py`); a reused run loaded nothing."""


def scored(name: str, ran: RetrieverRun, questions: Sequence[Question], specs: Sequence[MetricSpec],
           spans: Mapping[str, Span] | None = None) -> Run:
    """The run of `ran` scored over `questions` (`spans`: the chunks' spans, for span metrics): how a live
    run, a reused one and a merged one are judged."""
    return Run(result=score(name, questions, ran.rankings, specs, ran.latency_ms, spans),
               diagnostics=dict(ran.diagnostics), notes=ran.notes, loads_ms=dict(ran.loads_ms))


def document(ran: RetrieverRun) -> dict[str, Any]:
    """`ran` as JSON values (its depth and key are its file's)."""
    return {
        "questions": {qid: {"ranking": list(ranking), "latency_ms": ran.latency_ms[qid],
                            **({"metrics": dict(ran.values[qid])} if qid in ran.values else {})}
                      for qid, ranking in ran.rankings.items()},
        "diagnostics": dict(ran.diagnostics), "notes": list(ran.notes),
        **({"loads_ms": dict(ran.loads_ms)} if ran.loads_ms else {}),
    }


def read_bytes(path: Path) -> bytes:
    """A written run's file, refused (Unreadable) unread when larger than MAX_BYTES."""
    limit = MAX_BYTES
    try:
        size = path.stat().st_size
    except OSError:
        size = 0  # read_input names what is wrong
    except ValueError:
        raise Unreadable("is not a valid path (it holds a NUL character)") from None
    if size > limit:
        raise Unreadable(f"holds {size:,} bytes, more than the {limit:,} a run may")
    return read_input(path)


def decode(node: Node, depth: int, under: str, questions: Collection[str] | None = None,
           scores: bool = False) -> RetrieverRun:
    """The run written at `node`, asked `depth` deep, of exactly `questions` when given (`scores`: each
    question holds its metric values); ShapeProblem naming the JSON path of the first problem."""
    node.exactly("questions", "diagnostics", "notes", optional=("loads_ms",))
    held = node["questions"].mapping()
    if questions is not None and set(held) != set(questions):
        odd = sorted(set(held) ^ set(questions))[0]
        raise node["questions"].problem(f"{'lacks' if odd in questions else 'holds'} question {odd!r}, "
                                        "unlike the file's questions")
    rankings, latencies, values = {}, {}, {}
    for qid in held:
        entry = node["questions"][qid]
        entry.exactly(*(("ranking", "metrics", "latency_ms") if scores else ("ranking", "latency_ms")))
        rankings[qid] = _ranking(entry["ranking"], depth)
        if scores:
            values[qid] = {label: entry["metrics"][label].number() for label in entry["metrics"].mapping()}
        latencies[qid] = _within(entry["latency_ms"], 0.0, None)
    diagnostics = {key: _within(node["diagnostics"][key], 0.0, 1.0) if key.partition("@")[0] in SHARES
                   else node["diagnostics"][key].number() for key in node["diagnostics"].mapping()}
    notes = tuple(item.text() for item in node["notes"].items())
    held_loads = node["loads_ms"].mapping() if "loads_ms" in node.mapping() else {}
    loads = {key: _within(node["loads_ms"][key], 0.0, None) for key in held_loads}
    return RetrieverRun(depth, rankings, latencies, diagnostics, notes, under, values, loads)


def distinct_ids(node: Node) -> tuple[str, ...]:
    """A list of distinct, non-empty chunk ids, id by id: the first problem named by its JSON path."""
    found: list[str] = []
    seen: set[str] = set()
    for item in node.items():
        text = item.text()
        if not text or text in seen:
            raise item.problem(f"repeats {text!r}" if text else "must not be empty")
        seen.add(text)
        found.append(text)
    return tuple(found)


def _ranking(node: Node, depth: int) -> tuple[str, ...]:
    """Distinct, non-empty, printable chunk ids, at most `depth` of them; checked as one text first (a
    reused run reads 500 of them), then id by id where that finds a problem, to name it."""
    ids = node.value
    if not _plain(ids):
        distinct_ids(node)
    if len(ids) > depth:
        raise node.problem(f"holds {len(ids)} ids, more than the depth {depth}")
    return tuple(ids)


def _plain(ids: Any) -> bool:
    """Whether `ids` is a list of distinct, non-empty strings without a control character, NUL or lone
    surrogate (a non-string fails the join)."""
    if type(ids) is not list:
        return False
    try:
        joined = " ".join(ids)
    except TypeError:
        return False
    distinct = set(ids)
    return len(distinct) == len(ids) and "" not in distinct and unstorable(joined) is None \
        and control_character(joined) is None


def _within(node: Node, low: float, high: float | None) -> float:
    """A finite number from `low` (to `high`): a latency below 0 or a recall of 7.5 is no measurement."""
    value = node.number()
    if value < low or (high is not None and value > high):
        span = f"from {low:g} to {high:g}" if high is not None else f"of at least {low:g}"
        raise node.problem(f"must be a number {span}, got {value!r}")
    return value
