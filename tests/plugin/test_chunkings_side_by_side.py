"""Chunkings side by side (issue 43 item 4): two chunkings of one set of documents in one session, a
retriever on each, one A/B table; the pair compared on span metrics only; each chunking's labels and
fingerprint; a second run reuses everything."""
from __future__ import annotations

import json

import pytest
from projects import RUN, documents_config, merged_shards, one_line_error, write_documents_project

CONFIG = documents_config(
    ["recall", "char_recall", "char_iou", "char_recall@100c"],
    '[tool.ragretrieval.chunkings.big]\ntype = "sentences"\nsize = 3\n\n'
    '[tool.ragretrieval.retrievers.bm25_small]\ntype = "bm25"\n\n'
    '[tool.ragretrieval.retrievers.bm25_big]\ntype = "bm25"\nchunking = "big"\n',
    lines='compare = [["bm25_small", "bm25_big"]]\n')


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    write_documents_project(pytester.path, CONFIG)
    return pytester


def test_two_chunkings_in_one_table_compared_on_span_metrics(project: pytest.Pytester) -> None:
    """One session, two chunkings (one and three sentences), bm25 on each: each retriever reads its own
    chunks and is scored by its own chunking's labels; the pair has p-values on the span metrics and no
    chunk-id comparison, with the line that says why; a second run reuses both rankings."""
    first = project.runpytest("--rag-update-baseline", "--rag-json=results.json", *RUN)
    assert first.ret == 0, first.stdout.str()
    out = first.stdout.str()
    first.stdout.fnmatch_lines([
        "rag: 14 chunks in 2 chunkings (default, big), 4 questions*",
        "*bm25_small vs bm25_big: chunkings 'default' and 'big' differ, so they are compared on span metrics "
        "only; their chunk-id metrics are shown, never compared*",
    ])
    assert "bm25_small" in out and "bm25_big" in out
    results = json.loads((project.path / "results.json").read_text(encoding="utf-8"))
    small, big = (results["retrievers"][name]["questions"] for name in ("bm25_small", "bm25_big"))
    assert small["laptop"]["ranking"][0] == "it/laptop.txt#0"
    assert all(chunk_id.split("#")[1] == "big" for q in big.values() for chunk_id in q["ranking"])
    assert big["laptop"]["ranking"][0] == "it/laptop.txt#big#0"
    # each scored under its own labels: both find the laptop answer's one gold chunk first
    assert small["laptop"]["metrics"]["recall@2"] == 1.0 == big["laptop"]["metrics"]["recall@2"]
    comparisons = results["comparisons"]
    labels = {c["metric"] for c in comparisons}
    assert labels == {"char_recall@2", "char_iou@2", "char_recall@100c"}  # a budget is a span metric too
    assert all(c["a"] == "bm25_small" and c["b"] == "bm25_big" and c["p_value"] is not None for c in comparisons)
    recorded = json.loads((project.path / "baselines" / "retrieval.json").read_text(encoding="utf-8"))
    assert recorded["fingerprint"]["chunks"]["chunkings"] == {"big": {"type": "sentences", "size": 3, "overlap": 0, "version": 2}}
    assert recorded["fingerprint"]["retrievers"]["bm25_big"]["chunking"] == "big"
    assert "chunking" not in recorded["fingerprint"]["retrievers"]["bm25_small"]
    second = project.runpytest("--rag-eval", *RUN)
    assert second.ret == 0, second.stdout.str()
    second.stdout.fnmatch_lines(["*bm25_small: rankings reused*", "*bm25_big: rankings reused*"], consecutive=False)


def test_k_selects_one_chunking(project: pytest.Pytester) -> None:
    """`-k bm25_big` runs the big chunking's retriever alone, against a baseline of both."""
    assert project.runpytest("--rag-update-baseline", *RUN).ret == 0
    result = project.runpytest("--rag-eval", "-k", "bm25_big", "--rag-no-reuse", "-v", *RUN)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*bm25_big*PASSED*"])
    assert "bm25_small" not in "".join(line for line in result.stdout.lines if "PASSED" in line)


@pytest.mark.parametrize(("extra", "message"), [
    ('\n[tool.ragretrieval.retrievers.other]\ntype = "bm25"\nchunking = "tiny"\n',
     "retrievers.other]: chunking 'tiny' is not a [tool.ragretrieval.chunkings.NAME] table (configured: big)"),
    ('\n[tool.ragretrieval.retrievers.both]\ntype = "hybrid"\nsources = ["bm25_small", "bm25_big"]\n',
     "retrievers.both]: source 'bm25_big' reads chunking 'big' and both reads 'default'; a retriever's "
     "sources share its chunking"),
])
def test_chunking_config_errors_are_one_line(project: pytest.Pytester, extra: str, message: str) -> None:
    """A retriever naming an unknown chunking, and a hybrid over two chunkings, stop the run in one line."""
    (project.path / "pyproject.toml").write_text(CONFIG + extra, encoding="utf-8")
    assert message in one_line_error(project.runpytest("--rag-eval", *RUN))


def test_shards_merge_with_chunkings(project: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    """`ragretrieval merge` scores each retriever by its own chunking's labels, as the session did: scored by
    every chunking's labels together, the partials' values disagreed and the merge stopped (exit 2)."""
    merged = merged_shards(project, capsys)
    for name in ("bm25_small", "bm25_big"):
        assert merged["retrievers"][name]["questions"]["laptop"]["metrics"]["recall@2"] == 1.0
