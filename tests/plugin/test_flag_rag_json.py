"""`--rag-json PATH`: this run's results in the baseline's shape, plus timings."""
from __future__ import annotations

import json

import jsonschema
import pytest
from projects import GOLD, RUN, baseline, set_rankings, write_project

from pytest_ragretrieval.cli import main
from pytest_ragretrieval.record.schema import schema
from pytest_ragretrieval.review.comment import MARKER


def test_results_have_the_baseline_shape_and_latency(pytester: pytest.Pytester) -> None:
    write_project(pytester.path)
    pytester.runpytest("--rag-update-baseline", *RUN)
    set_rankings(pytester.path, dict(GOLD, q01=[]))
    result = pytester.runpytest("--rag-eval", "--rag-json", "out/results.json", *RUN)
    result.assert_outcomes(passed=4, failed=4)
    result.stdout.fnmatch_lines(["rag: wrote out/results.json"])
    results = json.loads((pytester.path / "out" / "results.json").read_text(encoding="utf-8"))
    recorded = baseline(pytester.path)
    assert results["format_version"] == recorded["format_version"]
    assert results["fingerprint"] == recorded["fingerprint"]
    # judged@3 is scored and written beside the listed metrics, but recorded in the baseline only when listed
    shown = dict(results["retrievers"]["bm25"]["metrics"])
    assert 0 <= shown.pop("judged@3") <= 1
    assert shown == recorded["retrievers"]["bm25"]["metrics"]
    assert results["retrievers"]["table"]["questions"]["q01"] == {
        "ranking": [],
        "metrics": {"precision@3": 0.0, "recall@3": 0.0, "f1@3": 0.0, "ndcg@3": 0.0, "judged@3": 0.0},
    }
    latency = results["retrievers"]["table"]["latency_ms"]
    assert set(latency) == {"p50", "p95"} and 0 <= latency["p50"] <= latency["p95"]
    jsonschema.validate(results, schema("results"))  # what `ragretrieval schema results` prints
    jsonschema.validate(recorded, schema("baseline"))


def test_results_list_the_gate_s_failures_and_the_comment_renders_them(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    write_project(pytester.path)
    pytester.runpytest("--rag-update-baseline", *RUN)
    set_rankings(pytester.path, dict(GOLD, q01=[]))
    pytester.runpytest("--rag-eval", "--rag-json", "results.json", *RUN).assert_outcomes(passed=4, failed=4)
    results = json.loads((pytester.path / "results.json").read_text(encoding="utf-8"))
    assert [f["item"] for f in results["failures"]] == [
        "rag::table::f1@3", "rag::table::ndcg@3", "rag::table::precision@3", "rag::table::recall@3"]
    ndcg = results["failures"][1]
    assert (ndcg["retriever"], ndcg["metric"]) == ("table", "ndcg@3")
    assert ndcg["summary"].startswith("ndcg@3 of 'table' fell from 1.0000 to ")
    assert ndcg["details"] == ["questions that dropped, worst first:", "  q01: 1.0000 -> 0.0000 (-1.0000)"]
    assert "unavailable" not in results  # every retriever ran

    capsys.readouterr()
    assert main(["comment", "results.json"]) == 0
    comment = capsys.readouterr().out.splitlines()
    assert comment[0] == MARKER
    assert "- **门禁 / gate**：❌ 4 项未通过 / 4 failed; 4 项未变 / 4 unchanged" in comment
    assert "- ❌ **table · ndcg@3** — rag::table::ndcg@3" in comment
    assert "    q01: 1.0000 -> 0.0000 (-1.0000)" in comment


def test_a_passing_run_records_no_failures(pytester: pytest.Pytester) -> None:
    write_project(pytester.path)
    pytester.runpytest("--rag-update-baseline", *RUN)
    pytester.runpytest("--rag-eval", "--rag-json", "results.json", *RUN).assert_outcomes(passed=8)
    assert json.loads((pytester.path / "results.json").read_text(encoding="utf-8"))["failures"] == []


def test_only_the_retrievers_that_ran_are_written(pytester: pytest.Pytester) -> None:
    write_project(pytester.path)
    pytester.runpytest("--rag-eval", "-k", "bm25", "--rag-json", "results.json", *RUN)
    results = json.loads((pytester.path / "results.json").read_text(encoding="utf-8"))
    assert list(results["retrievers"]) == ["bm25"]


def test_a_directory_is_refused(pytester: pytest.Pytester) -> None:
    write_project(pytester.path)
    (pytester.path / "out").mkdir()
    result = pytester.runpytest("--rag-eval", "--rag-json", "out", *RUN)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --rag-json out: is a directory; give a file path"])


def test_every_phase_is_timed_in_the_results_and_printed_but_never_in_the_baseline(pytester: pytest.Pytester) -> None:
    write_project(pytester.path)
    recorded = pytester.runpytest("--rag-update-baseline", *RUN)
    recorded.stdout.fnmatch_lines(["rag: time: load and validate *s, * run bm25 *s, *; total *s"])
    first = baseline(pytester.path)
    assert "phases" not in first
    result = pytester.runpytest("--rag-eval", "--rag-no-reuse", "--rag-json", "results.json", "--rag-report", "report.md",
                                *RUN)
    phases = json.loads((pytester.path / "results.json").read_text(encoding="utf-8"))["phases"]
    assert {"load and validate", "build bm25", "tokenizing", "run bm25", "build table", "run table", "scoring", "reports"} <= set(phases)
    assert all(isinstance(seconds, float) and seconds >= 0 for seconds in phases.values())
    line = next(line for line in result.stdout.lines if line.startswith("rag: time: "))
    assert all(f"{name} " in line for name in phases)
    pytester.runpytest("--rag-update-baseline", *RUN)
    assert baseline(pytester.path) == first
