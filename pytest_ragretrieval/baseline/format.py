"""The results/baseline JSON file: one versioned format, keys sorted, written atomically.

The baseline holds no timings and no timestamps, so recording the same inputs twice gives a
byte-identical file; `--rag-json` results add each retriever's latency and comparison.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import BaselineError
from ..paths import display
from ..scoring.evaluate import RetrieverResult

FORMAT_VERSION = 1
RERECORD = "run `pytest --rag-update-baseline` to record one"


@dataclass(frozen=True)
class RecordedQuestion:
    ranking: tuple[str, ...]
    metrics: Mapping[str, float] = field(hash=False)


@dataclass(frozen=True)
class Recorded:
    """One retriever's entry in a baseline or results file."""

    metrics: Mapping[str, float] = field(hash=False)
    questions: Mapping[str, RecordedQuestion] = field(hash=False)
    tags: Mapping[str, Mapping[str, float]] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class Baseline:
    path: Path
    k: int
    fingerprint: Mapping[str, Any] = field(hash=False)
    retrievers: Mapping[str, Recorded] = field(hash=False)
    document: Mapping[str, Any] = field(hash=False)
    unavailable: Mapping[str, str] = field(default_factory=dict, hash=False)


def retriever_entry(result: RetrieverResult) -> dict[str, Any]:
    """The reproducible part of a retriever's results, as the baseline stores it."""
    return {
        "metrics": dict(result.metrics),
        "tags": {tag: dict(values) for tag, values in result.tags.items()},
        "no_answer": {
            "questions": result.no_answer_total,
            "empty": result.no_answer_empty,
            "answerable_empty": result.answerable_empty,
        },
        "questions": {
            q.id: {"ranking": list(q.ranking), "metrics": dict(q.values)} for q in result.questions
        },
    }


def document(
    k: int,
    fingerprint: Mapping[str, Any],
    retrievers: Mapping[str, Mapping[str, Any]],
    unavailable: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """`unavailable` names retrievers that could not run where the baseline was recorded, and why."""
    doc: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "plugin_version": __version__,
        "k": k,
        "fingerprint": dict(fingerprint),
        "retrievers": dict(retrievers),
    }
    if unavailable:
        doc["unavailable"] = dict(unavailable)
    return doc


def dumps(doc: Mapping[str, Any]) -> str:
    """Sorted keys, two-space indent, real UTF-8 and a final newline: diffs well in review."""
    return json.dumps(doc, ensure_ascii=False, sort_keys=True, indent=2) + "\n"


def _fail(path: Path, problem: str) -> BaselineError:
    return BaselineError(
        f"{display(path)}: {problem}; fix it, or delete it and run `pytest --rag-update-baseline` to record a new one"
    )


def _numbers(path: Path, where: str, value: Any) -> dict[str, float]:
    if not isinstance(value, dict) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in value.values()
    ):
        raise _fail(path, f"{where} must map metric names to numbers")
    return {str(k): float(v) for k, v in value.items()}


def _recorded(path: Path, name: str, entry: Any) -> Recorded:
    where = f"retrievers.{name}"
    if not isinstance(entry, dict):
        raise _fail(path, f"{where} must be an object")
    metrics = _numbers(path, f"{where}.metrics", entry.get("metrics"))
    questions_raw = entry.get("questions", {})
    if not isinstance(questions_raw, dict):
        raise _fail(path, f"{where}.questions must be an object")
    questions = {}
    for qid, body in questions_raw.items():
        if not isinstance(body, dict):
            raise _fail(path, f"{where}.questions.{qid} must be an object")
        ranking = body.get("ranking", [])
        if not isinstance(ranking, list) or not all(isinstance(c, str) for c in ranking):
            raise _fail(path, f"{where}.questions.{qid}.ranking must be a list of chunk ids")
        questions[qid] = RecordedQuestion(
            ranking=tuple(ranking), metrics=_numbers(path, f"{where}.questions.{qid}.metrics", body.get("metrics", {}))
        )
    tags_raw = entry.get("tags", {})
    if not isinstance(tags_raw, dict):
        raise _fail(path, f"{where}.tags must be an object")
    tags = {tag: _numbers(path, f"{where}.tags.{tag}", values) for tag, values in tags_raw.items()}
    return Recorded(metrics=metrics, questions=questions, tags=tags)


def parse(path: Path, text: str) -> Baseline:
    """Validate a results document; every problem is one line naming the file."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _fail(path, f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    if not isinstance(doc, dict):
        raise _fail(path, "not a results document (expected a JSON object)")
    version = doc.get("format_version")
    if version != FORMAT_VERSION:
        raise _fail(path, f"format_version is {version!r}, this plugin reads format_version {FORMAT_VERSION}")
    fingerprint = doc.get("fingerprint")
    if not isinstance(fingerprint, dict):
        raise _fail(path, "fingerprint must be an object")
    retrievers = doc.get("retrievers")
    if not isinstance(retrievers, dict):
        raise _fail(path, "retrievers must be an object")
    k = doc.get("k")
    if isinstance(k, bool) or not isinstance(k, int):
        raise _fail(path, "k must be an integer")
    unavailable = doc.get("unavailable", {})
    if not isinstance(unavailable, dict) or not all(isinstance(v, str) for v in unavailable.values()):
        raise _fail(path, "unavailable must map retriever names to reasons")
    return Baseline(
        path=path,
        k=k,
        fingerprint=fingerprint,
        retrievers={name: _recorded(path, name, entry) for name, entry in retrievers.items()},
        document=doc,
        unavailable=unavailable,
    )


def read(path: Path) -> Baseline:
    """The results or baseline file at `path`; a missing file is an error."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BaselineError(f"{display(path)}: file not found") from None
    except UnicodeDecodeError:
        raise _fail(path, "not UTF-8 text") from None
    return parse(path, text)


def load(path: Path) -> Baseline | None:
    """The baseline at `path`, or None when there is none yet."""
    if not path.exists():
        return None
    return read(path)
