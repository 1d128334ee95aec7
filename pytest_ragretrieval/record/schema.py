"""The JSON Schemas of the two files the record is written as, generated from its types: `--rag-json`
results (the whole record) and the baseline (the record less what only a run adds: `projection.py`).

The types give the shape; the loader's own rules are added from the constants it checks with, so a
document validates exactly when the codec reads it, as far as a schema can say: the readable
`format_version`s, no control character in any key or string (`jsontext.control_character`; chunk
texts under `fingerprint.chunks.gold` are free), metric keys (budgets from format 4 on) and each
metric's range, rankings (approved ones too) without repeats, and the fingerprint's sections
(`validate.check_fingerprint`: objects, 64-hex digests, each question's `query` and `gold` digest).
What no schema can say (a value agreeing with another part of the file, a ranking deeper than the
cutoffs need, a gold span's start before its end) is listed on the file-formats page. JSON Schema
cannot tell `5.0` from `5`: the codec reads a whole float where an integer stands (a gold span's
offsets and grade too).
"""
from __future__ import annotations

import copy
from typing import Any

import msgspec

from ..files.jsontext import MAX_CUTOFF_DIGITS
from ..scoring.metrics import METRICS
from .exam import exam_schema
from .projection import RUN_ONLY, RUN_ONLY_PER_RETRIEVER
from .types import BUDGETS, READABLE, Record
from .validate import HEX, QUESTION_DIGESTS

KINDS = ("results", "baseline")

CONTROL = "[\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029\\ud800-\\udfff]"
"""What no key or string may hold (`checks.text_problem`): a control or separator character, a lone surrogate."""
TEXT = {"not": {"pattern": CONTROL}}
"""Said as `not` a search for the character: a pattern's `$` matches before a final line break."""
STORABLE = {"not": {"pattern": "[\\x00\\ud800-\\udfff]"}}
"""Free text (a chunk's): no NUL and no lone surrogate (`jsontext.unstorable`)."""
CUTOFF = f"(@[1-9][0-9]{{0,{MAX_CUTOFF_DIGITS - 1}}}c?)?"
METRIC = f"^[a-z_][a-z0-9_]*{CUTOFF}$"
"""`jsontext.METRIC_KEY`, anchored: a cutoff, or a budget of characters (`c`, format 4 on: `NO_BUDGET`)."""
NO_BUDGET = {"propertyNames": {"not": {"pattern": "@[0-9]+c$"}}}
"""Metric keys of a file older than `types.BUDGETS`: no budget."""
PLAIN = {"$ref": "#/$defs/Plain"}
FINGERPRINTED = {"$ref": "#/$defs/Fingerprinted"}


def _hex(pattern: str) -> dict[str, Any]:
    """A digest as `validate` matches it: exactly its length (a pattern's `$` would let a line break by)."""
    digits = int(pattern.rsplit("{", 1)[1].rstrip("}"))
    return {"type": "string", "pattern": f"^{pattern}$", "minLength": digits, "maxLength": digits}


def _values(number: dict[str, Any] | None = None) -> dict[str, Any]:
    """Metric key -> value, each in its metric's range (`checks.number`); `number` replaces the value's schema."""
    return {"type": "object", "propertyNames": {"pattern": METRIC, **TEXT},
            "patternProperties": {f"^{name}{CUTOFF}$": number or _bounded(metric.bounds)
                                  for name, metric in METRICS.items()},
            "additionalProperties": number or {"type": "number"}}


def _bounded(bounds: tuple[float, float]) -> dict[str, Any]:
    return {"type": "number", "minimum": bounds[0], "maximum": bounds[1]}


def _bar() -> dict[str, Any]:
    """Metric key -> question id -> value in that metric's range."""
    found = _values({"type": "object", "additionalProperties": {"type": "number"}})
    found["patternProperties"] = {pattern: {"type": "object", "additionalProperties": bounds}
                                  for pattern, bounds in _values()["patternProperties"].items()}
    return found


def _fingerprint() -> dict[str, Any]:
    """`check_fingerprint` for formats 2 to 4 (format 1's is read through `upgrade.fingerprint_1`)."""
    section: dict[str, Any] = {"type": "object", "additionalProperties": PLAIN}
    return {
        "type": "object", "additionalProperties": PLAIN,
        "properties": {
            "yardstick": section,
            "chunks": {**section, "properties": {
                "sha256": _hex(HEX.pattern), "digests": section,
                "gold": {"type": "object", "description": "chunk id -> the chunk's text: line breaks allowed",
                         "additionalProperties": {"type": "string", **STORABLE}}}},
            "questions": {**section, "properties": {
                "sha256": _hex(HEX.pattern),
                "digests": {"type": "object", "additionalProperties": {
                    "type": "object", "required": list(QUESTION_DIGESTS), "additionalProperties": PLAIN,
                    "properties": {part: {"type": "string", "minLength": 1} for part in QUESTION_DIGESTS}}},
                **exam_schema()}},
            "retrievers": {"type": "object", "additionalProperties": FINGERPRINTED},
        },
    }


DEFINITIONS: dict[str, Any] = {
    "Plain": {"description": "any JSON value whose keys and strings hold no control character",
              "anyOf": [{"type": "string", **TEXT}, {"type": ["number", "boolean", "null"]},
                        {"type": "array", "items": PLAIN},
                        {"type": "object", "propertyNames": TEXT, "additionalProperties": PLAIN}]},
    "Fingerprinted": {"description": "what a retriever type says of itself: any object whose `sha256` and "
                      "`..._sha256` keys, at any depth, hold 64 hex digits; its string values may hold line "
                      "breaks (a multi-line `sql` query), as the config loader accepts them",
                      "type": "object", "propertyNames": TEXT,
                      "patternProperties": {"^(.*_)?sha256$": _hex(HEX.pattern)},
                      "additionalProperties": {"$ref": "#/$defs/FingerprintedValue"}},
    "FingerprintedValue": {"anyOf": [FINGERPRINTED, {"type": "array", "items": {"$ref": "#/$defs/FingerprintedValue"}},
                                     {"type": "string", **STORABLE}, {"type": ["number", "boolean", "null"]}]},
}


def schema(kind: str) -> dict[str, object]:
    """The JSON Schema (draft 2020-12) of a results (`kind="results"`) or a baseline file."""
    found: dict[str, object] = {"$schema": "https://json-schema.org/draft/2020-12/schema",
                                **msgspec.json.schema(Record)}
    definitions = found["$defs"]
    assert isinstance(definitions, dict)
    top, entry = definitions["Record"], definitions["Retriever"]
    title = "pytest-ragretrieval --rag-json results" if kind == "results" else "pytest-ragretrieval baseline"
    top["title"] = title
    if kind == "baseline":
        for name in RUN_ONLY:
            del top["properties"][name]
        for name in RUN_ONLY_PER_RETRIEVER:
            del entry["properties"][name]
        used = _referenced(top, definitions)
        for name in [name for name in definitions if name not in used]:
            del definitions[name]
    top["properties"]["format_version"] = {"enum": list(READABLE)}
    top["properties"]["fingerprint"] = {"type": "object"}
    top["if"] = {"properties": {"format_version": {"const": 1}}}
    top["then"] = {"properties": {"fingerprint": {"type": "object", "additionalProperties": PLAIN, "properties": {
        "retrievers": {"type": "object", "additionalProperties": {"type": "object", "additionalProperties": PLAIN}}}}}}
    top["else"] = {"properties": {"fingerprint": _fingerprint()}}
    top["allOf"] = [{"if": {"properties": {"format_version": {"enum": [v for v in READABLE if v < BUDGETS]}}},
                     "then": {"properties": {"retrievers": {"additionalProperties": {"properties": {
                         "metrics": NO_BUDGET, "tags": {"additionalProperties": NO_BUDGET}, "bar": NO_BUDGET,
                         "questions": {"additionalProperties": {"properties": {"metrics": NO_BUDGET}}}}}}}}}]
    entry["properties"]["metrics"] = _values()
    entry["properties"]["tags"] = {"type": "object", "additionalProperties": _values(), "default": {}}
    entry["properties"]["bar"] = _bar()
    question = definitions["Question"]["properties"]
    question["metrics"] = {**_values(), "default": {}}
    question["ranking"]["uniqueItems"] = True
    entry["properties"]["approved"]["additionalProperties"]["uniqueItems"] = True  # a ranking, as `ranking`
    _loader_rules(definitions)
    definitions.update(DEFINITIONS)
    return copy.deepcopy(found)


def _referenced(node: object, definitions: dict[str, Any], found: set[str] | None = None) -> set[str]:
    """The names of the definitions `node` refers to, at any depth: those the baseline's fields still use."""
    found = {"Record"} if found is None else found
    if isinstance(node, dict):
        target = node.get("$ref")
        if isinstance(target, str) and (name := target.rpartition("/")[2]) not in found:
            found.add(name)
            _referenced(definitions[name], definitions, found)
        for child in node.values():
            _referenced(child, definitions, found)
    elif isinstance(node, list):
        for child in node:
            _referenced(child, definitions, found)
    return found


def _loader_rules(node: object) -> None:
    """Every string without control characters, every object's keys too, and an object's keys beyond its
    fields any plain JSON (the codec ignores them, but checks their text)."""
    if isinstance(node, list):
        for child in node:
            _loader_rules(child)
        return
    if not isinstance(node, dict):
        return
    for child in node.values():
        _loader_rules(child)
    kinds = node.get("type")
    if kinds == "string" or (isinstance(kinds, list) and "string" in kinds):
        node.setdefault("not", TEXT["not"])
    if kinds == "object":
        node.setdefault("propertyNames", TEXT)
        if "properties" in node:
            node.setdefault("additionalProperties", PLAIN)
