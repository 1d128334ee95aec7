"""The gate in documents mode: a folder of documents cut by a chunker, gold given as spans and snippets,
the bm25 retriever end to end; the baseline records the chunker and the documents, a second run passes, and
an edited document changes only its own chunks."""
from __future__ import annotations

import json
from typing import Any

import pytest
from projects import (
    DOCUMENTS,
    OVERLAP,
    OVERLAP_TABLE,
    RUN,
    documents_config,
    merged_shards,
    write_documents_project,
)

BM25 = '[tool.ragretrieval.retrievers.bm25]\ntype = "bm25"\n'
CONFIG = documents_config(["recall", "ndcg"], BM25)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    write_documents_project(pytester.path, CONFIG)
    return pytester


def test_documents_mode_records_a_baseline_and_passes_again(project: pytest.Pytester) -> None:
    first = project.runpytest("--rag-update-baseline", "--rag-json=results.json", *RUN)
    assert first.ret == 0, first.stdout.str()
    results = json.loads((project.path / "results.json").read_text(encoding="utf-8"))
    rankings = {qid: q["ranking"] for qid, q in results["retrievers"]["bm25"]["questions"].items()}
    assert rankings["laptop"][0] == "it/laptop.txt#0" and rankings["refund"][0] == "refunds.txt#0"
    recorded = json.loads((project.path / "baselines" / "retrieval.json").read_text(encoding="utf-8"))
    chunks = recorded["fingerprint"]["chunks"]
    assert chunks["chunker"] == {"type": "sentences", "size": 1, "overlap": 0, "version": 2}
    assert chunks["documents"]["count"] == 3 and len(chunks["documents"]["sha256"]) == 64
    assert set(chunks["gold"]) == {"it/laptop.txt#0", "travel.md#1", "refunds.txt#0", "travel.md#4"}
    second = project.runpytest("--rag-eval", *RUN)
    assert second.ret == 0, second.stdout.str()
    second.stdout.fnmatch_lines(["*passed*"])
    (project.path / "kb" / "refunds.txt").write_text("Note: updated. " + DOCUMENTS["refunds.txt"], encoding="utf-8")
    third = project.runpytest("--rag-eval", *RUN)
    assert third.ret == 0, third.stdout.str()
    third.stdout.fnmatch_lines([  # the other documents' chunks keep their ids: their questions stay comparable
        "compared across changes: chunks: 2 edited (refunds.txt#0, refunds.txt#1), 1 added (refunds.txt#2), 0 removed",
        "questions: 3 comparable, 0 added, 0 removed, 1 edited (refund: *",
    ])


def test_shards_merge_in_documents_mode(project: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    """`ragretrieval merge` cuts the documents as the session did: it read a chunks file only, and stopped with
    "reads a chunks file" on a documents config."""
    merged = merged_shards(project, capsys)
    assert merged["fingerprint"]["chunks"]["chunker"] == {"type": "sentences", "size": 1, "overlap": 0, "version": 2}
    assert sorted(merged["retrievers"]["bm25"]["questions"]) == ["hotel", "laptop", "refund", "taxi"]


SPANS_CONFIG = documents_config(["recall", "ndcg", "char_recall", "char_iou", "answer_hit"], OVERLAP_TABLE)


def test_span_metrics_are_gated_like_any_metric(project: pytest.Pytester) -> None:
    """Span metrics listed in documents mode: recorded per question and as means, a second run passes,
    and a worse setting (the ranking reversed) fails the char_recall@2 item."""
    first, second, recorded = record_pass_then_fail(project, SPANS_CONFIG, "char_recall@2")
    entry = recorded["retrievers"]["overlap"]
    assert {"char_recall@2", "char_iou@2", "answer_hit@2"} <= set(entry["metrics"])
    assert entry["questions"]["laptop"]["metrics"]["answer_hit@2"] == 1.0
    assert entry["questions"]["laptop"]["metrics"]["char_recall@2"] == 1.0
    second.stdout.fnmatch_lines(["*char_recall@2*PASSED*", "*answer_hit@2*PASSED*"])


def record_pass_then_fail(project: pytest.Pytester, config: str, label: str
                          ) -> tuple[pytest.RunResult, pytest.RunResult, dict[str, Any]]:
    """`config` with the overlap retriever: recorded, passed by a second run, `label` failed with the ranking
    reversed; the config left as given. The first two runs and the baseline recorded."""
    (project.path / "overlap_retriever.py").write_text(OVERLAP, encoding="utf-8")
    (project.path / "pyproject.toml").write_text(config, encoding="utf-8")
    first = project.runpytest("--rag-update-baseline", *RUN)
    assert first.ret == 0, first.stdout.str()
    recorded = json.loads((project.path / "baselines" / "retrieval.json").read_text(encoding="utf-8"))
    second = project.runpytest("--rag-eval", "-v", *RUN)
    assert second.ret == 0, second.stdout.str()
    (project.path / "pyproject.toml").write_text(config.replace("reverse = false", "reverse = true"), encoding="utf-8")
    third = project.runpytest("--rag-eval", "-v", *RUN)
    assert third.ret == 1, third.stdout.str()
    third.stdout.fnmatch_lines([f"*{label}*FAILED*", f"{label} of 'overlap' fell from 1.0000 to *"])
    (project.path / "pyproject.toml").write_text(config, encoding="utf-8")
    return first, second, recorded


def test_a_span_value_the_rankings_do_not_give_is_a_damaged_baseline(project: pytest.Pytester) -> None:
    """The baseline's span values are recomputed from its rankings over the chunks' spans, as every metric's."""
    (project.path / "pyproject.toml").write_text(SPANS_CONFIG, encoding="utf-8")
    (project.path / "overlap_retriever.py").write_text(OVERLAP, encoding="utf-8")
    assert project.runpytest("--rag-update-baseline", *RUN).ret == 0
    path = project.path / "baselines" / "retrieval.json"
    recorded = json.loads(path.read_text(encoding="utf-8"))
    recorded["retrievers"]["overlap"]["questions"]["laptop"]["metrics"]["char_iou@2"] = 0.5
    path.write_text(json.dumps(recorded, indent=2), encoding="utf-8")
    result = project.runpytest("--rag-eval", *RUN)
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*retrievers.overlap.questions.laptop.metrics.char_iou@2 = 0.5 does not agree*"])


BUDGET_CONFIG = documents_config(["recall", "char_recall@600c", "char_precision@60c"], OVERLAP_TABLE, k=3)


def test_a_budget_item_is_gated_recorded_in_format_4_and_passes_again(project: pytest.Pytester) -> None:
    """`char_recall@600c` and `char_precision@60c` are items like any metric: recorded per question and as
    means in the format-4 baseline, passed by a second run, failed by a worse setting (the ranking reversed),
    and verified against the rankings. The laptop question's top 3 are its document's three sentences
    (55, 35 and 64 characters); 60 characters take the first alone, the one that holds the 31-character
    answer, the next (35 more) stopping the filling: precision 31 / 55."""
    first, second, recorded = record_pass_then_fail(project, BUDGET_CONFIG, "char_recall@600c")
    first.stdout.fnmatch_lines(["retriever  recall@3  char_recall@600c  char_precision@60c  judged@3"])
    path = project.path / "baselines" / "retrieval.json"
    assert recorded["format_version"] == 5
    entry = recorded["retrievers"]["overlap"]
    assert set(entry["metrics"]) == {"recall@3", "char_recall@600c", "char_precision@60c"}
    laptop = entry["questions"]["laptop"]
    assert laptop["ranking"] == ["it/laptop.txt#0", "it/laptop.txt#1", "it/laptop.txt#2"]
    assert laptop["metrics"]["char_recall@600c"] == 1.0
    assert laptop["metrics"]["char_precision@60c"] == round(31 / 55, 6)
    second.stdout.fnmatch_lines(["*char_recall@600c*PASSED*", "*char_precision@60c*PASSED*"])
    laptop["metrics"]["char_precision@60c"] = 0.5
    path.write_text(json.dumps(recorded, indent=2), encoding="utf-8")
    fourth = project.runpytest("--rag-eval", *RUN)
    assert fourth.ret != 0
    fourth.stderr.fnmatch_lines(
        ["*retrievers.overlap.questions.laptop.metrics.char_precision@60c = 0.5 does not agree*"])
