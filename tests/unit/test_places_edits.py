"""`bar.places.carried`: a recorded place moved through its document's edit, or lost where an end's text changed."""
from __future__ import annotations

import itertools
import random

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


def test_runs_are_kept_text_in_order_and_carry_untouched_places() -> None:
    """Random edits (a fixed seed) of a multi-line text: every run is text both hold, in order on both sides,
    and a place in lines no edit touched is carried to the same text."""
    rng = random.Random(49)
    words = ["alpha", "beta", "gamma", "。", "\n", "delta ", "Dr. ", "x"]
    for _ in range(200):
        old = "".join(rng.choice(words) for _ in range(rng.randint(1, 80)))
        new = old
        for _ in range(rng.randint(1, 3)):
            at = rng.randint(0, len(new))
            new = new[:at] + rng.choice(["", "\n", "ZZ", "beta"]) + new[at + rng.randint(0, 3):]
        runs = edit(old, new)
        assert runs[-1] == (len(old), len(new), 0)
        for (a, b, n), (c, d, _) in itertools.pairwise(runs):
            assert old[a:a + n] == new[b:b + n] and a + n <= c and b + n <= d
        for a, _, n in runs[:-1]:
            if n >= 3 and a and a + n < len(old):
                moved = carried(Span("a", a + 1, a + n - 1), runs, whole=True)
                assert moved is not None and new[moved.start:moved.end] == old[a + 1:a + n - 1]


def test_a_long_document_edited_at_both_ends_and_inside_is_diffed_by_lines() -> None:
    """400,000 characters of lines, a newline added at both ends and one character changed inside: the places
    either side of the change are carried (a character diff of the whole would take minutes)."""
    lines = [f"line {number} of the handbook, about refunds and taxis.\n" for number in range(7_000)]
    old = "".join(lines)
    new = "\n" + old.replace("line 3500 of", "line 3500 in") + "\n"
    runs = edit(old, new)
    before, after = old.index("line 3499"), old.index("line 3501")
    assert carried(Span("a", before, before + 9), runs) == Span("a", before + 1, before + 10)
    assert carried(Span("a", after, after + 9), runs) == Span("a", after + 1, after + 10)
    assert carried(Span("a", 0, len(old)), runs) == Span("a", 0, len(new))
    inside = old.index("line 3500 of")
    assert carried(Span("a", inside, inside + 12), runs, whole=True) is None
