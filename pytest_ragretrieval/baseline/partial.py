"""The partial run record of one shard (`pytest --rag-shard I/N --rag-json FILE`), written and read back.

It holds what judging all questions at once needs and a shard alone cannot do: the configuration's
digest (partials of different configurations are refused), the shard, the question ids it ran, and
per retriever each question's ranking, metric values and latency, its diagnostics and notes; the
retrievers skipped (`unavailable`) or failed (`errors`); the fingerprint and the parts the runner
added to it (`setup`), so the merge computes the same fingerprint from the repository's config; and
the items selected (-k, -m), which decide the family of a significance run. Same inputs, same bytes
(timings aside): keys sorted, questions in the eval set's order.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__
from ..config.settings import Config
from ..core.errors import RagError
from ..evalset.shards import MAX_SHARDS, Shard
from ..files.jsonshape import Node, ShapeProblem, decode
from ..files.jsontext import JSONProblem
from ..files.paths import Unreadable, display, read_input
from ..scoring.evaluate import Run

PARTIAL_FORMAT = 1
KEYS = ("partial_format", "plugin_version", "shard", "configuration", "k", "depth", "metrics", "fingerprint",
        "setup", "selected", "questions", "retrievers", "unavailable", "errors", "described")
SHARES = ("ann_recall", "ann_recall_worst", "pool_recall")
"""Diagnostics that are shares of a top k (the built-in types' recalls, `name@depth`): each in [0, 1]."""
FIX = "pass the files `pytest --rag-shard I/N --rag-json FILE` wrote, unchanged"


class PartialError(RagError):
    """A partial record that cannot be merged; one line naming the file (and JSON path)."""


@dataclass(frozen=True)
class ShardRun:
    """One retriever on one shard: by question id, its ranking, metric values and latency."""

    rankings: Mapping[str, tuple[str, ...]] = field(hash=False)
    values: Mapping[str, Mapping[str, float]] = field(hash=False)
    latencies: Mapping[str, float] = field(hash=False)
    diagnostics: Mapping[str, float] = field(hash=False)
    notes: tuple[str, ...]


@dataclass(frozen=True)
class Partial:
    path: Path
    shard: Shard
    configuration: str
    k: int
    depth: int
    metrics: tuple[str, ...]
    fingerprint: Mapping[str, Any] = field(hash=False)
    setup: Mapping[str, Mapping[str, Any]] = field(hash=False)
    selected: tuple[str, ...]
    questions: tuple[str, ...]
    runs: Mapping[str, ShardRun] = field(hash=False)
    unavailable: Mapping[str, str] = field(hash=False)
    errors: Mapping[str, str] = field(hash=False)
    described: Mapping[str, str] = field(hash=False)


def configuration(fingerprint: Mapping[str, Any], metrics: Sequence[str], depth: int, selected: Sequence[str]) -> str:
    """The digest partials are matched by: what was measured (the fingerprint, the metrics, the depth of
    each ranking) and which items were selected."""
    parts = {"fingerprint": fingerprint, "metrics": list(metrics), "depth": depth, "selected": list(selected)}
    text = json.dumps(parts, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def partial_document(
    config: Config, shard: Shard, fingerprint: Mapping[str, Any], setup: Mapping[str, Mapping[str, Any]],
    selected: Sequence[str], questions: Sequence[str], runs: Mapping[str, Run], described: Mapping[str, str],
) -> dict[str, Any]:
    """The partial record of a shard's runs (`selected`: the items' node ids)."""
    metrics = [spec.label for spec in config.metrics]
    retrievers = {}
    for name, run in runs.items():
        if run.result is None:
            continue
        retrievers[name] = {
            "questions": {q.id: {"ranking": list(q.ranking), "metrics": dict(q.values), "latency_ms": q.latency_ms}
                          for q in run.result.questions},
            "diagnostics": dict(run.diagnostics), "notes": list(run.notes),
        }
    return {
        "partial_format": PARTIAL_FORMAT, "plugin_version": __version__,
        "shard": {"index": shard.index, "count": shard.count},
        "configuration": configuration(fingerprint, metrics, config.depth, selected),
        "k": config.k, "depth": config.depth, "metrics": metrics, "fingerprint": dict(fingerprint),
        "setup": {name: dict(parts) for name, parts in setup.items()}, "selected": list(selected),
        "questions": list(questions), "retrievers": retrievers,
        "unavailable": {name: run.skipped for name, run in runs.items() if run.skipped is not None},
        "errors": {name: str(run.error) for name, run in runs.items() if run.error is not None},
        "described": dict(described),
    }


def read_partial(path: Path) -> Partial:
    """The partial at `path`, every value checked; any problem is one line naming the file and JSON path."""
    try:
        doc = decode(read_input(path).decode("utf-8-sig"))
    except Unreadable as exc:
        raise PartialError(f"{display(path)}: {'file not found' if exc.missing else exc}; {FIX}") from None
    except (UnicodeDecodeError, JSONProblem) as exc:
        raise PartialError(f"{display(path)}: not a partial run record ({exc}); {FIX}") from None
    try:
        return _partial(path, Node(doc))
    except ShapeProblem as exc:
        raise PartialError(f"{display(path)}: {exc}; {FIX}") from None


def _partial(path: Path, root: Node) -> Partial:
    root.mapping()
    if root["partial_format"].absent:
        raise root.problem("is not a partial run record (no partial_format; a results or baseline file?)")
    root["partial_format"].integer(PARTIAL_FORMAT, PARTIAL_FORMAT)
    root.exactly(*KEYS)
    count = root["shard"].exactly("index", "count")["count"].integer(1, MAX_SHARDS)
    shard = Shard(root["shard"]["index"].integer(1, count), count)
    selected = tuple(item.text() for item in root["selected"].items())
    metrics = tuple(item.text() for item in root["metrics"].items())
    depth = root["depth"].integer(1, 10**6)
    fingerprint = root["fingerprint"].mapping()
    digest = root["configuration"].text()
    if digest != configuration(fingerprint, metrics, depth, selected):
        raise root["configuration"].problem("does not match the file's fingerprint, metrics, depth and items: "
                                            "the file was edited")
    questions = _ids(root["questions"])
    runs = {name: _shard_run(node, set(questions), depth) for name, node in _entries(root["retrievers"])}
    setup = {name: node.mapping() for name, node in _entries(root["setup"])}
    return Partial(
        path=path, shard=shard, configuration=digest, k=root["k"].integer(1, 10**6), depth=depth, metrics=metrics,
        fingerprint=fingerprint, setup=setup, selected=selected, questions=questions, runs=runs,
        unavailable=_texts(root["unavailable"]), errors=_texts(root["errors"]),
        described=_texts(root["described"].exactly("embedder", "database")),
    )


def _entries(node: Node) -> list[tuple[str, Node]]:
    return [(key, node[key]) for key in node.mapping()]


def _texts(node: Node) -> dict[str, str]:
    return {key: child.text() for key, child in _entries(node)}


def _ids(node: Node) -> tuple[str, ...]:
    found: list[str] = []
    seen: set[str] = set()
    for item in node.items():
        text = item.text()
        if not text or text in seen:
            raise item.problem(f"repeats {text!r}" if text else "must not be empty")
        seen.add(text)
        found.append(text)
    return tuple(found)


def _within(node: Node, low: float, high: float | None) -> float:
    """A finite number from `low` (to `high`): a latency below 0 or a recall of 7.5 is no measurement."""
    value = node.number()
    if value < low or (high is not None and value > high):
        span = f"from {low:g} to {high:g}" if high is not None else f"of at least {low:g}"
        raise node.problem(f"must be a number {span}, got {value!r}")
    return value


def _shard_run(node: Node, questions: set[str], depth: int) -> ShardRun:
    node.exactly("questions", "diagnostics", "notes")
    held = node["questions"].mapping()
    if set(held) != questions:
        odd = sorted(set(held) ^ questions)[0]
        raise node["questions"].problem(f"{'lacks' if odd in questions else 'holds'} question {odd!r}, "
                                        "unlike the file's questions")
    rankings, values, latencies = {}, {}, {}
    for qid in held:
        entry = node["questions"][qid].exactly("ranking", "metrics", "latency_ms")
        rankings[qid] = _ids(entry["ranking"])
        if len(rankings[qid]) > depth:
            raise entry["ranking"].problem(f"holds {len(rankings[qid])} ids, more than the depth {depth}")
        values[qid] = {label: child.number() for label, child in _entries(entry["metrics"])}
        latencies[qid] = _within(entry["latency_ms"], 0.0, None)
    diagnostics = {key: _within(child, 0.0, 1.0) if key.partition("@")[0] in SHARES else child.number()
                   for key, child in _entries(node["diagnostics"])}
    notes = tuple(item.text() for item in node["notes"].items())
    return ShardRun(rankings, values, latencies, diagnostics, notes)
