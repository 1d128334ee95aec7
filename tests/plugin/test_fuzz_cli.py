"""Random damage to the command's side files (CHANGES.json, the event, the decision, the approval as a
record and as the comment) and its label:
exit 0, 1 or 2, an error is one line naming the file it read, never a traceback or an internal error,
and no input changes. Like test_fuzz.py, in-process and fast, so CI runs hundreds of examples."""
from __future__ import annotations

import contextlib
import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_ragretrieval.cli import main
from pytest_ragretrieval.review.approval import decide, decision_document, pull_request
from pytest_ragretrieval.review.approved import record_document, record_line
from pytest_ragretrieval.review.changes import Changes, Entry, LostHit, SettingChange, ValueChange, dumps_changes

EXAMPLES = int(os.environ.get("RAG_FUZZ_EXAMPLES", "300"))
SIDE_FILES = ("changes.json", "event.json", "decision.json", "approved.json", "approved.md")
RAW = {
    "<<BIGINT>>": "9" * 5000,
    "<<HUGE>>": "1" + "0" * 400,
    "<<OVERFLOW>>": "1e400",
    "<<DEEP>>": "[" * 100_000 + "]" * 100_000,
    "<<NUL>>": '"a\\u0000b"',
    "<<SURROGATE>>": '"a\\ud800"',
    "<<NAN>>": "NaN",
    "<<NEWLINE>>": '"a\\nb"',
}
TOKENS = ['"', "{", "}", "[", "]", ",", ":", "\n", "\ufeff", "\\u0000", "\\ud800", "NaN", "1e999", "9" * 5000,
          "[" * 3000, "-1", "0", "true", "null", '""', "{}", "[]"]
LABELS = ["rag-baseline-approved", "", " ", "a\nb", "x" * 51, "ok-lower"]
CHANGES = Changes(
    "old.json", "new.json", fingerprint=("k",), lowered=(ValueChange("bm25", "ndcg@5", 0.6, 0.5),),
    raised=(ValueChange("vector", "recall@5", 0.5, 0.7),), removed=(Entry("bm25", "mrr@5", "no longer in the baseline"),),
    added=(Entry("vector", "", "new in the baseline"),), loosened=(SettingChange("tolerance", "ndcg@5", "0", "0.1"),),
    lost_hits=(LostHit("bm25", "q1"),), tags_lowered=(ValueChange("bm25", "ndcg@5", 0.4, 0.3, "semantic"),),
    notes=("settings compared",),
)
EVENT = {"action": "labeled", "label": {"name": "rag-baseline-approved"}, "number": 7, "pull_request": {
    "id": 123, "number": 7, "labels": [{"name": "rag-baseline-approved"}, {"name": "docs"}],
    "head": {"repo": {"full_name": "alice/repo"}}, "base": {"repo": {"full_name": "team/repo"}}, "body": "text"}}


def pristine_files() -> dict[str, bytes]:
    decided = decide(CHANGES, pull_request(EVENT))
    assert decided.approval is not None
    return {
        "changes.json": dumps_changes(CHANGES).encode(),
        "event.json": json.dumps(EVENT, indent=1).encode(),
        "decision.json": json.dumps(decision_document(decided), indent=1).encode(),
        "approved.json": json.dumps(record_document(decided.approval), indent=1).encode(),
        "approved.md": f"<!-- pytest-ragretrieval -->\n{record_line(decided.approval)}\n## comment\n".encode(),
    }


def mutate_json(value: Any, path: list[int], replacement: Any) -> Any:
    """`value` with the node `path` picks (indices modulo each container's size) replaced, or deleted."""
    if not path or not isinstance(value, (dict, list)) or not value:
        return replacement
    if isinstance(value, dict):
        key = list(value)[path[0] % len(value)]
        if replacement == "<delete>" and len(path) == 1:
            return {k: v for k, v in value.items() if k != key}
        return {**value, key: mutate_json(value[key], path[1:], replacement)}
    index = path[0] % len(value)
    return [*value[:index], mutate_json(value[index], path[1:], replacement), *value[index + 1:]]


VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**30), 10**30) | st.floats(allow_nan=False) | st.text(max_size=6)
    | st.sampled_from(["<delete>", "pass", "fail", *RAW]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=5,
)


@st.composite
def damaged(draw: st.DrawFn) -> dict[str, bytes]:
    files = pristine_files()
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.sampled_from(SIDE_FILES))
        text = files[name].decode("utf-8", "surrogatepass")
        at = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["insert", "delete", "json", "json", "json"]))
        if kind == "insert":
            text = text[:at] + draw(st.sampled_from(TOKENS)) + text[at:]
        elif kind == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 30)):]
        else:
            try:
                doc = json.loads(text)
            except (ValueError, RecursionError):
                continue
            path = draw(st.lists(st.integers(0, 20), min_size=1, max_size=5))
            text = json.dumps(mutate_json(doc, path, draw(VALUES)), ensure_ascii=False, indent=1)
            for placeholder, raw in RAW.items():
                text = text.replace(json.dumps(placeholder), raw)
        files[name] = text.encode("utf-8", "surrogatepass")
    return files


@contextlib.contextmanager
def chdir(folder: Path) -> Iterator[None]:
    before = Path.cwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_the_pristine_files_pass_through_both_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, content in pristine_files().items():
        (tmp_path / name).write_bytes(content)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    with chdir(tmp_path):
        assert run(["pr-check", "changes.json", "--event", "event.json"])[0] == 0  # lowered, but approved
        for approved in ("approved.json", "approved.md"):
            code, out, _ = run(["pr-check", "changes.json", "--event", "event.json", "--approved", approved])
            assert code == 0 and "ignored" not in out
        assert run(["comment", "--baseline-changes", "changes.json", "--decision", "decision.json"])[0] == 0


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(files=damaged(), label=st.sampled_from(LABELS))
def test_damaged_side_files_end_in_a_verdict_or_one_line(tmp_path_factory: pytest.TempPathFactory,
                                                         files: dict[str, bytes], label: str) -> None:
    folder = tmp_path_factory.mktemp("side-files")
    for name, content in files.items():
        (folder / name).write_bytes(content)
    pr_check = ["pr-check", "changes.json", "--event", "event.json", "--label", label, "--json", "out.json"]
    commands = [
        pr_check, [*pr_check, "--approved", "approved.json"], [*pr_check, "--approved", "approved.md"],
        ["comment", "--baseline-changes", "changes.json", "--decision", "decision.json"],
    ]
    with chdir(folder), contextlib.ExitStack() as stack:
        for name in ("GITHUB_ACTIONS", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_EVENT_PATH"):
            stack.enter_context(_unset(name))
        for argv in commands:
            code, out, err = run(argv)
            assert code in (0, 1, 2), (argv, code, err)
            assert "internal error" not in err and "Traceback" not in err, err
            if code == 2:
                lines = err.splitlines()
                assert len(lines) == 1 and out == "", (out, err)
                assert lines[0].startswith(tuple(f"ragretrieval: error: {name}: " for name in SIDE_FILES)
                                           + ("ragretrieval: error: argument --label: ",)), lines
    assert {name: (folder / name).read_bytes() for name in files} == files


@contextlib.contextmanager
def _unset(name: str) -> Iterator[None]:
    value = os.environ.pop(name, None)
    try:
        yield
    finally:
        if value is not None:
            os.environ[name] = value
