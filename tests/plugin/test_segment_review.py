"""The pull-request check re-scores each segment value (docs/verdicts.md, "Segments"): an update recorded with
--rag-allow-regression that lowers one language's questions while the whole set rises lowers the bar, and
needs the label; on cfa0608 the check saw only the whole set's means, which rose."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from projects import RUN, TABLE_ONLY, jsonl, set_rankings, synthetic, write_project

from pytest_ragretrieval.cli import main

SETTINGS = ('metrics = ["recall@3"]\ntolerance = 0.1\nsignificance = "randomization"\nmin_questions = 20\n'
            'segments = ["lang"]')
MISSED = [f"q{i:02d}" for i in range(1, 31)]
"""English questions the base's approved rankings miss: answering them raises the whole set by 0.3."""
HURT = [f"q{i:02d}" for i in range(81, 87)]
"""Six of the 20 German questions: German's recall falls by 0.3, the whole set's by 0.06."""


def git(folder: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=folder,
                          capture_output=True, text=True, check=True)
    return done.stdout


def based(pytester: pytest.Pytester) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """100 questions, q01-q80 English and q81-q100 German, the base's bar missing `MISSED`, committed on main;
    the work tree on the branch `pr`."""
    if shutil.which("git") is None:
        pytest.skip("git is not on PATH")
    chunks, questions, gold = synthetic(100)
    for question in questions:
        question["metadata"] = {"lang": "en" if int(question["id"][1:]) <= 80 else "de"}
    write_project(pytester.path, retrievers=TABLE_ONLY, settings=SETTINGS, chunks=chunks, questions=questions,
                  rankings={qid: ["z-noise"] if qid in MISSED else ranking for qid, ranking in gold.items()})
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    git(pytester.path, "init", "-q", "-b", "main")
    git(pytester.path, "add", "-A")
    git(pytester.path, "commit", "-q", "-m", "base")
    git(pytester.path, "switch", "-q", "-c", "pr")
    return questions, gold


def recorded(pytester: pytest.Pytester, questions: list[dict[str, Any]], gold: dict[str, list[str]],
             hurt: list[str], *flags: str) -> None:
    """Today's rankings answer every question but `hurt`, recorded as the bar and committed."""
    set_rankings(pytester.path, {qid: ["z-noise"] if qid in hurt else ranking for qid, ranking in gold.items()},
                 questions)
    result = pytester.runpytest("--rag-update-baseline", *flags, *RUN)
    assert result.ret == 0, result.stdout.str()
    git(pytester.path, "commit", "-q", "-am", "recorded")


def test_a_lowered_segment_under_a_raised_whole_needs_the_label(
        pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    questions, gold = based(pytester)
    set_rankings(pytester.path, {qid: ["z-noise"] if qid in HURT else ranking for qid, ranking in gold.items()},
                 questions)
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret != 0  # German fails its segment: refused
    recorded(pytester, questions, gold, HURT, "--rag-allow-regression")
    capsys.readouterr()
    code = main(["diff", "--against", "main", "--fail-on-lower", "--json", "changes.json"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "  raised: recall@3 of 'table' 0.7000 -> 0.9400 (+0.2400)" in out, out
    assert "  lowered: recall@3 of 'table' in segment lang:de 1.0000 -> 0.7000 (-0.3000)" in out, out
    assert "lang:en" not in out  # English rose: a raised segment is no line of its own
    listed = json.loads((pytester.path / "changes.json").read_text(encoding="utf-8"))
    assert listed["lowers_the_bar"] is True
    assert listed["lowered"] == [{"retriever": "table", "metric": "recall@3", "old": 1.0, "new": 0.7, "tag": "",
                                  "scope": "", "exam": "today", "segment": "lang:de"}]
    assert [set(item) for item in listed["raised"]] == [{"retriever", "metric", "old", "new", "tag", "scope", "exam"}]
    event = {"action": "synchronize", "pull_request": {
        "number": 7, "labels": [], "head": {"ref": "pr", "sha": "a" * 40, "repo": {"full_name": "t/r", "fork": False}},
        "base": {"ref": "main", "repo": {"full_name": "t/r", "fork": False}}}}
    (pytester.path / "event.json").write_text(json.dumps(event), encoding="utf-8")
    assert main(["pr-check", "changes.json", "--event", "event.json", "--no-comment"]) == 1
    assert capsys.readouterr().out.startswith("baseline check: fail: the baseline lowers the bar (1 lowered)")
    event["action"], event["label"] = "labeled", {"name": "rag-baseline-approved"}
    event["pull_request"]["labels"] = [event["label"]]  # type: ignore[index]
    (pytester.path / "event.json").write_text(json.dumps(event), encoding="utf-8")
    assert main(["pr-check", "changes.json", "--event", "event.json", "--no-comment"]) == 0


def test_a_change_that_leaves_the_segment_alone_passes(pytester: pytest.Pytester,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    questions, gold = based(pytester)
    recorded(pytester, questions, gold, [])
    capsys.readouterr()
    code = main(["diff", "--against", "main", "--fail-on-lower"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "segment" not in out, out


def test_a_segment_below_min_questions_lowers_nothing(pytester: pytest.Pytester,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """With min_questions = 21 German's 20 questions are shown, not judged, by the gate: no lowering here either."""
    questions, gold = based(pytester)
    pyproject = pytester.path / "pyproject.toml"
    pyproject.write_text(pyproject.read_text(encoding="utf-8").replace("min_questions = 20", "min_questions = 21"),
                         encoding="utf-8")
    git(pytester.path, "commit", "-q", "-am", "min_questions 21")
    git(pytester.path, "switch", "-q", "main")
    git(pytester.path, "merge", "-q", "pr")
    git(pytester.path, "switch", "-q", "pr")
    recorded(pytester, questions, gold, HURT)
    capsys.readouterr()
    code = main(["diff", "--against", "main", "--fail-on-lower"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "segment" not in out, out


def test_a_retag_in_the_same_pull_request_leaves_the_segment_judged(pytester: pytest.Pytester,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """The six hurt German questions retagged `xx`: today's eval set leaves German 14 questions, below
    min_questions, but the base's exam keeps them German, so the check still compares 20 and lowers."""
    questions, gold = based(pytester)
    retagged = [{**q, "metadata": {"lang": "xx"}} if q["id"] in HURT else q for q in questions]
    (pytester.path / "fixtures" / "evalset.jsonl").write_text(jsonl(retagged), encoding="utf-8")
    recorded(pytester, retagged, gold, HURT, "--rag-allow-regression")
    capsys.readouterr()
    code = main(["diff", "--against", "main", "--fail-on-lower"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "  lowered: recall@3 of 'table' in segment lang:de 1.0000 -> 0.7000 (-0.3000)" in out, out
    assert "lang:xx" not in out  # 6 questions: not judged
