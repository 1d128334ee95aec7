"""A second run whose inputs are unchanged reuses the rankings: the same results and baseline, no search."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from projects import CHUNKS, QUESTIONS, RUN, jsonl, retriever, write_project

BM25 = retriever("bm25", "bm25")
REUSED = "rag: bm25: rankings reused, every input unchanged since its cached run*"


def without_phases(path: Path) -> bytes:
    """The file's bytes without its `"phases": {...}` object (the only timings a reused run writes anew)."""
    data = path.read_bytes()
    start = data.index(b'  "phases": {')
    return data[:start] + data[data.index(b"}", start) + 1:]


def results(folder: Path, name: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((folder / name).read_text(encoding="utf-8"))
    return found


def test_an_unchanged_second_run_reuses_and_writes_the_same_files(pytester: pytest.Pytester) -> None:
    write_project(pytester.path, retrievers=BM25)
    first = pytester.runpytest("--rag-update-baseline", *RUN)
    assert first.ret == 0 and not any(line.startswith("rag: bm25: rankings reused") for line in first.outlines)
    baseline = (pytester.path / "baselines" / "retrieval.json").read_bytes()
    measured = pytester.runpytest("--rag-update-baseline", "--rag-no-reuse", "--rag-json", "measured.json", *RUN)
    assert measured.ret == 0 and (pytester.path / "baselines" / "retrieval.json").read_bytes() == baseline
    reused = pytester.runpytest("--rag-update-baseline", "--rag-json", "reused.json", *RUN)
    assert reused.ret == 0
    reused.stdout.fnmatch_lines([REUSED, "rag: baselines/retrieval.json is already up to date"])
    assert (pytester.path / "baselines" / "retrieval.json").read_bytes() == baseline
    before, after = results(pytester.path, "measured.json"), results(pytester.path, "reused.json")
    assert "run bm25" in before.pop("phases") and "run bm25" not in after.pop("phases")
    assert "reused" not in before and after.pop("reused") == ["bm25"]
    assert before["retrievers"]["bm25"]["notes"] == after["retrievers"]["bm25"]["notes"] == []
    assert after == before  # latency included: the measured run's, which refreshed the cached entry
    again = pytester.runpytest("--rag-eval", "--rag-json", "again.json", *RUN)
    assert again.ret == 0
    checked = results(pytester.path, "again.json")
    # the gate's run names each item's outcome (an update's does not): every item unchanged, the rest byte-equal
    assert {item["outcome"] for item in checked.pop("outcomes")} == {"unchanged"}
    checked.pop("phases")
    assert checked == {key: value for key, value in results(pytester.path, "reused.json").items() if key != "phases"}
    assert (pytester.path / ".rag-cache" / "rankings" / ".gitignore").read_text(encoding="utf-8").endswith("*\n")


def test_the_opt_outs_measure_every_time(pytester: pytest.Pytester) -> None:
    write_project(pytester.path, retrievers=BM25)
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    measured = pytester.runpytest("--rag-eval", "--rag-no-reuse", "--rag-json", "out.json", *RUN)
    assert measured.ret == 0 and "reused" not in results(pytester.path, "out.json")
    assert "run bm25" in results(pytester.path, "out.json")["phases"]
    write_project(pytester.path, retrievers=BM25, settings="reuse_rankings = false")
    assert pytester.runpytest("--rag-eval", "--rag-json", "out.json", *RUN).ret == 0
    assert "reused" not in results(pytester.path, "out.json")
    write_project(pytester.path, retrievers=BM25)
    assert pytester.runpytest("--rag-eval", "--rag-cache=off", "--rag-json", "out.json", *RUN).ret == 0
    assert "reused" not in results(pytester.path, "out.json")
    back = pytester.runpytest("--rag-eval", *RUN)  # the cache read and written again
    back.stdout.fnmatch_lines([REUSED])


def test_any_changed_input_runs_the_retriever(pytester: pytest.Pytester) -> None:
    write_project(pytester.path, retrievers=BM25)
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    edited = [dict(row, text=row["text"] + "。") if row["id"] == "service-001" else row for row in CHUNKS]
    (pytester.path / "fixtures" / "chunks.jsonl").write_text(jsonl(edited), encoding="utf-8")
    assert pytester.runpytest("--rag-eval", "--rag-json", "out.json", *RUN).ret == 0
    assert "reused" not in results(pytester.path, "out.json")
    assert "run bm25" in results(pytester.path, "out.json")["phases"]
    again = pytester.runpytest("--rag-eval", "--rag-json", "out.json", *RUN)
    again.stdout.fnmatch_lines([REUSED])  # the changed corpus's run is the cached one now
    write_project(pytester.path, retrievers=BM25.replace('type = "bm25"', 'type = "bm25"\nmax_latency_ms = 10000'))
    (pytester.path / "fixtures" / "chunks.jsonl").write_text(jsonl(edited), encoding="utf-8")
    for _ in range(2):  # a latency item: measured every run, never an earlier run's numbers
        timed = pytester.runpytest("--rag-eval", "--rag-json", "out.json", *RUN)
        assert timed.ret == 0 and "reused" not in results(pytester.path, "out.json")


def test_reused_rankings_are_a_note_in_the_reports_not_a_warning(pytester: pytest.Pytester) -> None:
    """Every cached run listed "rankings reused" among the reports' warnings (issue 44): it needs no
    action, so it is a note (ℹ️), and the warnings hold only what does."""
    write_project(pytester.path, retrievers=BM25)
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    reused = pytester.runpytest("--rag-eval", "--rag-report", "r.md", "--rag-html", "r.html", *RUN)
    assert reused.ret == 0
    reused.stdout.fnmatch_lines([REUSED])
    markdown = (pytester.path / "r.md").read_text(encoding="utf-8")
    assert "- ℹ️ rankings reused for bm25: every input unchanged since the cached run" in markdown
    assert not any("⚠️" in line and "reused" in line for line in markdown.splitlines())
    page = (pytester.path / "r.html").read_text(encoding="utf-8")
    assert '<li class="info">ℹ️ rankings reused for bm25' in page and '<li class="note">⚠️ rankings' not in page


def without_timings(found: dict[str, Any]) -> dict[str, Any]:
    """A results file without what a run measures anew (phases, latency, one-time loads) nor the reuse notes."""
    for name in ("phases", "reused", "reused_questions"):
        found.pop(name, None)
    for entry in found["retrievers"].values():
        entry.pop("latency_ms", None)
        entry.pop("loads_ms", None)
    return found


def test_added_and_edited_questions_alone_are_searched(pytester: pytest.Pytester) -> None:
    """Every input but the eval set unchanged: the unchanged questions' rankings come from the cached run,
    the added and edited ones are searched, and the results are a cold run's."""
    fused = (BM25 + retriever("words", "bm25", tokenizer="whitespace")
             + retriever("fused", "hybrid", sources=["bm25", "words"]))
    write_project(pytester.path, retrievers=fused)
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    edited = [dict(q, query="退款审核通过后多久退回") if q["id"] == "q05" else q for q in QUESTIONS]
    added = [{"id": "q07", "query": "发票抬头写什么", "relevant": ["travel-003"]},
             {"id": "q08", "query": "支付渠道 PAY-3001 不可用", "relevant": ["error-002"]}]
    (pytester.path / "fixtures" / "evalset.jsonl").write_text(jsonl(edited + added), encoding="utf-8")
    reused = pytester.runpytest("--rag-eval", "--rag-json", "reused.json", "--rag-report", "r.md", *RUN)
    assert reused.ret == 0
    assert ("- ℹ️ rankings of 5 of 8 questions reused for fused: every other input unchanged, 3 searched"
            in (pytester.path / "r.md").read_text(encoding="utf-8"))
    reused.stdout.fnmatch_lines(["rag: fused: rankings of 5 of 8 questions reused from its cached run, every other "
                                 "input unchanged; 3 searched"])
    found = results(pytester.path, "reused.json")
    assert found["reused_questions"] == {name: {"reused": 5, "searched": 3} for name in ("bm25", "fused", "words")}
    assert "reused" not in found
    cold = pytester.runpytest("--rag-eval", "--rag-no-reuse", "--rag-json", "cold.json", *RUN)
    assert cold.ret == 0 and "reused_questions" not in results(pytester.path, "cold.json")
    assert without_timings(found) == without_timings(results(pytester.path, "cold.json"))
    assert found["retrievers"]["fused"]["questions"]["q08"]["ranking"]  # searched, not an empty ranking
