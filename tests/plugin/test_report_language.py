"""`report_language = "en"` on an English project (tests/english_project): no CJK character in the
terminal, the Markdown, the HTML, the job summary or the comment; and the first run's line on jieba
cutting an English corpus while `tokenizer` is unset."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from projects import RUN
from report_samples import CJK

from pytest_ragretrieval.cli import main as ragretrieval

ENGLISH = Path(__file__).resolve().parents[1] / "english_project"
JIEBA = 'rag: note: `tokenizer` is unset, so BM25 cuts this mostly non-CJK corpus with jieba*tokenizer = "english"*'
NOTED = "rag: note: `tokenizer` is unset"


def english(folder: Path, *settings: str) -> Path:
    """The English project copied into `folder`, with `settings` added to its [tool.ragretrieval]."""
    shutil.copytree(ENGLISH, folder, dirs_exist_ok=True)
    config = folder / "pyproject.toml"
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace('report_language = "en"\n', 'report_language = "en"\n' + "".join(
        f"{line}\n" for line in settings)), encoding="utf-8")
    return folder


def cjk(text: str) -> list[str]:
    return [line for line in text.splitlines() if CJK.search(line)]


def test_english_reports_hold_no_cjk_character(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The reports' headings were Chinese first whatever the team's language (issue 44): in "en" the
    terminal, Markdown, HTML, job summary and comment of a failing run hold no CJK character."""
    folder = english(pytester.path)
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    chunks = folder / "fixtures" / "chunks.jsonl"
    edited = chunks.read_text(encoding="utf-8").replace("The default listening port is", "Defaults:")
    chunks.write_text(edited.replace("keeps folders in sync", "runs"), encoding="utf-8")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(folder / "summary.md"))
    failed = pytester.runpytest("--rag-eval", "--rag-report", "r.md", "--rag-html", "r.html", "--rag-json", "r.json",
                                *RUN)
    assert failed.ret == pytest.ExitCode.TESTS_FAILED
    markdown = (folder / "r.md").read_text(encoding="utf-8")
    assert "## Failures" in markdown and "## Questions that changed" in markdown
    assert "### Comparisons" in markdown and "**regressed** (" in markdown
    assert cjk(failed.stdout.str()) == [] and cjk(failed.stderr.str()) == []
    for name in ("r.md", "r.html", "summary.md"):
        assert cjk((folder / name).read_text(encoding="utf-8")) == [], name
    monkeypatch.chdir(folder)
    capsys.readouterr()  # what the in-process runs printed
    assert ragretrieval(["comment", "r.json", "--artifact-url", "https://example.invalid/a"]) == 0
    comment = capsys.readouterr().out
    assert comment.startswith("<!-- pytest-ragretrieval -->\n## RAG retrieval evaluation report")
    assert cjk(comment) == []


def test_the_first_run_names_jieba_on_an_english_corpus_until_the_tokenizer_is_set(pytester: pytest.Pytester) -> None:
    """Nothing said that the default tokenizer, jieba, cut an English corpus (issue 44)."""
    english(pytester.path)
    unset = pytester.runpytest("--rag-update-baseline", *RUN)
    assert unset.ret == 0
    unset.stdout.fnmatch_lines([JIEBA])
    again = pytester.runpytest("--rag-eval", *RUN)  # a baseline exists: no longer the first run
    assert again.ret == 0 and NOTED not in again.stdout.str()
    shutil.rmtree(pytester.path / "baselines")
    english(pytester.path, 'tokenizer = "english"')
    chosen = pytester.runpytest("--rag-update-baseline", *RUN)
    assert chosen.ret == 0 and NOTED not in chosen.stdout.str()


@pytest.mark.parametrize("language", ["en", "both"])
def test_the_job_summary_and_a_comment_without_results_follow_report_language(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], language: str
) -> None:
    """Issue 52: `pr-check`'s job summary and a `comment` rendered without a results file were Chinese-first
    under `report_language = "en"`: they now follow the config `diff` read, which CHANGES.json carries."""
    folder = english(pytester.path)
    config = folder / "pyproject.toml"
    config.write_text(config.read_text(encoding="utf-8").replace(
        'report_language = "en"', f'report_language = "{language}"'), encoding="utf-8")
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    monkeypatch.chdir(folder)
    shutil.copy(folder / "baselines" / "retrieval.json", folder / "old.json")
    assert ragretrieval(["diff", "old.json", "baselines/retrieval.json", "--old-config", "pyproject.toml",
                         "--new-config", "pyproject.toml", "--json", "changes.json"]) == 0
    (folder / "event.json").write_text('{"pull_request": {"number": 1, "labels": [], "head": {"sha": "' + "0" * 40
                                       + '", "repo": {"full_name": "team/repo"}}, "base": {"repo": {"full_name": '
                                       '"team/repo"}}}}', encoding="utf-8")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(folder / "summary.md"))
    monkeypatch.setenv("GITHUB_OUTPUT", str(folder / "output"))
    assert ragretrieval(["pr-check", "changes.json", "--event", "event.json", "--json", "decision.json"]) == 0
    assert ragretrieval(["comment", "--baseline-changes", "changes.json", "--decision", "decision.json",
                         "--gate-outcome", "failure"]) == 0
    comment = capsys.readouterr().out.split("<!-- pytest-ragretrieval -->", 1)[1]
    summary = (folder / "summary.md").read_text(encoding="utf-8")
    if language == "en":
        assert summary.startswith("## Baseline check\n\n✅ not lowered")
        assert "- **gate**: ❌ failed (see the job log)" in comment
        assert cjk(summary) == [] and cjk(comment) == []
    else:
        assert summary.startswith("## 基线检查 / Baseline check\n\n✅ 未降低 / not lowered")
        assert "- **门禁 / gate**：❌ 未通过 / failed (see the job log)" in comment
