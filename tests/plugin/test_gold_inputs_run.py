"""The gate's run says when a budget is below most chunks of a chunking (one warning line, in the header and
after the summary), and refuses a gold span that does not hold its text in documents no baseline recorded."""
from __future__ import annotations

import json

import pytest
from projects import RUN, documents_config, write_documents_project

BM25 = '[tool.ragretrieval.retrievers.bm25]\ntype = "bm25"\n'


def test_a_budget_most_chunks_do_not_fit_is_one_warning_line(pytester: pytest.Pytester) -> None:
    write_documents_project(pytester.path, documents_config(["recall", "char_recall@30c"], BM25, k=3))
    result = pytester.runpytest("--rag-update-baseline", *RUN)
    assert result.ret == 0, result.stdout.str()
    warning = ("*warning: budget 30c: 3 of the default chunking's 10 chunks fit in 30 characters (its median chunk "
               "has 47), so the budget metrics at 30c score little there; raise the budget or cut smaller chunks")
    result.stdout.fnmatch_lines([f"rag: {warning}", warning.lstrip("*")])


def test_a_span_that_does_not_hold_its_text_stops_the_run_in_one_line(pytester: pytest.Pytester) -> None:
    write_documents_project(pytester.path, documents_config(["recall"], BM25))
    evalset = pytester.path / "fixtures" / "evalset.jsonl"
    lines = evalset.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    doc = sorted(p.relative_to(pytester.path / "kb").as_posix() for p in (pytester.path / "kb").rglob("*.txt"))[0]
    text = (pytester.path / "kb" / doc).read_text(encoding="utf-8")
    first.pop("relevant_text", None)
    first["relevant_spans"] = [{"doc": doc, "start": 1, "end": 1 + 10, "text": text[:10]}]
    evalset.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n", encoding="utf-8")
    result = pytester.runpytest("--rag-eval", *RUN)
    assert result.ret != 0
    result.stderr.fnmatch_lines([f"*evalset.jsonl:1: relevant_spans[[]0[]]: '{doc}' holds * at 1..11, not its text *"
                                 "set start 0 and end 10"])
