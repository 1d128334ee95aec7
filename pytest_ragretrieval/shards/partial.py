"""The partial run record of one shard (`pytest --rag-shard I/N --rag-json FILE`), written and read back.

It holds what judging all questions at once needs and a shard alone cannot do: the configuration's
digest (partials of different configurations are refused), the shard, the question ids it ran, and
per retriever its run (`RetrieverRun`, through record/run.py's codec: each question's ranking, metric
values and latency, its diagnostics and notes); the
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
from ..files.jsonshape import Node, ShapeProblem, decode
from ..files.jsontext import JSONProblem
from ..files.paths import Unreadable, display
from ..record import run as codec
from ..record.run import MAX_DEPTH, RetrieverRun, distinct_ids
from ..scoring.evaluate import Run
from .assignment import MAX_SHARDS, Shard

PARTIAL_FORMAT = 1
KEYS = ("partial_format", "plugin_version", "shard", "configuration", "k", "depth", "metrics", "fingerprint",
        "setup", "selected", "questions", "retrievers", "unavailable", "errors", "described")
FIX = "pass the files `pytest --rag-shard I/N --rag-json FILE` wrote, unchanged"


class PartialError(RagError):
    """A partial record that cannot be merged; one line naming the file (and JSON path)."""


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
    runs: Mapping[str, RetrieverRun] = field(hash=False)
    """Each retriever's run on the shard's questions (`values`: the metric values the shard scored)."""
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
    digest = configuration(fingerprint, metrics, config.depth, selected)
    for name, run in runs.items():
        if run.result is None:
            continue
        asked = run.result.questions
        retrievers[name] = codec.document(RetrieverRun(
            config.depth, {q.id: q.ranking for q in asked}, {q.id: q.latency_ms for q in asked}, run.diagnostics,
            run.notes, digest, {q.id: q.values for q in asked}, run.loads_ms))
    return {
        "partial_format": PARTIAL_FORMAT, "plugin_version": __version__,
        "shard": {"index": shard.index, "count": shard.count},
        "configuration": digest,
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
        doc = decode(codec.read_bytes(path).decode("utf-8-sig"))
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
    depth = root["depth"].integer(1, MAX_DEPTH)
    fingerprint = root["fingerprint"].mapping()
    digest = root["configuration"].text()
    if digest != configuration(fingerprint, metrics, depth, selected):
        raise root["configuration"].problem("does not match the file's fingerprint, metrics, depth and items: "
                                            "the file was edited")
    questions = distinct_ids(root["questions"])
    runs = {name: codec.decode(node, depth, digest, questions, scores=True)
            for name, node in _entries(root["retrievers"])}
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


