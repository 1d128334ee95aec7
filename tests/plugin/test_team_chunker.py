"""The gate with a team's `python` chunker that misbehaves: it runs in a process of its own, so each
misdeed is one line naming the chunker and the document, with the usage-error status; one that exits
with status 0 never ends the gate with 0 and no output."""
from __future__ import annotations

import pytest
from projects import RUN, documents_config, one_line_error, write_documents_project

CHUNKER = '''
import os
import sys
import time


def split(text):
    misdeed = os.environ.get("RAG_TEST_CHUNKER", "")
    if misdeed == "exit0":
        os._exit(0)
    if misdeed == "sys.exit":
        sys.exit(0)
    if misdeed == "raise":
        raise KeyError("heading")
    if misdeed == "hang":
        time.sleep(120)
    if misdeed == "recurse":
        return split(text)
    if misdeed == "not json":
        return [(0, len(text), {"seen": {1, 2}})]
    if misdeed == "unordered":
        return [(1, len(text)), (0, 1)]
    if misdeed == "twice":
        return [(0, len(text)), (0, len(text))]
    if misdeed == "stdout" and not sys.stdout.closed:
        sys.stdout.close()
        os.close(1)
    return [(0, len(text))]
'''
TABLE = 'type = "python"\npython = "chunker:split"\ntimeout = 1'


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    config = documents_config(["recall@2"], '[tool.ragretrieval.retrievers.bm25]\ntype = "bm25"\n')
    write_documents_project(pytester.path, config.replace('type = "sentences"\nsize = 1', TABLE))
    (pytester.path / "chunker.py").write_text(CHUNKER, encoding="utf-8")
    return pytester


@pytest.mark.parametrize(("misdeed", "message"), [
    ("exit0", "ERROR: chunker 'chunker:split' on document 'it/laptop.txt': its process failed (it ended with exit "
              "status 0 before its answer); a chunker returns its pairs, it must not exit or end its process"),
    ("sys.exit", "ERROR: chunker 'chunker:split' raised SystemExit: 0 on document 'it/laptop.txt'; fix the chunker"),
    ("raise", "ERROR: chunker 'chunker:split' raised KeyError: 'heading' on document 'it/laptop.txt'; fix the chunker"),
    ("hang", "ERROR: chunker 'chunker:split' did not return within 1 s on document 'it/laptop.txt' (its process was "
             "stopped); make it faster, or raise its table's timeout"),
    ("recurse", "ERROR: chunker 'chunker:split' raised RecursionError: maximum recursion depth exceeded on document "
                "'it/laptop.txt'; fix the chunker"),
    ("not json", "ERROR: chunker 'chunker:split' returned metadata that is not JSON for document 'it/laptop.txt' "
                 "(Object of type set is not JSON serializable); return strings, numbers, booleans, None, lists and "
                 "dicts"),
    ("unordered", "ERROR: chunker 'chunker:split' returned (0, 1) after (1, 154) for document 'it/laptop.txt'; "
                  "return the pairs in order, by start then end, each once"),
    ("twice", "ERROR: chunker 'chunker:split' returned (0, 154) twice for document 'it/laptop.txt'; return the "
              "pairs in order, by start then end, each once"),
])
def test_a_chunker_that_misbehaves_is_one_line_and_fails_the_gate(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, misdeed: str, message: str) -> None:
    monkeypatch.setenv("RAG_TEST_CHUNKER", misdeed)
    result = project.runpytest_subprocess("--rag-eval", *RUN, timeout=60)
    assert one_line_error(result) == message
    assert "INTERNALERROR" not in result.stdout.str()


def test_a_chunker_that_closes_its_stdout_leaves_the_gates_alone(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_TEST_CHUNKER", "stdout")
    result = project.runpytest_subprocess("--rag-update-baseline", *RUN, timeout=60)
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["rag: wrote baselines/retrieval.json", "*1 passed*"])
