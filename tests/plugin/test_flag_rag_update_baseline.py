"""`--rag-update-baseline`: what is written, when, and what the run says about it."""
from __future__ import annotations

import pytest
from projects import GOLD, RUN, baseline, baseline_bytes, retriever, set_rankings, write_project


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    write_project(pytester.path)
    return pytester


def test_records_every_retriever_and_metric(project: pytest.Pytester) -> None:
    result = project.runpytest("--rag-update-baseline", *RUN)
    result.assert_outcomes(passed=8)
    doc = baseline(project.path)
    assert doc["format_version"] == 5
    assert sorted(doc["retrievers"]) == ["bm25", "table"]
    assert doc["retrievers"]["table"]["metrics"] == {"f1@3": 0.56, "ndcg@3": 1.0, "precision@3": 0.4, "recall@3": 1.0}
    assert doc["retrievers"]["table"]["questions"]["q03"]["ranking"] == ["travel-002", "travel-003"]
    assert doc["retrievers"]["table"]["no_answer"] == {"answerable_empty": 0, "empty": 1, "questions": 1}
    assert set(doc["fingerprint"]) == {"yardstick", "tokenizer", "chunks", "questions", "retrievers"}
    assert doc["fingerprint"]["yardstick"] == {"k": 3, "metrics_version": 2, "grading_version": 1, "ann_tie_epsilon": 0.0001}
    assert doc["fingerprint"]["chunks"]["count"] == 8 and len(doc["fingerprint"]["chunks"]["digests"]) == 8
    assert all(len(digest) == 12 for digest in doc["fingerprint"]["chunks"]["digests"].values())
    assert doc["fingerprint"]["questions"]["digests"]["q01"]["tags"] == ["semantic"]
    result.stdout.fnmatch_lines(["rag: baseline changes in retrieval.json:", "  table ndcg@3: new 1.0000", "rag: wrote baselines/retrieval.json"])


def test_recording_twice_gives_a_byte_identical_file(project: pytest.Pytester) -> None:
    project.runpytest("--rag-update-baseline", *RUN)
    first = baseline_bytes(project.path)
    result = project.runpytest("--rag-update-baseline", *RUN)
    assert baseline_bytes(project.path) == first
    result.stdout.fnmatch_lines(["rag: baselines/retrieval.json is already up to date"])
    text = first.decode("utf-8")
    assert text.endswith("}\n") and '\n  "fingerprint": {' in text


def test_prints_every_change_old_to_new(project: pytest.Pytester) -> None:
    project.runpytest("--rag-update-baseline", *RUN)
    set_rankings(project.path, dict(GOLD, q01=["travel-002", "travel-001"]))
    result = project.runpytest("--rag-update-baseline", "--rag-allow-regression", *RUN)
    result.stdout.fnmatch_lines(["  table ndcg@3: 1.0000 -> 0.9262", "  7 values unchanged"])
    assert baseline(project.path)["retrievers"]["table"]["metrics"]["ndcg@3"] == 0.926186


def test_minus_k_changes_only_the_selected_retrievers(project: pytest.Pytester) -> None:
    project.runpytest("--rag-update-baseline", *RUN)
    before = baseline(project.path)
    set_rankings(project.path, dict(GOLD, q01=[], q02=[]))
    project.runpytest("--rag-update-baseline", "--rag-allow-regression", "-k", "table", *RUN).assert_outcomes(passed=4)
    after = baseline(project.path)
    assert after["retrievers"]["bm25"] == before["retrievers"]["bm25"]
    assert after["retrievers"]["table"]["metrics"]["ndcg@3"] == 0.6
    assert after["retrievers"]["table"]["metrics"]["recall@3"] == 0.6
    assert after["retrievers"]["table"]["questions"]["q01"] == {
        "ranking": [], "metrics": {"f1@3": 0.0, "ndcg@3": 0.0, "precision@3": 0.0, "recall@3": 0.0}
    }


def test_minus_k_selecting_some_metrics_of_a_retriever_records_none_of_it(project: pytest.Pytester) -> None:
    """Fresh rankings beside old values of unselected metrics would be values no ranking gives."""
    project.runpytest("--rag-update-baseline", *RUN)
    before = baseline_bytes(project.path)
    set_rankings(project.path, dict(GOLD, q01=[], q02=[]))
    result = project.runpytest("--rag-update-baseline", "--rag-allow-regression", "-k", "table and ndcg", *RUN)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "table not recorded: -k/-m selected ndcg@3 but not precision@3, recall@3, f1@3; a retriever's values and "
        "rankings are recorded together, so select all its items (-k table)",
        "rag: baselines/retrieval.json is left as it was, byte for byte",
    ])
    assert baseline_bytes(project.path) == before


def test_entries_no_longer_configured_are_removed_and_listed(project: pytest.Pytester) -> None:
    project.runpytest("--rag-update-baseline", *RUN)
    write_project(
        project.path,
        retrievers=retriever("bm25", "bm25"),
        settings='metrics = ["precision", "recall", "ndcg"]',
    )
    result = project.runpytest("--rag-update-baseline", *RUN)
    result.stdout.fnmatch_lines(["rag: table is no longer configured: removed", "  bm25 f1@3: removed (*)", "  table: removed"])
    doc = baseline(project.path)
    assert list(doc["retrievers"]) == ["bm25"]
    assert sorted(doc["retrievers"]["bm25"]["metrics"]) == ["ndcg@3", "precision@3", "recall@3"]
    assert list(doc["fingerprint"]["retrievers"]) == ["bm25"]


def test_nothing_is_written_when_a_selected_retriever_fails(project: pytest.Pytester) -> None:
    project.runpytest("--rag-update-baseline", *RUN)
    before = baseline_bytes(project.path)
    set_rankings(project.path, dict(GOLD, q02=["error-001", "error-001"]))
    result = project.runpytest("--rag-update-baseline", *RUN)
    result.assert_outcomes(passed=4, failed=4)
    result.stdout.fnmatch_lines(["rag: baseline not written: retriever 'table' failed; fix it and run again"])
    assert baseline_bytes(project.path) == before


def test_changed_questions_need_every_retriever_re_recorded(project: pytest.Pytester) -> None:
    project.runpytest("--rag-update-baseline", *RUN)
    before = baseline_bytes(project.path)
    evalset = project.path / "fixtures" / "evalset.jsonl"
    evalset.write_text(evalset.read_text(encoding="utf-8").replace('"travel-003": 1', '"travel-003": 2'), encoding="utf-8")
    result = project.runpytest("--rag-update-baseline", "-k", "bm25", *RUN)
    result.stdout.fnmatch_lines(
        ["rag: baseline not written: the questions changed, so every retriever must be re-recorded but 'table' was not selected;*"]
    )
    assert result.ret == 1, "an update that writes nothing it was asked to write fails"
    assert baseline_bytes(project.path) == before
    # q03 regraded, no retriever changed: a labels-only change, judged under both exams, records without
    # the flag (docs/verdicts.md, "The bar"), although bm25's recorded ndcg@3 falls under the new grade
    result = project.runpytest("--rag-update-baseline", *RUN)
    result.stdout.fnmatch_lines(["*questions: 6 comparable (1 relabelled: q03; judged under today's exam and the base's)*",
                                 "rag: the questions changed: every retriever re-recorded", "  bm25 ndcg@3: 0.9520 -> 0.9226"])
    assert result.ret == 0 and baseline_bytes(project.path) != before
    project.runpytest("--rag-eval", *RUN).assert_outcomes(passed=8)


def test_no_write_happens_with_collect_only(project: pytest.Pytester) -> None:
    project.runpytest("--rag-update-baseline", "--collect-only", *RUN)
    assert not (project.path / "baselines").exists()


def test_a_new_source_reading_a_changed_retriever_is_detected(project: pytest.Pytester) -> None:
    write_project(
        project.path,
        retrievers=retriever("bm25", "bm25") + retriever("table", "python", factory="table_retriever:make")
        + retriever("wrapped", "python", factory="wrap:make", sources=["bm25"]),
    )
    project.makepyfile(wrap="def make(ctx):\n    inner = ctx.retriever('bm25')\n    return lambda q, k: list(inner(q, k))\n")
    project.runpytest("--rag-update-baseline", *RUN).assert_outcomes(passed=12)
    pyproject = project.path / "pyproject.toml"
    pyproject.write_text(pyproject.read_text(encoding="utf-8").replace('type = "bm25"', 'type = "bm25"\nb = 0.5'), encoding="utf-8")
    project.runpytest("--rag-update-baseline", "-k", "bm25 and not wrapped", *RUN).assert_outcomes(passed=4)
    result = project.runpytest("--rag-eval", *RUN)
    result.assert_outcomes(passed=12)
    result.stdout.fnmatch_lines(["compared across changes: wrapped.reads.bm25.b 0.75 -> 0.5"])


def test_a_baseline_written_by_another_run_meanwhile_is_not_overwritten(project: pytest.Pytester) -> None:
    """Two `--rag-update-baseline` runs at once: the other one writes the baseline after this one read it
    (a conftest hook stands for it, after the plugin loaded the baseline). Old code wrote over it and both
    said "wrote baselines/retrieval.json", one update lost; now this run refuses in one line, exit 1."""
    project.runpytest("--rag-update-baseline", *RUN)
    set_rankings(project.path, dict(GOLD, q01=["travel-002", "travel-001"]))
    project.makeconftest("""
        from pathlib import Path

        def pytest_collection_finish(session):
            Path("baselines/retrieval.json").write_text("the other run's baseline\\n", encoding="utf-8")
    """)
    result = project.runpytest("--rag-update-baseline", "--rag-allow-regression", *RUN)
    assert result.ret == 1
    lines = [line for line in result.outlines if "retrieval.json not written" in line]
    assert lines == ["rag: error: baselines/retrieval.json not written: another run wrote it after this one read "
                     "it (two updates at once), so this run's update would drop that one's; run `pytest "
                     "--rag-update-baseline` again to update it as it is now"]
    assert "rag: wrote baselines/retrieval.json" not in result.outlines
    assert baseline_bytes(project.path) == b"the other run's baseline\n"
