"""What the record's types cannot say, checked after they read a file: values in their metric's range,
metric keys (budgets from format 4 on), rankings without repeats and no deeper than k and the cutoffs
need, a bar of recorded values only, and the file's own facts agreeing (k, the fingerprint of every
entry, a retriever either ran or could not). The fingerprint is what each retriever type says it is,
so its shape is checked here, by hand, where readers rely on it: its sections are objects, its digests
64 hex digits, each question's entry holds its `query` and `gold` digests, the gold texts are storable
text. `schema.py` says the same in the published JSON Schemas."""
from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path

from ..files.jsontext import cutoff, unstorable
from .checks import damaged, json_type, metric_key, number, shown
from .exam import shape_problem
from .types import BUDGETS, Record, Retriever, Values

HEX = re.compile("[0-9a-f]{64}")
QUESTION_DIGESTS = ("query", "gold")
"""What every entry of `fingerprint.questions.digests` holds (baseline/fingerprint.py, `question_record`)."""
NOT_NUMBERS = ("fingerprint",)
"""Where a non-finite float may stand: a retriever's settings are its type's to judge."""
CHECKED = frozenset({"metrics", "tags", "questions", "bar"})
"""A retriever's values checked in their metric's range (`_entry`), finite among the rest."""


def check_fingerprint(path: Path, value: object, version: int) -> None:
    """An object whose `retrievers`, when present, maps names to objects, and whose yardstick, chunks and
    questions, when present, are objects (each digest map an object of its own)."""
    if not isinstance(value, dict):
        raise damaged(path, "fingerprint must be an object")
    for key in ("yardstick", "chunks", "questions"):
        section = value.get(key, {})
        if not isinstance(section, dict):
            raise damaged(path, f"fingerprint.{key} must be an object, got {json_type(section)}")
        digests = section.get("digests", {})
        if key != "yardstick" and not isinstance(digests, dict):
            raise damaged(path, f"fingerprint.{key}.digests must be an object, got {json_type(digests)}")
        if key == "questions":
            _questions(path, section, digests)
        if key == "chunks" and version != 1:
            _gold(path, section.get("gold", {}))
        if key != "yardstick" and version != 1 and "sha256" in section and not (
                isinstance(section["sha256"], str) and HEX.fullmatch(section["sha256"])):
            raise damaged(path, f"fingerprint.{key}.sha256 = {shown(section['sha256'])} is not a SHA-256 digest "
                          "(64 hex digits)")
    retrievers = value.get("retrievers", {})
    if not isinstance(retrievers, dict):
        raise damaged(path, f"fingerprint.retrievers must be an object, got {json_type(retrievers)}")
    for name, entry in retrievers.items():
        if not isinstance(entry, dict):
            raise damaged(path, f"fingerprint.retrievers.{name} must be an object, got {json_type(entry)}")
        if version != 1:
            _named_digests(path, f"fingerprint.retrievers.{name}", entry)


def _gold(path: Path, gold: object) -> None:
    """The gold chunks' texts (`baseline.fingerprint.gold_texts`, read back by `labels/gold.py`): free
    text, but text a file and Postgres can hold."""
    if not isinstance(gold, dict):
        raise damaged(path, f"fingerprint.chunks.gold must map chunk ids to texts, got {json_type(gold)}")
    for chunk_id, text in gold.items():
        problem = unstorable(text) if isinstance(text, str) else f"{json_type(text)}, not the chunk's text"
        if problem is not None:
            raise damaged(path, f"fingerprint.chunks.gold.{chunk_id} holds {problem}")


def _questions(path: Path, section: Mapping[str, object], digests: Mapping[str, object]) -> None:
    """The questions' digests, and the exam they keep (`record/exam.py`)."""
    _question_digests(path, digests)
    problem = shape_problem(section)
    if problem is not None:
        raise damaged(path, problem)


def _question_digests(path: Path, digests: Mapping[str, object]) -> None:
    """Each question's entry holds the short digests of its query and graded gold, as a run writes them:
    an entry emptied of them would leave no question comparable, so a worse run would pass unseen."""
    for qid, entry in digests.items():
        if not isinstance(entry, dict):
            raise damaged(path, "fingerprint.questions.digests must map question ids to objects")
        for part in QUESTION_DIGESTS:
            value = entry.get(part)
            if not (isinstance(value, str) and value):
                found = "is missing" if value is None else f"= {shown(value)} is not a digest (a non-empty string)"
                raise damaged(path, f"fingerprint.questions.digests.{qid}.{part} {found}: a run writes the short "
                              "digests of every question's query and gold, without which no question is comparable")


def _named_digests(path: Path, where: str, value: object) -> None:
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


def check_record(path: Path, record: Record, doc: Mapping[str, object], version: int) -> None:
    """The checks after the types: see the module's docstring."""
    _k(path, record, version)
    both = sorted(set(record.unavailable or {}) & set(record.retrievers))
    if both:
        raise damaged(path, f"unavailable.{both[0]} names a retriever that retrievers.{both[0]} also holds; "
                      "a retriever either ran or could not")
    for name, entry in record.retrievers.items():
        _entry(path, f"retrievers.{name}", entry, version >= BUDGETS)
        _depth(path, name, entry, record.k)
    _finite(path, doc)
    fingerprinted = record.fingerprint.get("retrievers", {})
    unfingerprinted = sorted(set(record.retrievers) - set(fingerprinted if isinstance(fingerprinted, dict) else {}))
    if unfingerprinted:
        name = unfingerprinted[0]
        raise damaged(path, f"retrievers.{name} has no fingerprint.retrievers.{name}: what its values were measured "
                      "under is not recorded; one run writes both")


def _finite(path: Path, doc: Mapping[str, object]) -> None:
    """Every number outside the fingerprint is finite: NaN and Infinity are read only to be named here.
    The values `_entry` checked against their metric's range are not walked again."""
    stack: list[tuple[str, object]] = [(key, value) for key, value in doc.items() if key not in NOT_NUMBERS]
    retrievers = doc.get("retrievers")
    stack = [(key, value) for key, value in stack if key != "retrievers"]
    for name, entry in (retrievers.items() if isinstance(retrievers, dict) else ()):
        if isinstance(entry, dict):
            stack.extend((f"retrievers.{name}.{key}", value) for key, value in entry.items() if key not in CHECKED)
    while stack:
        where, value = stack.pop()
        if isinstance(value, dict):
            stack.extend((f"{where}.{key}", child) for key, child in value.items())
        elif isinstance(value, list):
            stack.extend((f"{where}[{index}]", child) for index, child in enumerate(value))
        elif isinstance(value, float) and not math.isfinite(value):
            raise damaged(path, f"{where} = {shown(value)} is not a finite number")


def _k(path: Path, record: Record, version: int) -> None:
    """The document's k must agree with the k its fingerprint recorded: one run writes both."""
    yardstick = record.fingerprint.get("yardstick", {})
    recorded_k = yardstick.get("k", record.k) if isinstance(yardstick, dict) else record.k
    if version == 1 and recorded_k is None:
        recorded_k = record.k  # a format-1 fingerprint without its own k: nothing to disagree with
    if recorded_k != record.k or isinstance(recorded_k, bool):
        where = "fingerprint.k" if version == 1 else "fingerprint.yardstick.k"
        raise damaged(path, f"k = {record.k} disagrees with {where} = {shown(recorded_k)}; one run writes both")


def _values(path: Path, where: str, values: Values, budgets: bool) -> None:
    for key, value in values.items():
        metric_key(path, where, key, budgets)
        number(path, f"{where}.{key}", value)


def _entry(path: Path, where: str, entry: Retriever, budgets: bool) -> None:
    """`budgets`: whether the file's format holds budget keys (`char_recall@2000c`)."""
    _values(path, f"{where}.metrics", entry.metrics, budgets)
    for tag, values in entry.tags.items():
        _values(path, f"{where}.tags.{tag}", values, budgets)
    for qid, question in entry.questions.items():
        if len(set(question.ranking)) != len(question.ranking):
            twice = next(c for i, c in enumerate(question.ranking) if c in question.ranking[:i])
            raise damaged(path, f"{where}.questions.{qid}.ranking lists chunk id {twice!r} twice")
        _values(path, f"{where}.questions.{qid}.metrics", question.metrics, budgets)
    for label, values in (entry.bar or {}).items():
        metric_key(path, f"{where}.bar", label, budgets)
        for qid, value in values.items():
            if label not in (entry.questions[qid].metrics if qid in entry.questions else {}):
                raise damaged(path, f"{where}.bar.{label}.{qid} is a bar value of no recorded value: "
                              f"questions.{qid}.metrics holds no {label}")
            number(path, f"{where}.bar.{label}.{qid}", value, label)
    for qid, ranking in (entry.approved or {}).items():
        if qid not in entry.questions:
            raise damaged(path, f"{where}.approved.{qid} is an approved ranking of no recorded question: "
                          f"questions holds no {qid}")
        if len(set(ranking)) != len(ranking):
            twice = next(c for i, c in enumerate(ranking) if c in ranking[:i])
            raise damaged(path, f"{where}.approved.{qid} lists chunk id {twice!r} twice")


def _depth(path: Path, name: str, entry: Retriever, k: int) -> None:
    """A run records each ranking as deep as k and its metrics' cutoffs need, never deeper."""
    labels = set(entry.metrics) | {label for q in entry.questions.values() for label in q.metrics}
    labels |= {label for values in entry.tags.values() for label in values}
    cutoffs = [found for label in labels if (found := cutoff(label)) is not None]
    depth = max([k, *cutoffs])
    for qid, question in entry.questions.items():
        if len(question.ranking) > depth:
            raise damaged(path, f"retrievers.{name}.questions.{qid}.ranking holds {len(question.ranking)} ids, more "
                          f"than the {depth} that k and the entry's cutoffs ask for")
    for qid, ranking in (entry.approved or {}).items():
        if len(ranking) > depth:
            raise damaged(path, f"retrievers.{name}.approved.{qid} holds {len(ranking)} ids, more than the {depth} "
                          "that k and the entry's cutoffs ask for")
