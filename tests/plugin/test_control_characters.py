"""A line break (or any control character) in a query or in a retriever's error message cannot break
the pull-request flow: the verdict stays one line, with the character escaped as Python writes it,
and the results file the gate writes is read by every command (issue 21, item 7)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from projects import GOLD, QUESTIONS, set_rankings, write_project

RUN = ("-p", "no:cacheprovider")
SETTINGS = 'fail_on = ["metric", "question"]\ntolerance = 0.5'
TABLE = '[tool.ragretrieval.retrievers.table]\ntype = "python"\nfactory = "table_retriever:make"\n'
QUERY = "ORDER-2024\n是什么\t错误\u2028"
QUESTIONS_WITH_BREAKS = [dict(q, query=QUERY) if q["id"] == "q02" else q for q in QUESTIONS]
BROKEN = '''
def make(ctx):
    def retrieve(query, k):
        raise ValueError("first line\\nsecond line")
    return retrieve
'''


def ragretrieval(folder: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "import sys; from pytest_ragretrieval.cli import main; sys.exit(main())",
                           *argv], cwd=folder, capture_output=True, text=True, timeout=120)


def test_a_lost_hit_of_a_query_with_line_breaks_is_one_line_and_every_command_reads_the_results(
    pytester: pytest.Pytester,
) -> None:
    write_project(pytester.path, settings=SETTINGS, retrievers=TABLE + "\n[tool.ragretrieval.retrievers.broken]\n"
                  'type = "python"\nfactory = "broken_retriever:make"\n', questions=QUESTIONS_WITH_BREAKS)
    (pytester.path / "broken_retriever.py").write_text(BROKEN, encoding="utf-8")
    set_rankings(pytester.path, GOLD, QUESTIONS_WITH_BREAKS)
    pytester.runpytest("--rag-update-baseline", "-k", "table", *RUN)
    set_rankings(pytester.path, dict(GOLD, q02=["error-002"]), QUESTIONS_WITH_BREAKS)
    result = pytester.runpytest("--rag-eval", "--rag-json=results.json", *RUN)
    result.stdout.fnmatch_lines([
        "question q02 (ORDER-2024\\n是什么\\t错误\\u2028) was a hit within 3 for 'table' and is no longer one",
        "*retriever 'broken' raised ValueError: first line\\nsecond line (*broken_retriever.py:4)*",
    ])
    results = json.loads((pytester.path / "results.json").read_text(encoding="utf-8"))
    summaries = [failure["summary"] for failure in results["failures"]]
    assert any("ORDER-2024\\n是什么" in summary for summary in summaries), summaries
    for argv, codes in ((["comment", "results.json"], (0,)), (["suspects", "results.json"], (0,)),
                        (["diff", "results.json", "results.json"], (0, 1))):
        done = ragretrieval(pytester.path, *argv)
        assert done.returncode in codes, (argv, done.stderr)
        assert done.stderr == "", done.stderr
