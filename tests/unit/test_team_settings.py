"""The search settings a `table` or `sql` retriever measures under: the config's pins over the values a
session of the gate's role starts with, each with where it came from (database/team.py, no server)."""
from __future__ import annotations

import hashlib
from typing import Any, cast

from pytest_ragretrieval.database.session import TeamCorpus
from pytest_ragretrieval.database.team import corpus_difference, in_effect
from pytest_ragretrieval.evalset.records import Chunk

FOUND = {"hnsw.ef_search": ("4", "role"), "hnsw.iterative_scan": ("off", "server default"),
         "ivfflat.probes": ("1", "server default")}


def test_without_a_pin_the_sessions_own_values_are_recorded_with_their_source() -> None:
    session, lines = in_effect(FOUND, {})
    assert session == {"hnsw.ef_search": "4 (role)", "hnsw.iterative_scan": "off (server default)",
                       "ivfflat.probes": "1 (server default)"}
    assert lines == []


def test_a_pin_is_measured_and_a_differing_database_value_is_one_line() -> None:
    """Before, a pin of 40 hid the role's 4 (the run's SET LOCAL overrode it, and nothing said so)."""
    session, lines = in_effect(FOUND, {"hnsw.ef_search": 40, "hnsw.iterative_scan": False, "diskann.x": 2})
    assert session["hnsw.ef_search"] == "40 (search_settings)"
    assert session["hnsw.iterative_scan"] == "off (search_settings)"
    assert session["diskann.x"] == "2 (search_settings)"  # a pin the server does not know is still recorded
    assert lines == ["search_settings pins hnsw.ef_search = 40, but the database's own value is 4 (from the role); "
                     "the run measures 40"]


class Rows:
    """A stand-in connection whose every statement returns `rows`."""

    def __init__(self, rows: list[tuple[str, str]]) -> None:
        self.rows = rows

    def execute(self, statement: object) -> Rows:
        return self

    def fetchall(self) -> list[tuple[str, str]]:
        return self.rows

    def rollback(self) -> None:
        pass


def test_the_table_against_the_chunks_file_names_counts_ids_and_edited_texts() -> None:
    """Before, with both a chunks file and a table, an edit made to the table alone went unnoticed."""
    chunks = [Chunk(id=f"d{i}", text=f"text {i}") for i in range(8)]
    md5 = {chunk.id: hashlib.md5(chunk.text.encode()).hexdigest() for chunk in chunks}
    corpus = TeamCorpus("kb.docs", "id", "body", None, "md5")
    same = list(md5.items())
    assert corpus_difference(cast(Any, Rows(same)), corpus, chunks, "chunks.jsonl") == ""
    table = [(cid, digest) for cid, digest in same if cid != "d7"] + [("x1", "0" * 32)]
    table[0] = ("d0", "f" * 32)
    assert corpus_difference(cast(Any, Rows(table)), corpus, chunks, "chunks.jsonl") == (
        "table kb.docs differs from chunks.jsonl (8 rows, 8 chunks): 1 only in the file (d7), 1 only in the table "
        "(x1), 1 texts differ (d0); the run judges the file's texts, the table answers")
