"""The checks every key, number and text of a results or baseline file passes, each failure one line
naming the file and the JSON path (`damaged`), so no reader meets a value it cannot handle."""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path

from ..core.errors import BaselineError
from ..files.jsontext import control_character, metric_key_problem, unstorable
from ..files.paths import display
from ..scoring.metrics import METRICS

FREE_TEXT = frozenset({"fingerprint.chunks.gold"})
"""JSON paths whose strings are chunk texts, never printed: line breaks allowed (`gold.py` checks them)."""
SETTINGS = "fingerprint.retrievers"
"""Where the retrievers' settings are kept as the config gives them: their string values are the
user's free text (a multi-line SQL query), which a change shows as JSON (`since.show`), escaped;
only unstorable text is refused there. Keys stay names, held to the rule of every other string."""


def damaged(path: Path, problem: str) -> BaselineError:
    """The one line for a file that is not a baseline we can trust, with the two ways out."""
    return BaselineError(
        f"{display(path)}: {problem}; fix it, or delete it and run `pytest --rag-update-baseline` to record a new one"
    )


def shown(value: object) -> str:
    """A bad number as JSON would spell it: NaN, Infinity, or the first digits of a huge integer."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, float) and math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    text = str(value)
    return text if len(text) <= 24 else f"{text[:20]}... ({len(text)} digits)"


def number(path: Path, where: str, value: object, label: str | None = None) -> float:
    """A finite float in range for the metric its label names (the last part of `where` unless given;
    any finite value for an unknown metric)."""
    metric = METRICS.get((label or where.rpartition(".")[2]).partition("@")[0])
    bounds = metric.bounds if metric is not None else None
    try:
        number = float(value) if isinstance(value, (int, float)) else math.nan
    except OverflowError:
        number = math.inf
    if math.isfinite(number) and (bounds is None or bounds[0] <= number <= bounds[1]):
        return number
    scope = "" if bounds is None else f" in [{bounds[0]:g}, {bounds[1]:g}]"
    raise damaged(path, f"{where} = {shown(value)} is not a finite number{scope}")


def metric_key(path: Path, where: str, key: str, budgets: bool) -> None:
    """A metric key must read as every reader reads one (`jsontext.metric_key_problem`: `name` or `name@digits`,
    and `name@digitsc` where the file's format holds budgets: `budgets`)."""
    if (problem := metric_key_problem(key, budgets)) is not None:
        raise damaged(path, f"{where} key {problem}")


def text_problem(doc: Mapping[str, object]) -> tuple[str, str] | None:
    """(JSON path, problem) of the first key or string that holds a control character or unstorable text
    (a retriever's settings: see `SETTINGS`)."""
    fingerprint = doc.get("fingerprint")
    if isinstance(fingerprint, dict) and isinstance(fingerprint.get("retrievers"), dict):
        found = settings_problem(fingerprint["retrievers"], SETTINGS)
        if found is not None:
            return found
        doc = {**doc, "fingerprint": {**fingerprint, "retrievers": {}}}
    return _walk(doc, "", _one_text, "the document")


def settings_problem(value: object, where: str) -> tuple[str, str] | None:
    """(JSON path, problem) of the first key with a control character or unstorable text, or string
    value with unstorable text, in retrievers' settings: the one rule the config loader
    (`retrievers.parse_spec`) and the baseline's reader share, so whatever loads is recorded and read back."""
    return _walk(value, where, unstorable, "the table")


def _walk(doc: object, at: str, values: Callable[[str], str | None], top: str) -> tuple[str, str] | None:
    """The first key `_one_text` refuses or string value `values` refuses, below `at` (`top` names the
    outermost object when `at` is empty)."""
    stack: list[tuple[str, object]] = [(at, doc)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, dict):
            for key, child in value.items():
                inside = f"{where}.{key}" if where else str(key)
                problem = _one_text(key)
                if problem is not None:
                    return f"{where or top} key {key!r}", problem
                if where not in FREE_TEXT:
                    stack.append((inside, child))
        elif isinstance(value, list):
            stack.extend((f"{where}[{index}]", child) for index, child in enumerate(value))
        elif isinstance(value, str) and (problem := values(value)) is not None:
            return where, problem
    return None


def _one_text(text: str) -> str | None:
    control = control_character(text)
    return f"a control character ({control})" if control is not None else unstorable(text)


def json_type(value: object) -> str:
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array"}
    return names.get(type(value), "an object" if isinstance(value, dict) else "null")
