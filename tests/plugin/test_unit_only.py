"""A chunk-id re-chunk (issue 49 item 4): every output tells the lowerings that only come from the changed
unit (split gold chunks, relabelled) from the drops on questions whose gold did not change.

The fixture (`tests/unit/data/rechunk_english/`) is an English team's docs: two gold chunks are cut in
two, `ragretrieval relabel --apply` moves their labels to both halves, and of two `run` retrievers
`steady` only re-ranks in the new units (on the relabelled questions it finds the first half alone, so
recall's denominator doubles) while `worse` also loses q3's and q4's gold, whose chunks did not change.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from projects import retriever

from pytest_ragretrieval.cli import main

DATA = Path(__file__).resolve().parents[1] / "unit" / "data" / "rechunk_english"
RANKINGS = json.loads((DATA / "rankings.json").read_text(encoding="utf-8"))
RUN = ("-p", "no:cacheprovider")
UNIT = ("unit-only: 2 questions (q1, q2) whose gold the re-chunk split, each dropping no lower than the approved "
        "ranking carried through the relabel's mapping")
REAL = ("not from the changed unit: drops on 2 questions (q3, q4) whose gold did not change; 2 more only from "
        "the changed unit")

EVENT = {"action": "synchronize", "pull_request": {
    "number": 42, "labels": [], "head": {"ref": "rechunk", "sha": "a" * 40, "repo": {"full_name": "team/docs", "fork": False}},
    "base": {"ref": "main", "repo": {"full_name": "team/docs", "fork": False}}}}
"""The pull request's event: a push, without the approval label."""


def git(folder: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=folder,
                          capture_output=True, text=True, check=True)
    return done.stdout


def set_runs(folder: Path, steady: dict[str, list[str]], worse: dict[str, list[str]]) -> None:
    (folder / "runs").mkdir(exist_ok=True)
    for name, rankings in (("steady", steady), ("worse", worse)):
        (folder / "runs" / f"{name}.jsonl").write_text(
            "".join(json.dumps({"id": qid, "ranking": ranking}) + "\n" for qid, ranking in rankings.items()),
            encoding="utf-8")


@pytest.fixture
def rechunked(pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> pytest.Pytester:
    """The base commit's bar recorded over the old chunks; then, on the work tree, the re-chunk, the relabel
    applied, and today's runs."""
    if shutil.which("git") is None:
        pytest.skip("git is not on PATH")
    folder = pytester.path
    (folder / "fixtures").mkdir()
    shutil.copy(DATA / "chunks_before.jsonl", folder / "fixtures" / "chunks.jsonl")
    shutil.copy(DATA / "evalset.jsonl", folder / "fixtures" / "evalset.jsonl")
    set_runs(folder, RANKINGS["before"], RANKINGS["before"])
    (folder / "pyproject.toml").write_text(
        '[tool.ragretrieval]\nchunks = "fixtures/chunks.jsonl"\nevalset = "fixtures/evalset.jsonl"\n'
        'baseline = "baselines/retrieval.json"\nk = 3\nmetrics = ["recall@3", "ndcg@3"]\n'
        + retriever("steady", "run", path="runs/steady.jsonl") + retriever("worse", "run", path="runs/worse.jsonl"),
        encoding="utf-8")
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    git(folder, "init", "-q", "-b", "main")
    git(folder, "add", "-A")
    git(folder, "commit", "-qm", "base")
    shutil.copy(DATA / "chunks_after.jsonl", folder / "fixtures" / "chunks.jsonl")
    assert main(["relabel", "--apply"]) == 0
    assert "(2 labels moved)" in capsys.readouterr().out
    set_runs(folder, RANKINGS["steady"], RANKINGS["worse"])
    return pytester


def test_the_gate_and_the_update_tell_unit_only_lowerings_from_real_drops(rechunked: pytest.Pytester) -> None:
    result = rechunked.runpytest("--rag-eval", *RUN)
    # the gate says what the update and the check will: both kinds fail (the question rule), each named
    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines([f"*recall@3 of 'steady'*[[]{UNIT}]*", f"*ndcg@3 of 'steady'*[[]{UNIT}]*",
                                 f"*recall@3 of 'worse'*[[]{REAL}]*", f"*ndcg@3 of 'worse'*[[]{REAL}]*"],
                                consecutive=False)
    result = rechunked.runpytest("--rag-update-baseline", *RUN)
    result.assert_outcomes(failed=4)  # both kinds are refused without --rag-allow-regression
    result.stdout.fnmatch_lines([f"*refused to record recall@3 of 'steady': *[[]{UNIT}]; fix it*",
                                 f"*refused to record recall@3 of 'worse': *[[]{REAL}]; fix it*"])


def test_diff_pr_check_and_the_comment_list_the_two_kinds_apart(
    rechunked: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    assert rechunked.runpytest("--rag-update-baseline", "--rag-allow-regression", *RUN).ret == 0
    capsys.readouterr()
    assert main(["diff", "--against", "HEAD", "--fail-on-lower", "--json", "changes.json"]) == 1
    out = capsys.readouterr().out
    assert "the baseline lowers the bar: 4 values lowered (2 unit-only, 2 real drops)" in out
    lowered = [line for line in out.splitlines() if line.startswith("  lowered")]
    assert len(lowered) == 4
    assert [line.startswith("  lowered (unit-only): ") for line in lowered] == [False, False, True, True]
    assert all(f"[{REAL}]" in line for line in lowered[:2]) and all(f"[{UNIT}]" in line for line in lowered[2:])
    changes = json.loads((rechunked.path / "changes.json").read_text(encoding="utf-8"))
    assert {(c["retriever"], c["metric"], c["unit"]) for c in changes["lowered"]} == {
        ("steady", "recall@3", "unit-only"), ("steady", "ndcg@3", "unit-only"),
        ("worse", "recall@3", "retriever"), ("worse", "ndcg@3", "retriever")}
    (rechunked.path / "event.json").write_text(json.dumps(EVENT), encoding="utf-8")
    assert main(["pr-check", "changes.json", "--event", "event.json", "--json", "decision.json"]) == 1
    assert capsys.readouterr().out.startswith("baseline check: fail: the baseline lowers the bar (4 lowered "
                                              "(2 unit-only, 2 real drops)) and pull request #42 has no")
    assert main(["comment", "--baseline-changes", "changes.json", "--decision", "decision.json"]) == 0
    comment = capsys.readouterr().out
    assert "lowered: real drops (2)" in comment
    assert "lowered only by the changed unit (unit-only: split gold chunks, reproduced through the relabel's " \
           "mapping) (2)" in comment
    assert "4 lowered (2 unit-only, 2 real drops)" in comment


def test_a_pure_re_chunk_shows_only_unit_only_lowerings(
    rechunked: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """No retriever changed: `worse` answers as `steady` does; every lowering is unit-only."""
    set_runs(rechunked.path, RANKINGS["steady"], RANKINGS["steady"])
    result = rechunked.runpytest("--rag-eval", *RUN)
    result.assert_outcomes(failed=4)  # a unit-only lowering still needs the label: the gate fails it, named
    assert result.stdout.str().count(f"[{UNIT}]") >= 4 and REAL not in result.stdout.str()
    assert rechunked.runpytest("--rag-update-baseline", "--rag-allow-regression", *RUN).ret == 0
    capsys.readouterr()
    assert main(["diff", "--against", "HEAD", "--fail-on-lower"]) == 1
    out = capsys.readouterr().out
    assert "4 values lowered (4 unit-only, 0 real drops)" in out
    lowered = [line for line in out.splitlines() if line.startswith("  lowered")]
    assert len(lowered) == 4 and all(line.startswith("  lowered (unit-only): ") for line in lowered)
