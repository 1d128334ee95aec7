"""The results/baseline JSON file: one versioned format, keys sorted, written atomically.

The baseline holds no timings and no timestamps, so recording the same inputs twice gives a
byte-identical file; `--rag-json` results add each retriever's latency and comparison.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from .. import __version__
from ..errors import BaselineError
from ..jsontext import JSONProblem, cutoff, loads, plain_strings
from ..paths import Unreadable, display, read_input
from ..scoring.evaluate import RetrieverResult
from ..values import DIGITS
from .checked import damaged, json_type, metric_key, number, shown, text_problem

FORMAT_VERSION = 3
"""3: each entry may hold a `bar`, the per-question values the team last approved where they differ
from the recorded ones. 2: the fingerprint splits the yardstick from the system under test and
itemizes the corpus and the questions (`fingerprint`). Files of formats 1 and 2 are still read, their
bar equal to their recorded values (format 1's fingerprint through `upgraded`)."""
READABLE = (1, 2, FORMAT_VERSION)
RERECORD = "run `pytest --rag-update-baseline` to record one"
NO_ANSWER_KEYS = ("questions", "empty", "answerable_empty")
HEX = re.compile("[0-9a-f]{64}")


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
    no_answer: Mapping[str, int] | None = field(default=None, hash=False)
    """The no-answer counts, when the file holds them (files of 0.1.0 lack `answerable_empty`)."""
    bar: Mapping[str, Mapping[str, float]] = field(default_factory=dict, hash=False)
    """The bar where it differs from the recorded values: metric label -> question id -> value."""

    def bar_values(self, label: str) -> dict[str, float]:
        """The bar of one metric, question by question: the recorded values, the bar's own where it holds one."""
        found = {qid: q.metrics[label] for qid, q in self.questions.items() if label in q.metrics}
        found.update(self.bar.get(label, {}))
        return found

    def bar_view(self) -> Recorded:
        """This entry with the bar in place of the recorded values (rankings kept): what a run is judged
        against. A metric whose bar differs has the mean of its bar's values as its value."""
        if not self.bar:
            return self
        metrics = dict(self.metrics)
        for label in self.bar:
            values = list(self.bar_values(label).values())
            metrics[label] = round(math.fsum(values) / len(values), DIGITS) if values else metrics[label]
        questions = {
            qid: RecordedQuestion(q.ranking, {**q.metrics, **{label: self.bar[label][qid] for label in self.bar
                                                               if qid in self.bar[label]}})
            for qid, q in self.questions.items()
        }
        return Recorded(metrics=metrics, questions=questions, tags=self.tags, no_answer=self.no_answer)


@dataclass(frozen=True)
class Baseline:
    path: Path
    k: int
    fingerprint: Mapping[str, Any] = field(hash=False)
    retrievers: Mapping[str, Recorded] = field(hash=False)
    document: Mapping[str, Any] = field(hash=False)
    unavailable: Mapping[str, str] = field(default_factory=dict, hash=False)
    format_version: int = FORMAT_VERSION


def retriever_entry(result: RetrieverResult, bar: Mapping[str, Mapping[str, float]] | None = None) -> dict[str, Any]:
    """The reproducible part of a retriever's results, as the baseline stores it; `bar` where the bar
    differs from these values (metric label -> question id -> value), written only when it holds one."""
    entry: dict[str, Any] = {
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
    held = {label: dict(values) for label, values in (bar or {}).items() if values}
    if held:
        entry["bar"] = held
    return entry


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
    """Sorted keys, two-space indent, real UTF-8 and a final newline: diffs well in review.

    The bytes of `json.dumps(doc, ensure_ascii=False, sort_keys=True, indent=2)`, made faster: Python's
    encoder in C writes the compact text (its numbers and strings), msgspec only indents it (Python
    indents in pure Python, several times slower on a 20,000-chunk results file)."""
    compact = _COMPACT.encode(doc).encode("utf-8", "surrogatepass")
    return msgspec.json.format(compact, indent=2).decode("utf-8", "surrogatepass") + "\n"


_COMPACT = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _numbers(path: Path, where: str, value: Any) -> dict[str, float]:
    if not isinstance(value, dict) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in value.values()
    ):
        raise damaged(path, f"{where} must map metric names to numbers")
    for key in value:
        metric_key(path, where, key)
    return {str(k): number(path, f"{where}.{k}", v) for k, v in value.items()}


def _bar(path: Path, where: str, value: Any, questions: Mapping[str, RecordedQuestion]) -> dict[str, dict[str, float]]:
    """The bar where it differs from the recorded values: each value of a metric a recorded question holds."""
    if not isinstance(value, dict):
        raise damaged(path, f"{where} must map metric names to objects")
    found: dict[str, dict[str, float]] = {}
    for label, values in value.items():
        metric_key(path, where, label)
        if not isinstance(values, dict) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in values.values()
        ):
            raise damaged(path, f"{where}.{label} must map question ids to numbers")
        for qid in values:
            if label not in (questions[qid].metrics if qid in questions else {}):
                raise damaged(path, f"{where}.{label}.{qid} is a bar value of no recorded value: "
                              f"questions.{qid}.metrics holds no {label}")
        found[label] = {qid: number(path, f"{where}.{label}.{qid}", value, label) for qid, value in values.items()}
    return found


def _counts(path: Path, where: str, value: Any) -> dict[str, int]:
    if not isinstance(value, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**31 for v in value.values()
    ):
        raise damaged(path, f"{where} must map {', '.join(NO_ANSWER_KEYS)} to counts")
    unknown = sorted(set(value) - set(NO_ANSWER_KEYS))
    if unknown:
        raise damaged(path, f"{where} holds unknown key {unknown[0]!r}; known keys: {', '.join(NO_ANSWER_KEYS)}")
    return dict(value)


def _ranking(path: Path, where: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(c, str) and c for c in value):
        raise damaged(path, f"{where} must be a list of chunk ids")
    seen: set[str] = set()
    for chunk_id in value:
        if chunk_id in seen:
            raise damaged(path, f"{where} lists chunk id {chunk_id!r} twice")
        seen.add(chunk_id)
    return tuple(value)


def _recorded(path: Path, name: str, entry: Any) -> Recorded:
    where = f"retrievers.{name}"
    if not isinstance(entry, dict):
        raise damaged(path, f"{where} must be an object")
    metrics = _numbers(path, f"{where}.metrics", entry.get("metrics"))
    questions_raw = entry.get("questions", {})
    if not isinstance(questions_raw, dict):
        raise damaged(path, f"{where}.questions must be an object")
    questions = {}
    for qid, body in questions_raw.items():
        if not isinstance(body, dict):
            raise damaged(path, f"{where}.questions.{qid} must be an object")
        questions[qid] = RecordedQuestion(
            ranking=_ranking(path, f"{where}.questions.{qid}.ranking", body.get("ranking", [])),
            metrics=_numbers(path, f"{where}.questions.{qid}.metrics", body.get("metrics", {})),
        )
    tags_raw = entry.get("tags", {})
    if not isinstance(tags_raw, dict):
        raise damaged(path, f"{where}.tags must be an object")
    tags = {tag: _numbers(path, f"{where}.tags.{tag}", values) for tag, values in tags_raw.items()}
    no_answer = _counts(path, f"{where}.no_answer", entry["no_answer"]) if "no_answer" in entry else None
    bar = _bar(path, f"{where}.bar", entry.get("bar", {}), questions)
    return Recorded(metrics=metrics, questions=questions, tags=tags, no_answer=no_answer, bar=bar)


def upgraded(fingerprint: Mapping[str, Any]) -> dict[str, Any]:
    """A format-1 fingerprint in format 2's shape. Format 1 recorded one digest for the corpus and one
    for the eval set, so neither is itemized; its grading rules are version 1's, the only ones then."""
    found = {key: value for key, value in fingerprint.items() if key in ("tokenizer", "retrievers")}
    found["yardstick"] = {"k": fingerprint.get("k"), "metrics_version": fingerprint.get("metrics_version"),
                          "grading_version": 1}
    found["chunks"] = {"sha256": fingerprint.get("chunks_sha256")}
    found["questions"] = {"sha256": fingerprint.get("evalset_sha256")}
    return found


def _fingerprint(path: Path, value: Any, version: int) -> dict[str, Any]:
    """The fingerprint: an object whose `retrievers`, when present, maps names to objects, and whose
    yardstick, chunks and questions, when present, are objects (each digest map an object of its own)."""
    if not isinstance(value, dict):
        raise damaged(path, "fingerprint must be an object")
    if version == 1:
        value = upgraded(value)
    for key in ("yardstick", "chunks", "questions"):
        section = value.get(key, {})
        if not isinstance(section, dict):
            raise damaged(path, f"fingerprint.{key} must be an object, got {json_type(section)}")
        digests = section.get("digests", {})
        if key != "yardstick" and not isinstance(digests, dict):
            raise damaged(path, f"fingerprint.{key}.digests must be an object, got {json_type(digests)}")
        if key == "questions" and not all(isinstance(entry, dict) for entry in digests.values()):
            raise damaged(path, "fingerprint.questions.digests must map question ids to objects")
        if key != "yardstick" and version != 1:
            _digests(path, key, section)
    found: dict[str, Any] = value
    retrievers = value.get("retrievers", {})
    if not isinstance(retrievers, dict):
        raise damaged(path, f"fingerprint.retrievers must be an object, got {json_type(retrievers)}")
    for name, entry in retrievers.items():
        if not isinstance(entry, dict):
            raise damaged(path, f"fingerprint.retrievers.{name} must be an object, got {json_type(entry)}")
        if version != 1:
            _named_digests(path, f"fingerprint.retrievers.{name}", entry)
    return found


def _named_digests(path: Path, where: str, value: Any) -> None:
    """Every digest a retriever's fingerprint records (a key `sha256` or `..._sha256`: a user dictionary,
    a run file) is 64 hex digits, as a run writes it: an emptied one is damage, not a change to judge."""
    stack = [(where, value)]
    while stack:
        at, node = stack.pop()
        if isinstance(node, dict):
            for key, child in node.items():
                if (key == "sha256" or str(key).endswith("_sha256")) and not (
                        isinstance(child, str) and HEX.fullmatch(child)):
                    raise damaged(path, f"{at}.{key} = {shown(child)} is not a SHA-256 digest (64 hex digits)")
                stack.append((f"{at}.{key}", child))
        elif isinstance(node, list):
            stack.extend((f"{at}[{index}]", child) for index, child in enumerate(node))


def _digests(path: Path, key: str, section: Mapping[str, Any]) -> None:
    """The corpus's and the eval set's digest is hex as a run writes it: an emptied one (`""`, `0`, null)
    would make every chunk or question look changed, or none, and must not be read as a change."""
    if "sha256" in section and not (isinstance(section["sha256"], str) and HEX.fullmatch(section["sha256"])):
        raise damaged(path, f"fingerprint.{key}.sha256 = {shown(section['sha256'])} is not a SHA-256 digest "
                      "(64 hex digits)")


def parse(path: Path, text: str) -> Baseline:
    """Validate a results document; every problem is one line naming the file and the JSON path."""
    try:
        doc = loads(text, allow_nan=True)
    except JSONProblem as exc:
        raise damaged(path, f"not valid JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise damaged(path, "not a results document (expected a JSON object)")
    version = _version(path, doc)
    bad_text = None if plain_strings(text) else text_problem(doc)
    if bad_text is not None:
        raise damaged(path, f"{bad_text[0]} holds {bad_text[1]}")
    fingerprint = _fingerprint(path, doc.get("fingerprint"), version)
    retrievers = doc.get("retrievers")
    if not isinstance(retrievers, dict):
        raise damaged(path, "retrievers must be an object")
    k = _k(path, doc, fingerprint, version)
    unavailable = _unavailable(path, doc, retrievers)
    recorded = {name: _recorded(path, name, entry) for name, entry in retrievers.items()}
    for name, entry in recorded.items():
        _depth(path, name, entry, k)
    unfingerprinted = sorted(set(retrievers) - set(fingerprint.get("retrievers", {})))
    if unfingerprinted:
        name = unfingerprinted[0]
        raise damaged(path, f"retrievers.{name} has no fingerprint.retrievers.{name}: what its values were measured "
                      "under is not recorded; one run writes both")
    return Baseline(path=path, k=k, fingerprint=fingerprint, retrievers=recorded, document=doc, unavailable=unavailable,
                    format_version=version)


def _version(path: Path, doc: dict[str, Any]) -> int:
    """Which format the file is in, refused before anything else is read: the rest depends on it."""
    version = doc.get("format_version")
    if type(version) is not int or version not in READABLE:
        readable = ", ".join(map(str, READABLE[:-1])) + f" and {READABLE[-1]}"
        raise damaged(path, f"format_version is {shown(version)}, this plugin reads format_version {readable}")
    return version


def _k(path: Path, doc: dict[str, Any], fingerprint: dict[str, Any], version: int) -> int:
    """The document's k, which must agree with the k its fingerprint recorded: one run writes both."""
    k = doc.get("k")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise damaged(path, "k must be an integer >= 1")
    recorded_k = fingerprint.get("yardstick", {}).get("k", k)
    if version == 1 and recorded_k is None:
        recorded_k = k  # a format-1 fingerprint without its own k: nothing to disagree with
    if recorded_k != k or isinstance(recorded_k, bool):
        where = "fingerprint.k" if version == 1 else "fingerprint.yardstick.k"
        raise damaged(path, f"k = {k} disagrees with {where} = {shown(recorded_k)}; one run writes both")
    return k


def _unavailable(path: Path, doc: dict[str, Any], retrievers: dict[str, Any]) -> dict[str, str]:
    """The retrievers that could not run, with why; a retriever either ran or could not, never both."""
    unavailable = doc.get("unavailable", {})
    if not isinstance(unavailable, dict) or not all(isinstance(v, str) for v in unavailable.values()):
        raise damaged(path, "unavailable must map retriever names to reasons")
    both = sorted(set(unavailable) & set(retrievers))
    if both:
        raise damaged(path, f"unavailable.{both[0]} names a retriever that retrievers.{both[0]} also holds; "
                      "a retriever either ran or could not")
    found: dict[str, str] = unavailable
    return found


def _depth(path: Path, name: str, entry: Recorded, k: int) -> None:
    """A run records each ranking as deep as k and its metrics' cutoffs need, never deeper."""
    labels = set(entry.metrics) | {label for q in entry.questions.values() for label in q.metrics}
    labels |= {label for values in entry.tags.values() for label in values}
    cutoffs = [found for label in labels if (found := cutoff(label)) is not None]
    depth = max([k, *cutoffs])
    for qid, question in entry.questions.items():
        if len(question.ranking) > depth:
            raise damaged(path, f"retrievers.{name}.questions.{qid}.ranking holds {len(question.ranking)} ids, more "
                          f"than the {depth} that k and the entry's cutoffs ask for")


def read(path: Path) -> Baseline:
    """The results or baseline file at `path`; a missing file is an error."""
    try:
        data = read_input(path)
    except Unreadable as exc:
        raise BaselineError(f"{display(path)}: {exc}") from None
    return _decoded(path, data)


def _decoded(path: Path, data: bytes) -> Baseline:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise damaged(path, "not UTF-8 text") from None
    return parse(path, text)


def load(path: Path) -> Baseline | None:
    """The baseline at `path`, or None when there is none yet; a path that is no file is an error."""
    try:
        data = read_input(path)
    except Unreadable as exc:
        if exc.missing:
            return None
        raise BaselineError(f"{display(path)}: {exc}") from None
    return _decoded(path, data)
