"""The search settings a `table` or `sql` retriever measures under: the config's pins over the values a
session of the gate's role starts with, each with where it came from (database/team.py, no server)."""
from __future__ import annotations

from pytest_ragretrieval.database.team import in_effect

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
