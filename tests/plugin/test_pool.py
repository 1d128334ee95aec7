"""judged@5 through the gate, and the pooling routine: a retuned hybrid's unjudged top 5 queued by
`ragretrieval pool`, labelled, folded in with `--apply`, and the next run's judged@5 higher."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from projects import RUN, read_results, write_project

from pytest_ragretrieval.cli import main

RETRIEVERS = """
[tool.ragretrieval.retrievers.bm25]
type = "bm25"

[tool.ragretrieval.retrievers.table]
type = "python"
factory = "table_retriever:make"

[tool.ragretrieval.retrievers.fused]
type = "hybrid"
sources = ["table", "bm25"]
"""


def judged(path: Path, retriever: str) -> float:
    return float(read_results(path)["retrievers"][retriever]["metrics"]["judged@5"])


def test_a_retuned_hybrid_s_unjudged_top_5_is_pooled_labelled_and_judged_next_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_project(pytester.path, retrievers=RETRIEVERS)
    settings = pytester.path / "pyproject.toml"
    settings.write_text(settings.read_text(encoding="utf-8").replace("k = 3", "k = 5"), encoding="utf-8")
    pytester.runpytest("--rag-update-baseline", *RUN).assert_outcomes(passed=12)
    assert "judged@5" not in (pytester.path / "baselines" / "retrieval.json").read_text(encoding="utf-8")

    # retune the hybrid: bm25 weighs three times the table now
    settings.write_text(settings.read_text(encoding="utf-8") + "weights = [1.0, 3.0]\n", encoding="utf-8")
    pytester.runpytest("--rag-eval", "--rag-json", "before.json", "--rag-html", "before.html", *RUN)
    assert "judged@5" in (pytester.path / "before.html").read_text(encoding="utf-8")
    before = judged(pytester.path / "before.json", "fused")
    assert before < 1.0

    monkeypatch.chdir(pytester.path)
    assert main(["pool", "--results", "before.json", "--out", "queue.jsonl"]) == 0
    capsys.readouterr()
    queue = [json.loads(line) for line in (pytester.path / "queue.jsonl").read_text(encoding="utf-8").splitlines()]
    fused = read_results(pytester.path / "before.json")["retrievers"]["fused"]["questions"]
    evalset = {q["id"]: q for q in map(json.loads, (pytester.path / "fixtures" / "evalset.jsonl").read_text(
        encoding="utf-8").splitlines())}
    unjudged = {(qid, cid) for qid, body in fused.items() for cid in body["ranking"][:5]
                if cid not in evalset[qid]["relevant"]}
    pooled = {(row["question"], row["chunk"]) for row in queue}
    assert unjudged and unjudged <= pooled
    assert all(row["grade"] is None and row["runs"] and row["text"] for row in queue)

    for row in queue:
        row["grade"] = 0
    (pytester.path / "queue.jsonl").write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in queue),
                                               encoding="utf-8")
    assert main(["pool", "--apply", "queue.jsonl"]) == 0
    assert capsys.readouterr().out.startswith(f"applied {len(queue)} labels (0 relevant, {len(queue)} not relevant)")

    pytester.runpytest("--rag-eval", "--rag-json", "after.json", *RUN)
    after = judged(pytester.path / "after.json", "fused")
    assert after > before
    # every chunk in fused's top 5 is judged now: 1 for each question it ranks anything for (a short ranking
    # is divided by its length, as ir_measures' Judged@k does)
    short = read_results(pytester.path / "after.json")["retrievers"]["fused"]["questions"]
    answerable = [qid for qid, q in evalset.items() if q["relevant"]]
    assert after == pytest.approx(sum(1 for qid in answerable if short[qid]["ranking"]) / len(answerable), abs=1e-6)
    # grade-0 labels move no other value: every listed metric of every retriever is as before
    for name in ("bm25", "table", "fused"):
        old = read_results(pytester.path / "before.json")["retrievers"][name]["metrics"]
        new = read_results(pytester.path / "after.json")["retrievers"][name]["metrics"]
        assert {k: v for k, v in new.items() if not k.startswith("judged")} == \
            {k: v for k, v in old.items() if not k.startswith("judged")}


def test_apply_says_what_the_gate_does_with_the_labelled_questions(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 52: `pool --apply` said "compared as edited questions" while the gate, whose baseline keeps its
    labels, compared them as relabelled; the line is now decided as the gate decides it, and the gate agrees."""
    write_project(pytester.path, retrievers="[tool.ragretrieval.retrievers.bm25]\ntype = \"bm25\"\n")
    pytester.runpytest("--rag-update-baseline", *RUN).assert_outcomes(passed=4)
    monkeypatch.chdir(pytester.path)
    assert main(["pool", "--out", "queue.jsonl"]) == 0
    queue = [json.loads(line) for line in (pytester.path / "queue.jsonl").read_text(encoding="utf-8").splitlines()]
    graded = sorted({row["question"] for row in queue})
    assert len(graded) >= 2, queue
    for row in queue:
        row["grade"] = 1 if row["question"] == graded[0] else 0
    (pytester.path / "queue.jsonl").write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in queue),
                                               encoding="utf-8")
    capsys.readouterr()
    assert main(["pool", "--apply", "queue.jsonl"]) == 0
    said = capsys.readouterr().out
    found = re.search(r"the next run: (\d+) relabelled \(compared under today's labels and the baseline's\), "
                      r"(\d+) with grade-0 judgments alone \(still compared; judged@k rises\)$", said.rstrip())
    assert found is not None and int(found[1]) + int(found[2]) == len(graded), said
    result = pytester.runpytest("--rag-eval", *RUN)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines([f"*comparable ({found[1]} relabelled: {graded[0]}*; judged under today's exam and "
                                 "the base's)*"])
    result.stdout.fnmatch_lines(["*0 added, 0 removed, 0 edited*"])
