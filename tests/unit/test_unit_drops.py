"""bar/units.py: a chunk-id re-chunk's drops told apart by the relabel's mapping, question by question."""
from __future__ import annotations

from pathlib import Path

from pytest_ragretrieval.bar.exam import Exam, Scorer
from pytest_ragretrieval.bar.units import RETRIEVER, UNIT_ONLY, UnitDrops, carried, unit_drops
from pytest_ragretrieval.evalset.jsonl import load_chunks
from pytest_ragretrieval.evalset.records import Question
from pytest_ragretrieval.labels.relabel import unit_map
from pytest_ragretrieval.scoring.metrics import MetricSpec

SCORER = Scorer((MetricSpec.parse("recall@2", 2),))
MAPPING = {"A": ("A2", "A1"), "B": ("B1", "B2")}
"""A split in two, its second half holding more of its text; so was B."""
BASE = Exam.of_today([Question("q1", "", {"A": 1}), Question("q2", "", {"C": 1}), Question("q3", "", {"B": 1})],
                     "the base's exam")
TODAY = Exam.of_today([Question("q1", "", {"A1": 1, "A2": 1}), Question("q2", "", {"C": 1}),
                       Question("q3", "", {"B1": 1, "B2": 1})], "today's exam")
APPROVED = {"q1": ["A", "X"], "q2": ["C", "X"], "q3": ["B", "X"]}


def test_an_approved_ranking_is_carried_one_place_one_chunk() -> None:
    assert carried(["A", "X", "B", "A2"], MAPPING) == ("A2", "X", "B1")
    assert carried(["X", "Y"], MAPPING) == ("X", "Y")


def drops(today: dict[str, list[str]]) -> UnitDrops:
    return unit_drops("recall@2", "r", APPROVED, BASE, TODAY, today, MAPPING, SCORER, ["q1", "q2", "q3"])


def test_a_half_found_where_the_whole_was_is_unit_only() -> None:
    found = drops({"q1": ["A1", "X"], "q2": ["C", "X"], "q3": ["B2", "X"]})
    assert found == UnitDrops(unit_only=("q1", "q3"))
    assert found.kind == UNIT_ONLY


def test_a_drop_on_untouched_gold_or_below_the_carried_ranking_is_real() -> None:
    found = drops({"q1": ["X", "Y"], "q2": ["X", "Y"], "q3": ["B1", "X"]})
    assert found == UnitDrops(unit_only=("q3",), untouched=("q2",), unexplained=("q1",))
    assert found.kind == RETRIEVER
    assert found.text() == ("not from the changed unit: drops on 1 question (q2) whose gold did not change and "
                            "1 question (q1) relabelled, below the approved ranking carried through the relabel's "
                            "mapping; 1 more only from the changed unit")


def test_no_drop_is_no_kind() -> None:
    assert drops({"q1": ["A1", "A2"], "q2": ["C"], "q3": ["B1", "B2"]}).kind == ""


def test_the_relabel_mapping_puts_the_chunk_holding_most_of_the_text_first() -> None:
    """The English fixture: each split gold chunk's second sentence is the longer one."""
    data = Path(__file__).parent / "data" / "rechunk_english"
    before = {chunk.id: chunk.text for chunk in load_chunks(data / "chunks_before.jsonl")}
    gold = {cid: before[cid] for cid in ("ignore-001", "versioning-001", "conflict-001")}
    assert unit_map(load_chunks(data / "chunks_after.jsonl"), gold) == {
        "ignore-001": ("ignore-001b", "ignore-001a"), "versioning-001": ("versioning-001b", "versioning-001a")}
