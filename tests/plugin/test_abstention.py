"""No-answer questions: retrievers may return nothing, and `abstention` gates how often they do."""
from __future__ import annotations

import json

import pytest
from projects import RUN, set_rankings, synthetic, write_project


def test_abstention_is_scored_on_no_answer_questions_and_gated(pytester: pytest.Pytester) -> None:
    chunks, questions, gold = synthetic(4, no_answer=2)
    retrievers = '[tool.ragretrieval.retrievers.table]\ntype = "python"\nfactory = "table_retriever:make"\n'
    write_project(pytester.path, settings='metrics = ["recall", "abstention"]', retrievers=retrievers, chunks=chunks, questions=questions)
    set_rankings(pytester.path, gold, questions)
    result = pytester.runpytest("--rag-update-baseline", "--rag-json", "r.json", *RUN)
    result.assert_outcomes(passed=2)
    entry = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))["retrievers"]["table"]
    assert entry["metrics"] == {"recall@3": 1.0, "abstention": 1.0, "judged@3": 1.0}  # 2 gold chunks, a 2-chunk ranking (ir_measures divides by 2)
    assert entry["questions"]["n01"]["metrics"] == {"abstention": 1.0}
    assert entry["tags"]["no-answer"] == {"abstention": 1.0}
    set_rankings(pytester.path, dict(gold, n02=["z-noise"], q01=[]), questions)
    result = pytester.runpytest("--rag-eval", *RUN)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "abstention of 'table' fell from 1.0000 to 0.5000 (-0.5000, tolerance 0.0000)",
            "  n02: 1.0000 -> 0.0000 (-1.0000)",
            "no-answer questions that got an empty result: table 1/2",
            "answerable questions that wrongly got an empty result: table 1/4 (q01)",
        ]
    )


def test_abstention_needs_no_answer_questions(pytester: pytest.Pytester) -> None:
    chunks, questions, _ = synthetic(3)
    write_project(pytester.path, settings='metrics = ["abstention"]', chunks=chunks, questions=questions)
    result = pytester.runpytest("--rag-eval", *RUN)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: pyproject.toml [[]tool.ragretrieval[]] key 'metrics': abstention is scored on no-answer questions*"])


def test_bm25_min_score_lets_it_return_nothing(pytester: pytest.Pytester) -> None:
    retrievers = '[tool.ragretrieval.retrievers.bm25]\ntype = "bm25"\nmin_score = 1000.0\n'
    write_project(pytester.path, retrievers=retrievers, settings='metrics = ["recall", "abstention"]')
    pytester.runpytest("--rag-update-baseline", "--rag-json", "r.json", *RUN)
    entry = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))["retrievers"]["bm25"]
    assert entry["metrics"] == {"recall@3": 0.0, "abstention": 1.0, "judged@3": 0.0}
    assert entry["no_answer"] == {"questions": 1, "empty": 1, "answerable_empty": 5}


def test_abstention_takes_no_cutoff(pytester: pytest.Pytester) -> None:
    write_project(pytester.path, settings='metrics = ["abstention@5"]')
    result = pytester.runpytest("--rag-eval", *RUN)
    result.stderr.fnmatch_lines(["ERROR: *key 'metrics': metric 'abstention@5': abstention takes no cutoff"])
