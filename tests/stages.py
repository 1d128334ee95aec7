"""Building blocks for the unit tests of the judge, the report builder and the update plan."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from msgspec import UNSET, structs

from pytest_ragretrieval import __version__
from pytest_ragretrieval.baseline.fingerprint import questions_record
from pytest_ragretrieval.baseline.format import Baseline, dumps, parse, retriever_record
from pytest_ragretrieval.config.settings import Config, load_config
from pytest_ragretrieval.evalset.jsonl import GRADING_VERSION
from pytest_ragretrieval.evalset.records import Question
from pytest_ragretrieval.record.codec import to_document
from pytest_ragretrieval.record.types import FORMAT_VERSION
from pytest_ragretrieval.scoring.evaluate import RetrieverResult, Run, score
from pytest_ragretrieval.scoring.metrics import METRICS_VERSION


def retriever_entry(result: RetrieverResult, bar: Mapping[str, Mapping[str, float]] | None = None) -> dict[str, Any]:
    """The reproducible part of a retriever's results, as the baseline stores it; `bar` where the bar
    differs from these values (metric label -> question id -> value), written only when it holds one."""
    held = {label: dict(values) for label, values in (bar or {}).items() if values}
    return to_document(structs.replace(retriever_record(result), bar=held or UNSET))


def document(
    k: int,
    fingerprint: Mapping[str, Any],
    retrievers: Mapping[str, Mapping[str, Any]],
    unavailable: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A baseline document from entries given as JSON values (hand-made ones included, which the plugin's
    own writer, `update.plan_update`, cannot write); `unavailable` names retrievers that could not run."""
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


QUESTIONS = (
    Question("q1", "住宿标准", {"a": 2, "b": 1}, ("semantic",)),
    Question("q2", "ORDER-2024", {"c": 1}, ("keyword",)),
    Question("q3", "年会", {}, ("no-answer",)),
)
GOOD = {"q1": ["a", "b", "x"], "q2": ["c", "x"], "q3": []}
WORSE = {"q1": ["x", "b", "a"], "q2": ["x", "c"], "q3": ["x"]}


def config(tmp_path: Path, *lines: str) -> Config:
    """A config with retrievers `one` and `two` (bm25) and `fused` (hybrid of both), metrics ndcg and recall at 3."""
    text = "\n".join([
        'chunks = "c.jsonl"', 'evalset = "e.jsonl"', "k = 3", 'metrics = ["ndcg", "recall"]', *lines,
        "[retrievers.one]", 'type = "bm25"', "[retrievers.two]", 'type = "bm25"', "k1 = 1.2",
        "[retrievers.fused]", 'type = "hybrid"', 'sources = ["one", "two"]',
    ])
    (tmp_path / "rag.toml").write_text(text + "\n", encoding="utf-8")
    return load_config(str(tmp_path / "rag.toml"), tmp_path)


def ran(cfg: Config, name: str, rankings: Mapping[str, Sequence[str]], latency: float = 1.0) -> Run:
    latencies = {q.id: latency for q in QUESTIONS}
    return Run(result=score(name, QUESTIONS, rankings, cfg.metrics, latencies))


CHUNK_DIGESTS = {"a": "0a0a0a0a0a0a", "b": "0b0b0b0b0b0b", "c": "0c0c0c0c0c0c", "x": "0d0d0d0d0d0d"}


def fingerprint(cfg: Config, questions: Sequence[Question] = QUESTIONS, **changes: Any) -> dict[str, Any]:
    """A stand-in for this run's fingerprint: the real shape, the questions' real records, the chunks'
    digests made up (they only need to compare)."""
    found: dict[str, Any] = {
        "yardstick": {"k": cfg.k, "metrics_version": METRICS_VERSION, "grading_version": GRADING_VERSION},
        "tokenizer": "jieba",
        "chunks": {"sha256": "c" * 64, "count": len(CHUNK_DIGESTS), "digests": dict(CHUNK_DIGESTS)},
        "questions": questions_record(questions),
        "retrievers": {spec.name: spec.fingerprint for spec in cfg.retrievers},
    }
    found.update(changes)
    return found


def baseline(cfg: Config, runs: Mapping[str, Run], fp: Mapping[str, Any], unavailable: Mapping[str, str] | None = None) -> Baseline:
    """The baseline these runs would record (at the k its yardstick names), parsed back as the plugin reads it."""
    entries = {name: retriever_entry(run.result) for name, run in runs.items() if run.result is not None}
    k = fp.get("yardstick", {}).get("k", cfg.k)
    return parse(cfg.baseline, dumps(document(k, fp, entries, unavailable)))
