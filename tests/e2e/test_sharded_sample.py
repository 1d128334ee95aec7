"""Sharded runs with a vector retriever on the embedded database: what the runner adds to the
fingerprint (the embedder's id and dimension, the index) travels in the partial records, and the
merge gives the unsharded run's results."""
from __future__ import annotations

import json

import pytest
from projects import RUN, retriever, without_timings, write_e2e_project

from pytest_ragretrieval.cli import main

pytestmark = pytest.mark.usefixtures("minilm")


def test_vector_shards_merged_are_one_run(pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    write_e2e_project(pytester.path, retriever("vector", "vector") + retriever("bm25", "bm25"), "cache")
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    assert pytester.runpytest("--rag-eval", "--rag-no-reuse", "--rag-json=whole.json", *RUN).ret == 0
    for index in (1, 2):
        result = pytester.runpytest("--rag-eval", f"--rag-shard={index}/2", f"--rag-json=part{index}.json", *RUN)
        assert result.ret == 0, result.stdout.str()
    partial = json.loads((pytester.path / "part1.json").read_text(encoding="utf-8"))
    assert partial["setup"]["vector"]["embedding"]["dimension"] == 384
    capsys.readouterr()
    assert main(["merge", "part1.json", "part2.json", "--json", "merged.json"]) == 0, capsys.readouterr()
    assert without_timings(pytester.path / "merged.json") == without_timings(pytester.path / "whole.json")
