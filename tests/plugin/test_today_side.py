"""Today's rankings as the pull-request check's third side (issue 48, item 4): a head baseline forged to the
base's values passes the comparison of the two approved sides, but not that of the gate's own run (its
`--rag-json`, `diff --today`) against the base's bar."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from projects import GOLD, RUN, baseline, retriever, write_project

from pytest_ragretrieval.baseline.format import dumps
from pytest_ragretrieval.cli import main

BASELINE = "baselines/retrieval.json"
RETRIEVER = retriever("mine", "run", path="runs/mine.jsonl")
WRONG = ["service-001", "refund-001", "error-002"]
WORSE = {**GOLD, "q01": WRONG, "q04": WRONG, "q05": WRONG}
"""The retriever made worse on three questions: it ranks the same three wrong chunks."""
TODAY = "today's rankings not checked: no --today RESULTS.json (the gate's own --rag-json of this job) was given"


def git(folder: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=folder,
                   capture_output=True, text=True, check=True)


def set_run(folder: Path, rankings: dict[str, list[str]]) -> None:
    (folder / "runs").mkdir(exist_ok=True)
    (folder / "runs" / "mine.jsonl").write_text(
        "".join(json.dumps({"id": qid, "ranking": ranking}) + "\n" for qid, ranking in rankings.items()),
        encoding="utf-8")


@pytest.fixture
def base(pytester: pytest.Pytester) -> pytest.Pytester:
    """main records a `run` retriever answering every question perfectly; checked out on a branch `pr`."""
    if shutil.which("git") is None:
        pytest.skip("git is not on PATH")
    write_project(pytester.path, retrievers=RETRIEVER)
    set_run(pytester.path, GOLD)
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    git(pytester.path, "init", "-q", "-b", "main")
    git(pytester.path, "add", "-A")
    git(pytester.path, "commit", "-q", "-m", "base")
    git(pytester.path, "switch", "-q", "-c", "pr")
    return pytester


def diff(capsys: pytest.CaptureFixture[str], *more: str) -> tuple[int, list[str]]:
    capsys.readouterr()
    code = main(["diff", "--against", "main", "--fail-on-lower", *more])
    return code, capsys.readouterr().out.splitlines()


def test_a_forged_head_baseline_is_caught_by_todays_rankings(
        base: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    """The worse run recorded with --rag-allow-regression, then its entry set back by hand to the base's values
    and rankings (the kept labels untouched): both approved sides agree, so only the gate's own results show
    the drop, and `diff --today` names it as today's rankings."""
    base_doc = baseline(base.path)
    set_run(base.path, WORSE)
    assert base.runpytest("--rag-update-baseline", "--rag-allow-regression", *RUN).ret == 0
    forged = baseline(base.path)
    forged["retrievers"] = base_doc["retrievers"]
    (base.path / BASELINE).write_text(dumps(forged), encoding="utf-8")
    assert base.runpytest("--rag-eval", "--rag-json", "gate.json", *RUN).ret == 1  # the gate's own run is worse
    code, out = diff(capsys)
    assert code == 0, out  # the approved sides alone: the forgery passes
    assert [line for line in out if TODAY in line] == [f"  note: {TODAY}, so only the approved rankings of both "
                                                        "files were compared"]
    code, out = diff(capsys, "--today", "gate.json")
    assert code == 1, out
    lowered = [line for line in out if line.startswith("  lowered")]
    ran = json.loads((base.path / "gate.json").read_text(encoding="utf-8"))["retrievers"]["mine"]["metrics"]
    assert ran["recall@3"] == pytest.approx(0.6)  # the gate's own mean: q01 and q04 lost their gold
    assert "  lowered (today's rankings): recall@3 of 'mine' 1.0000 -> 0.6000 (-0.4000)" in lowered, out
    assert all("(today's rankings)" in line for line in lowered), out  # the head's file lowers nothing
    assert not any(TODAY in line for line in out)
    passed = json.loads((base.path / "gate.json").read_text(encoding="utf-8"))
    passed["failures"] = []  # a gate that passed the same run (a drop it could not tell from noise, say)
    (base.path / "passed.json").write_text(json.dumps(passed), encoding="utf-8")
    code, out = diff(capsys, "--today", "passed.json")
    assert code == 0, out  # today's side lowers only what the gate failed: never red where the gate was green


def test_todays_rankings_within_the_tolerance_lower_nothing(
        base: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    """The control: the gate's run as good as the base's lowers nothing, and a drop within the base's tolerance
    is the gate's to judge, not a lowering of the bar."""
    assert base.runpytest("--rag-eval", "--rag-json", "gate.json", *RUN).ret == 0
    code, out = diff(capsys, "--today", "gate.json")
    assert code == 0, out
    set_run(base.path, {**GOLD, "q01": WRONG})
    base.runpytest("--rag-eval", "--rag-json", "gate.json", *RUN)
    code, out = diff(capsys, "--today", "gate.json")
    assert code == 1 and any(line.startswith("  lowered (today's rankings)") for line in out), out
    config = (base.path / "pyproject.toml").read_text(encoding="utf-8")
    (base.path / "pyproject.toml").write_text(config.replace("[tool.ragretrieval]\n",
                                                             "[tool.ragretrieval]\ntolerance = 0.5\n", 1),
                                              encoding="utf-8")
    git(base.path, "commit", "-q", "-am", "tolerance")  # the base's tolerance: main's own config
    git(base.path, "branch", "-f", "main", "HEAD")
    code, out = diff(capsys, "--today", "gate.json")
    assert code == 0, out


def test_an_honest_regression_is_named_once_by_the_heads_file(
        base: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    """The worse run recorded with --rag-allow-regression and left as recorded: the head's approved rankings
    lower the bar, and today's rankings, which are the same, add no second line for the approval to cover."""
    set_run(base.path, WORSE)
    assert base.runpytest("--rag-update-baseline", "--rag-allow-regression", *RUN).ret == 0
    base.runpytest("--rag-eval", "--rag-json", "gate.json", *RUN)
    code, out = diff(capsys, "--today", "gate.json")
    assert code == 1, out
    lowered = [line for line in out if line.startswith("  lowered")]
    assert "  lowered: recall@3 of 'mine' 1.0000 -> 0.6000 (-0.4000)" in lowered, out
    assert not any("today's rankings" in line for line in lowered), out
