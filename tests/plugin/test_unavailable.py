"""A retriever that cannot run where the baseline is recorded: skipped, remembered, never a false pass."""
from __future__ import annotations

import json

import pytest
from projects import RUN, baseline, write_project

FLAKY = '''
from pathlib import Path
from pytest_ragretrieval.core.errors import RetrieverUnavailable


def make(ctx):
    if (Path(__file__).parent / "offline").exists():
        raise RetrieverUnavailable("model 'acme/reranker' is not available here")
    return lambda query, k: ["travel-001"][:k]
'''
RETRIEVERS = """
[tool.ragretrieval.retrievers.bm25]
type = "bm25"

[tool.ragretrieval.retrievers.remote]
type = "python"
factory = "remote:make"
"""


@pytest.fixture
def recorded_offline(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(remote=FLAKY)
    write_project(pytester.path, retrievers=RETRIEVERS)
    (pytester.path / "offline").touch()
    result = pytester.runpytest("--rag-update-baseline", *RUN)
    result.assert_outcomes(passed=4, skipped=4)
    result.stdout.fnmatch_lines(["rag: remote recorded as unavailable: model 'acme/reranker' is not available here"])
    return pytester


def test_the_baseline_remembers_why_it_could_not_run(recorded_offline: pytest.Pytester) -> None:
    doc = baseline(recorded_offline.path)
    assert doc["unavailable"] == {"remote": "model 'acme/reranker' is not available here"}
    assert list(doc["retrievers"]) == ["bm25"]


def test_where_it_runs_its_items_are_skipped_until_recorded(recorded_offline: pytest.Pytester) -> None:
    (recorded_offline.path / "offline").unlink()
    result = recorded_offline.runpytest("--rag-eval", "-rs", *RUN)
    result.assert_outcomes(passed=4, skipped=4)
    result.stdout.fnmatch_lines(
        ["SKIPPED * remote has no baseline value: it could not run where the baseline was recorded (model*"]
    )
    recorded_offline.runpytest("--rag-update-baseline", "-k", "remote", *RUN).assert_outcomes(passed=4)
    assert "unavailable" not in baseline(recorded_offline.path)
    recorded_offline.runpytest("--rag-eval", *RUN).assert_outcomes(passed=8)


def test_an_update_that_does_not_select_it_keeps_the_record(recorded_offline: pytest.Pytester) -> None:
    recorded_offline.runpytest("--rag-update-baseline", "-k", "bm25", *RUN).assert_outcomes(passed=4)
    assert baseline(recorded_offline.path)["unavailable"] == {"remote": "model 'acme/reranker' is not available here"}


def test_results_name_the_retrievers_that_could_not_run(recorded_offline: pytest.Pytester) -> None:
    recorded_offline.runpytest("--rag-eval", "--rag-json", "results.json", *RUN).assert_outcomes(passed=4, skipped=4)
    results = json.loads((recorded_offline.path / "results.json").read_text(encoding="utf-8"))
    assert results["unavailable"] == {"remote": "model 'acme/reranker' is not available here"}
    assert list(results["retrievers"]) == ["bm25"] and results["failures"] == []


def test_every_report_and_the_results_mark_it_unavailable(recorded_offline: pytest.Pytester) -> None:
    reason = "model 'acme/reranker' is not available here"
    result = recorded_offline.runpytest(
        "--rag-eval", "--rag-json", "out.json", "--rag-report", "report.md", "--rag-html", "report.html", *RUN
    )
    result.assert_outcomes(passed=4, skipped=4)
    result.stdout.fnmatch_lines([f"remote: unavailable: {reason}"])
    results = json.loads((recorded_offline.path / "out.json").read_text(encoding="utf-8"))
    assert results["unavailable"] == {"remote": reason} and list(results["retrievers"]) == ["bm25"]
    markdown = (recorded_offline.path / "report.md").read_text(encoding="utf-8").splitlines()
    assert f"- remote: unavailable: {reason}" in markdown
    assert any(line.startswith("| remote ") and "| unavailable |" in line for line in markdown)
    assert 'data-status="unavailable"' in (recorded_offline.path / "report.html").read_text(encoding="utf-8")


RERANK_MISSING = """
[tool.ragretrieval.retrievers.bm25]
type = "bm25"

[tool.ragretrieval.retrievers.reranked]
type = "rerank"
source = "bm25"
model = "nobody/no-such-reranker"
"""
RECORD_IMPORTS = '''
import sys
from pathlib import Path


def pytest_unconfigure(config):
    heavy = [name for name in ("torch", "transformers", "sentence_transformers") if name in sys.modules]
    Path("imports.txt").write_text(" ".join(heavy) or "none", encoding="utf-8")
'''


def test_a_reranker_whose_model_is_absent_is_unavailable_before_torch_is_imported(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("HF_HUB_CACHE", str(pytester.path / "empty-hub-cache"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    write_project(pytester.path, retrievers=RERANK_MISSING)
    pytester.makeconftest(RECORD_IMPORTS)
    result = pytester.runpytest_subprocess("--rag-eval", "--rag-report", "report.md", "-rs", *RUN)
    result.stdout.fnmatch_lines([
        "*SKIPPED*cross-encoder 'nobody/no-such-reranker' could not be loaded (no local copy and no Hugging Face hub reachable)*",
    ])
    assert (pytester.path / "imports.txt").read_text(encoding="utf-8") == "none"
    report = (pytester.path / "report.md").read_text(encoding="utf-8")
    assert "- 重排模型 / rerankers：nobody/no-such-reranker（不可用 / unavailable）" in report.splitlines()


WITHOUT_TORCH = '''
import sys
from importlib.abc import MetaPathFinder


class Hidden(MetaPathFinder):
    """torch cannot be found, as on a machine where the `local` extra is not installed."""

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "torch":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Hidden())
'''


def test_a_reranker_without_torch_is_skipped_naming_the_package_not_the_hub(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 52: without torch the reason was about the Hugging Face hub ("no local copy and no Hugging Face hub
    reachable"), which sent a user looking for a network; the package and its extra are what is missing."""
    pytester.makeconftest(WITHOUT_TORCH)
    write_project(pytester.path, retrievers=RETRIEVERS.split("[tool.ragretrieval.retrievers.remote]")[0] + """
[tool.ragretrieval.retrievers.reranked]
type = "rerank"
source = "bm25"
model = "acme/absent-reranker"
""")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result = pytester.runpytest_subprocess("--rag-update-baseline", *RUN)
    result.assert_outcomes(passed=4, skipped=4)
    reason = baseline(pytester.path)["unavailable"]["reranked"]
    assert reason == ("cross-encoder 'acme/absent-reranker' needs torch, which is not installed; "
                      "install pytest-ragretrieval[local] (the README's install line with [local])")
    assert "Hugging Face" not in result.stdout.str()
