"""The run header's line on the significance test names the tolerance it is combined with (issue 40,
item 5): on 571473c it said only "a drop fails only when a paired randomization test gives p < 0.05",
while a drop within the tolerance passes whatever its p."""
from __future__ import annotations

from pathlib import Path

import pytest

from pytest_ragretrieval.config.settings import load_config
from pytest_ragretrieval.evalset.records import Question
from pytest_ragretrieval.gate.report import header_lines


def significance_line(tmp_path: Path, *settings: str) -> str:
    (tmp_path / "rag.toml").write_text("\n".join(['chunks = "c.jsonl"', 'evalset = "e.jsonl"', "k = 3",
                                                  'metrics = ["ndcg", "recall"]', *settings,
                                                  "[retrievers.one]", 'type = "bm25"']) + "\n", encoding="utf-8")
    config = load_config(str(tmp_path / "rag.toml"), tmp_path)
    return next(line for line in header_lines(config, (), (Question("q1", "query", {"a": 1}),), None, False) if "a drop fails" in line)


@pytest.mark.parametrize(("tolerance", "expected"), [
    ("0.02", "rag: a drop fails only when it exceeds the tolerance (0.02) and a paired randomization test "
             "gives p < 0.05"),
    ("{default = 0.02, recall = 0.05}", "rag: a drop fails only when it exceeds the tolerance (ndcg@3 0.02, "
                                        "recall@3 0.05) and a paired randomization test gives p < 0.05"),
    ("0", "rag: a drop fails only when a paired randomization test gives p < 0.05"),
])
def test_the_header_names_the_tolerance_beside_the_test(tmp_path: Path, tolerance: str, expected: str) -> None:
    assert significance_line(tmp_path, 'significance = "randomization"', f"tolerance = {tolerance}") == expected
