"""The composite action (action.yml) read as the runner reads it, for the tests that check and dry-run it."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
ACTION = ROOT / "action.yml"
RAG_EVAL = ROOT / ".github" / "workflows" / "rag-eval.yml"
MARKER = "<!-- pytest-ragretrieval -->"
INPUTS = ("python-version", "torch", "extras", "install", "config", "pytest-args", "label", "comment",
          "comment-author", "sweep-record", "model-cache-key", "cache-files", "rag-cache", "reports", "artifact-name", "token")

Step = dict[str, Any]


def load(path: Path) -> dict[str, Any]:
    yaml = pytest.importorskip("yaml")
    data: dict[Any, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    if True in data:  # YAML 1.1 reads the bare key `on` as True.
        data["on"] = data.pop(True)
    return data


def steps() -> list[Step]:
    return list(load(ACTION)["runs"]["steps"])


def index(predicate: Callable[[Step], bool], what: str) -> int:
    found = [i for i, step in enumerate(steps()) if predicate(step)]
    assert len(found) == 1, f"expected one step that {what}, found {len(found)}"
    return found[0]


def by_id(step_id: str) -> Step:
    return steps()[index(lambda s: s.get("id") == step_id, f"has id {step_id}")]


def uses(action: str) -> Callable[[Step], bool]:
    return lambda step: str(step.get("uses", "")).startswith(action + "@")


def runs(text: str) -> Callable[[Step], bool]:
    return lambda step: text in step.get("run", "")


def comment_step() -> Step:
    return steps()[index(runs("action/comment.sh"), "comments")]
