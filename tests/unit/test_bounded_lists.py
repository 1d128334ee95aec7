"""Lists in messages are bounded: the first 20 (or a line's own smaller number) and a count, through
one helper (`core/values.py`'s `listed`), so a line never grows with the eval set or the corpus."""
from __future__ import annotations

from pytest_ragretrieval.core.values import listed
from pytest_ragretrieval.gate.checks import edited_text
from pytest_ragretrieval.labels.gold import EditedGold, review_line

IDS = [f"q{n:04d}" for n in range(1000)]


def test_listed_names_the_first_20_and_counts_the_rest() -> None:
    assert listed(IDS) == ", ".join(IDS[:20]) + ", ... and 980 more"
    assert listed(IDS[:20]) == ", ".join(IDS[:20]) and listed([]) == ""
    assert listed(iter(IDS), "; ", limit=3) == "q0000; q0001; q0002; ... and 997 more"
    assert listed(range(10_000), limit=1) == "0, ... and 9,999 more"


def test_the_labels_to_review_line_stays_short() -> None:
    """1,000 edited gold chunks, each gold of 30 questions: old code joined every chunk's entry (the
    campaign's "labels to review" line of 85 KB)."""
    edited = [EditedGold(f"chunk-{n:04d}", tuple(IDS[:30])) for n in range(1000)]
    line = review_line(edited)
    assert line is not None and len(line) < 6_000
    assert line.endswith("(the text of gold chunk chunk-0019 was edited); ... and 980 more")
    assert line.count("was edited") == 20


def test_a_question_on_1000_edited_gold_chunks_is_one_short_line() -> None:
    text = edited_text([f"chunk-{n:04d}" for n in range(1000)])
    assert text.startswith("its gold chunks chunk-0000, ") and text.endswith(", ... and 980 more were edited")
    assert len(text) < 300

