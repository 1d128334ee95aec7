"""A `table` or `sql` retriever on a runner that has no database URL (GitHub's runners cannot reach the
team's server): unavailable, named in the summary's first line, never silently green; `required = true`
fails instead."""
from __future__ import annotations

import pytest
from projects import RUN, retriever, write_project

TEAM = (retriever("bm25", "bm25") + retriever("prod", "table", table="public.docs")
        + retriever("fts", "sql", query="SELECT id FROM docs WHERE body @@ %(query)s LIMIT %(k)s"))
REASON = "no database URL to read the team's table: set the secret RAG_EVAL_DATABASE_URL or pass --rag-db-url DSN"


@pytest.fixture(autouse=True)
def no_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAG_EVAL_DATABASE_URL", raising=False)


def test_without_a_url_the_seeded_retrievers_pass_and_the_first_line_names_the_others(
    pytester: pytest.Pytester,
) -> None:
    """Before, the run failed 8 items with `retriever 'prod' reads the team's own table: pass --rag-db-url`,
    so a team deselected them (-k "not prod") and a broken secret then went unnoticed."""
    write_project(pytester.path, retrievers=TEAM)
    pytester.runpytest("--rag-update-baseline", *RUN).assert_outcomes(passed=4, skipped=8)
    result = pytester.runpytest("--rag-eval", "-rs", *RUN)
    result.assert_outcomes(passed=4, skipped=8)
    lines = result.stdout.lines
    first = lines[lines.index(next(line for line in lines if "rag retrieval" in line and "=" in line)) + 1:]
    assert next(line for line in first if line.strip()) == f"k=3, 5 answerable questions; unavailable: prod, fts ({REASON})"
    result.stdout.fnmatch_lines([f"SKIPPED * {REASON}"])


def test_required_makes_an_unreachable_team_retriever_fail_in_one_line(pytester: pytest.Pytester) -> None:
    write_project(pytester.path, retrievers=TEAM.replace('type = "table"', 'type = "table"\nrequired = true'))
    result = pytester.runpytest("--rag-update-baseline", *RUN)
    result.assert_outcomes(passed=4, failed=4, skipped=4)
    line = f"retriever 'prod' is required (required = true) but cannot run here: {REASON}"
    result.stdout.fnmatch_lines([line, f"prod: error: {line}"])
    assert "Traceback" not in result.stdout.str()


def test_required_must_be_a_boolean(pytester: pytest.Pytester) -> None:
    write_project(pytester.path, retrievers=TEAM.replace('type = "table"', 'type = "table"\nrequired = "yes"'))
    result = pytester.runpytest("--rag-eval", *RUN)
    assert "required" in result.stderr.str() and result.ret == pytest.ExitCode.USAGE_ERROR


def test_the_job_summary_names_them_in_its_first_line(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """On the run's page too: before, the job summary's first lines named the verdict alone, so a broken
    secret showed only in the skipped items further down."""
    write_project(pytester.path, retrievers=TEAM)
    pytester.runpytest("--rag-update-baseline", *RUN).assert_outcomes(passed=4, skipped=8)
    summary = pytester.path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    pytester.runpytest("--rag-eval", *RUN).assert_outcomes(passed=4, skipped=8)
    result = next(line for line in summary.read_text(encoding="utf-8").splitlines() if line.strip() and not line.startswith("#"))
    assert result.endswith(f"; unavailable: `prod`, `fts` ({REASON})"), result
