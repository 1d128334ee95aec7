"""`bar.places.carried`: a recorded place moved through its document's edit, or lost where an end's text changed."""
from __future__ import annotations

import pytest

from pytest_ragretrieval.bar.places import carried, edit, edits
from pytest_ragretrieval.evalset.records import Span

OLD = "Alpha beta. Gamma delta. Epsilon."


@pytest.mark.parametrize(("new", "place", "whole", "found"), [
    ("\n" + OLD, (12, 24), False, (13, 25)),  # a newline first: every place one on
    ("\n" + OLD, (0, 11), False, (0, 12)),  # the document's first place still begins it
    (OLD + "\n", (25, 33), False, (25, 34)),  # and its last still ends it
    (OLD.replace("beta", "BETA"), (12, 24), False, (12, 24)),  # an edit elsewhere moves nothing
    (OLD.replace("Gamma", "Gamma gamma"), (12, 24), False, (12, 30)),  # an inside edit: both ends kept
    (OLD.replace("Gamma", "Gamma gamma"), (12, 24), True, None),  # but a gold span's text changed
    (OLD.replace(". Gamma", ".\nGamma"), (0, 12), False, None),  # its end's character replaced: lost
    (OLD.replace("Alpha", "Omega"), (0, 11), False, None),  # its start's text replaced: lost
    ("Epsilon.", (0, 11), False, None),  # its text deleted: lost
])
def test_a_place_is_carried_where_both_ends_are_kept(new: str, place: tuple[int, int], whole: bool,
                                                     found: tuple[int, int] | None) -> None:
    span = Span("a.txt", *place)
    moved = carried(span, edit(OLD, new), whole=whole)
    assert (None if moved is None else (moved.start, moved.end)) == found
    if moved is not None and moved.start and moved.end < len(new) and "gamma" not in new:
        assert new[moved.start:moved.end] == OLD[span.start:span.end]  # away from the edges: the same text


def test_only_edited_documents_get_an_edit() -> None:
    assert set(edits({"a": OLD, "b": OLD, "c": OLD}, {"a": OLD, "b": OLD + "!"})) == {"b"}
