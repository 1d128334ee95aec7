"""The pull-request check trusts nothing in the head's baseline it can derive (issue 42, rule 6): it scores
the base's approved rankings (read from the base revision) and the head's itself, under the work tree's
eval set and the labels the base was recorded under. A pull request that makes bm25 worse, records it
with --rag-allow-regression and writes the base's values back over the recorded ones fails the check;
so does every edit of one number in the head's file; label work alone lowers nothing."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from projects import (
    QUESTIONS,
    RUN,
    baseline,
    documents_config,
    jsonl,
    retriever,
    write_documents_project,
    write_project,
)

from pytest_ragretrieval.baseline.format import dumps, parse
from pytest_ragretrieval.cli import main
from pytest_ragretrieval.cli.sides import from_revision
from pytest_ragretrieval.core.errors import RagError
from pytest_ragretrieval.review.changes import classify

BASELINE = "baselines/retrieval.json"
ADDED = {"id": "q07", "query": "客服几点上班", "relevant": ["service-001"], "tags": ["semantic"]}
WORSE = retriever("bm25", "bm25", min_score=2.0)
"""bm25 returning only chunks that score 2 or more: recall@3 0.9 -> 0.6, ndcg@3 0.952 -> 0.6 against the base."""


def git(folder: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=folder,
                          capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture
def base(pytester: pytest.Pytester) -> pytest.Pytester:
    """A project whose main branch records bm25 with its defaults, checked out on a pull-request branch."""
    if shutil.which("git") is None:
        pytest.skip("git is not on PATH")
    write_project(pytester.path, retrievers=retriever("bm25", "bm25"))
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    git(pytester.path, "init", "-q", "-b", "main")
    git(pytester.path, "add", "-A")
    git(pytester.path, "commit", "-q", "-m", "base")
    git(pytester.path, "switch", "-q", "-c", "pr")
    return pytester


def forge(folder: Path) -> None:
    """The base's values written back over the recorded ones: the means, each question's values, the tags."""
    theirs = json.loads(git(folder, "show", f"main:{BASELINE}"))["retrievers"]["bm25"]
    doc = baseline(folder)
    ours = doc["retrievers"]["bm25"]
    ours["metrics"], ours["tags"] = theirs["metrics"], theirs.get("tags", {})
    for qid, question in ours["questions"].items():
        if qid in theirs["questions"]:
            question["metrics"] = theirs["questions"][qid]["metrics"]
    (folder / BASELINE).write_text(dumps(doc), encoding="utf-8")


def forged(pytester: pytest.Pytester) -> None:
    """Rule 6's chain: a worse min_score and one question more, recorded with the flag, the base's values
    written back."""
    write_project(pytester.path, retrievers=WORSE, questions=[*QUESTIONS, ADDED])
    assert pytester.runpytest("--rag-update-baseline", "--rag-allow-regression", *RUN).ret == 0
    forge(pytester.path)
    recorded = baseline(pytester.path)["retrievers"]["bm25"]
    base = json.loads(git(pytester.path, "show", f"main:{BASELINE}"))["retrievers"]["bm25"]
    assert recorded["metrics"] == base["metrics"]  # the file's numbers say nothing changed


def event(folder: Path, labels: tuple[str, ...] = ()) -> str:
    """A push to the pull request, or (with labels) the `labeled` event of the first: the run that approves."""
    path = folder / "event.json"
    action = {"action": "labeled", "label": {"name": labels[0]}} if labels else {"action": "synchronize"}
    path.write_text(json.dumps({**action, "pull_request": {
        "number": 7, "labels": [{"name": name} for name in labels],
        "head": {"ref": "pr", "sha": "0" * 40, "repo": {"full_name": "team/repo", "fork": False}},
        "base": {"ref": "main", "repo": {"full_name": "team/repo", "fork": False}}}}), encoding="utf-8")
    return str(path)


def check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    code = main(list(argv))
    return code, capsys.readouterr().out.splitlines()


def test_the_forged_means_chain_fails_the_check(base: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    forged(base)
    code, out = check(capsys, "diff", "--against", "main", "--fail-on-lower", "--json", "changes.json")
    assert code == 1, out
    assert "  lowered: recall@3 of 'bm25' 0.9000 -> 0.6000 (-0.3000)" in out
    assert "  lowered: ndcg@3 of 'bm25' 0.9520 -> 0.6000 (-0.3520)" in out
    assert ("  note: compared the approved rankings of both sides, scored here under today's exam (the eval set "
            "fixtures/evalset.jsonl)") in out
    assert out[-1] == "the baseline lowers the bar: 4 values lowered"
    assert {c["exam"] for c in json.loads((base.path / "changes.json").read_text())["lowered"]} == {"today"}
    code, out = check(capsys, "pr-check", "changes.json", "--event", event(base.path), "--no-comment")
    assert code == 1, out
    code, out = check(capsys, "pr-check", "changes.json", "--event", event(base.path, ("rag-baseline-approved",)),
                      "--no-comment")
    assert code == 0, out


def leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The path of every number in a JSON document."""
    if isinstance(value, dict):
        return [found for key in sorted(value) for found in leaves(value[key], (*path, key))]
    if isinstance(value, list):
        return [found for index, item in enumerate(value) for found in leaves(item, (*path, index))]
    return [path] if isinstance(value, (int, float)) and not isinstance(value, bool) else []


def at(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def put(doc: Any, path: tuple[Any, ...], value: float) -> None:
    at(doc, path[:-1])[path[-1]] = value


NUMBERS = st.one_of(
    st.sampled_from([0, 1, 2, -1, 0.0, 0.5, 1.0, 1e-9, 1e9]),
    st.integers(min_value=-10, max_value=10**6),
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False),
)


def test_no_edit_of_a_number_in_the_head_file_improves_the_verdict(base: pytest.Pytester) -> None:
    """Every number of the forged head's file (values, tags, counts, grades, k, its settings, its format)
    set to anything: the file is refused, or the same metrics are still lowered."""
    forged(base)
    sides = from_revision("main", None, base.path)
    first = classify(sides.old, sides.new, sides.old_settings, sides.new_settings, sides.notes, sides.today)
    lowered = {(c.retriever, c.metric) for c in first.lowered}
    assert lowered == {("bm25", label) for label in ("precision@3", "recall@3", "f1@3", "ndcg@3")}
    text = (base.path / BASELINE).read_text(encoding="utf-8")
    paths = leaves(json.loads(text))
    numeric = {path[0] for path in paths}
    assert {"fingerprint", "format_version", "k", "retrievers"} <= numeric, numeric

    read: list[tuple[Any, ...]] = []

    def verdict(path: tuple[Any, ...], value: float) -> None:
        doc = json.loads(text)
        put(doc, path, value)
        try:
            new = parse(base.path / BASELINE, dumps(doc))
        except RagError:
            return  # refused: `diff` exits 2 and the check fails
        read.append(path)
        changes = classify(sides.old, new, sides.old_settings, sides.new_settings, sides.notes, sides.today)
        assert changes.lowers_the_bar, (path, value)
        assert lowered <= {(c.retriever, c.metric) for c in changes.lowered}, (path, value)

    for path in paths:  # every number, to its neighbours and to nothing
        for value in (0, 1, -1, at(json.loads(text), path) + 1):
            verdict(path, value)
    assert {path[0] for path in read} >= {"fingerprint", "retrievers"}  # edits read, not all refused

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.sampled_from(paths), NUMBERS)
    def any_number(path: tuple[Any, ...], value: float) -> None:
        verdict(path, value)

    any_number()


def test_labels_alone_lower_nothing(base: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    """Pooled gold on two questions and grade-0 judgments on another, no retriever changed, re-recorded
    without the flag: recall's recorded means fall (bigger denominators), and the check says nothing was
    lowered, the base's exam included."""
    pooled = {"q01": {"travel-001": 2, "travel-002": 1}, "q02": {"error-001": 1, "error-002": 0, "travel-003": 0},
              "q05": {"refund-002": 1, "refund-001": 1}}
    labelled = [dict(q, relevant=pooled[q["id"]]) if q["id"] in pooled else q for q in QUESTIONS]
    (base.path / "fixtures" / "evalset.jsonl").write_text(jsonl(labelled), encoding="utf-8")
    updated = base.runpytest("--rag-update-baseline", *RUN)
    assert updated.ret == 0, updated.stdout.str()
    was = json.loads(git(base.path, "show", f"main:{BASELINE}"))["retrievers"]["bm25"]["metrics"]
    assert baseline(base.path)["retrievers"]["bm25"]["metrics"]["recall@3"] < was["recall@3"]
    code, out = check(capsys, "diff", "--against", "main", "--fail-on-lower", "--json", "changes.json")
    assert code == 0, out
    assert out[-1] == "the baseline does not lower the bar"
    assert json.loads((base.path / "changes.json").read_text())["rescored"] == ["today", "base"]
    code, out = check(capsys, "pr-check", "changes.json", "--event", event(base.path), "--no-comment")
    assert code == 0, out


def documents(extra: str = "") -> str:
    """The documents project with bm25 (`extra` lines in its table), recall and char_recall at 2."""
    return documents_config(["recall", "char_recall"], f'[tool.ragretrieval.retrievers.bm25]\ntype = "bm25"\n{extra}\n')


def test_documents_mode_is_scored_from_the_cut_documents(pytester: pytest.Pytester,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Documents mode: the work tree's documents are cut and the eval set placed in them as the gate does,
    so a span metric is scored from the approved rankings too, not read."""
    if shutil.which("git") is None:
        pytest.skip("git is not on PATH")
    write_documents_project(pytester.path, documents())
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    git(pytester.path, "init", "-q", "-b", "main")
    git(pytester.path, "add", "-A")
    git(pytester.path, "commit", "-q", "-m", "base")
    (pytester.path / "pyproject.toml").write_text(documents("min_score = 6.0"), encoding="utf-8")
    assert pytester.runpytest("--rag-update-baseline", "--rag-allow-regression", *RUN).ret == 0
    forge(pytester.path)
    code, out = check(capsys, "diff", "--against", "main", "--fail-on-lower")
    assert code == 1, out
    assert {line.split(" of ")[0] for line in out if line.startswith("  lowered: ")} == {
        "  lowered: recall@2", "  lowered: char_recall@2"}, out


def test_a_format_3_base_is_compared_on_rankings_under_today_s_exam(
        base: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    """The upgrade pull request: the base's file is format 3 (no labels kept), the head's format 4 with the
    forged chain. The base's exam is today's on the questions whose graded gold the base's digests say is
    unchanged, so the head's approved rankings are still scored, and its written-back means are never read."""
    doc = baseline(base.path)
    doc["format_version"] = 3
    del doc["fingerprint"]["questions"]["labels"]
    (base.path / BASELINE).write_text(dumps(doc), encoding="utf-8")
    git(base.path, "switch", "-q", "main")
    git(base.path, "commit", "-q", "-am", "a format-3 base")
    git(base.path, "switch", "-q", "-C", "pr")
    forged(base)
    code, out = check(capsys, "diff", "--against", "main", "--fail-on-lower")
    assert code == 1, "\n".join(out[-25:])
    assert "  lowered: recall@3 of 'bm25' 0.9000 -> 0.6000 (-0.3000)" in out
    assert any("keeps no labels (format 3): its exam is today's on the questions whose graded gold its digests "
               "say is unchanged" in line for line in out), out
