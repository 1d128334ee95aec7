"""Where a gold chunk's recorded text went (labels/anchor.py): shares counted by hand."""
from __future__ import annotations

import pytest

from pytest_ragretrieval.evalset.records import Chunk
from pytest_ragretrieval.labels.anchor import CERTAIN, FUZZY, Anchor, Matcher


def corpus(*texts: tuple[str, str]) -> list[Chunk]:
    return [Chunk(cid, text) for cid, text in texts]


def anchor(old: str, *texts: tuple[str, str]) -> Anchor:
    return Matcher(corpus(*texts)).anchor(old)


def test_a_split_in_two_is_found_whole_with_each_half_s_share() -> None:
    """一二三四。 (5) + 五六七八九十。 (7): the old text of 12 characters, 5/12 and 7/12 of it."""
    found = anchor("一二三四。五六七八九十。", ("x", "无关的内容。"), ("a", "一二三四。"), ("b", "五六七八九十。"))
    assert found.chunks == ("a", "b")
    assert found.shares == pytest.approx((5 / 12, 7 / 12))
    assert (found.covered, found.how, found.ambiguous) == (1.0, "contained", "")
    assert str(found) == "text 100% contained"


def test_whitespace_at_the_cut_does_not_matter() -> None:
    found = anchor("一二三四。\n  五六七八。", ("a", "一二三四。 "), ("b", "\n五六七八。"))
    assert (found.chunks, found.shares, found.covered) == (("a", "b"), (0.5, 0.5), 1.0)


def test_a_text_spread_over_consecutive_chunks_with_other_text_around_it() -> None:
    """前言。 + 一二三四。 | 五六七八。 + 后记。: each chunk holds half the old text."""
    found = anchor("一二三四。五六七八。", ("x", "前言。一二三四。"), ("y", "五六七八。后记。"))
    assert (found.chunks, found.shares, found.how) == (("x", "y"), (0.5, 0.5), "contained")


def test_a_text_merged_into_a_larger_chunk_is_all_there() -> None:
    found = anchor("退款三个工作日内到账。", ("big", "签收后七天内可退货。退款三个工作日内到账。运费由买家承担。"))
    assert (found.chunks, found.shares, found.covered) == (("big",), (1.0,), 1.0)


def test_pieces_that_lost_the_cut_s_text_are_found_inside_the_old_text() -> None:
    """Old: 10 + 1 (the comma, dropped by the re-chunker) + 9 = 20 characters; the pieces cover 19 of them."""
    a, b = "甲乙丙丁戊己庚辛壬癸", "子丑寅卯辰巳午未申"
    found = anchor(a + "，" + b, ("a", a), ("b", b))
    assert (found.chunks, found.shares, found.how) == (("a", "b"), (0.5, 0.45), "contained")
    assert found.covered == pytest.approx(0.95)
    assert str(found) == "text 95% contained"


def test_a_piece_under_five_percent_is_a_coincidence_not_a_label() -> None:
    """"。" is in every Chinese text: 1 of 21 characters (4.8%) is never proposed."""
    found = anchor("甲乙丙丁戊己庚辛壬癸。子丑寅卯辰巳午未申酉", ("dot", "。"))
    assert not found.found and str(found) == "not found: no chunk holds 5% or more of its text"


def test_the_old_text_in_two_places_is_ambiguous_and_names_both() -> None:
    found = anchor("退款三个工作日内到账。", ("a", "退款三个工作日内到账。"), ("b", "退款三个工作日内到账。"))
    assert found.chunks == ("a", "b")
    assert found.ambiguous == "the old text is found in 2 places"
    assert str(found) == "text 100% contained; ambiguous: the old text is found in 2 places"


def test_one_substitution_in_forty_characters_is_a_certain_fuzzy_match() -> None:
    """Indel distance 2 over 40 + 40 characters: partial_ratio 100 * (1 - 2/80) = 97.5 >= CERTAIN."""
    old = "甲乙丙丁戊己庚辛壬癸" * 4
    new = old[:20] + "天" + old[21:]
    found = anchor(old, ("n", new), ("x", "毫不相干的另外一段话" * 4))
    assert (found.chunks, found.how, found.score, found.ambiguous) == (("n",), "fuzzy", 97.5, "")
    assert str(found) == "text 100% matched, fuzzy score 97.5"
    assert 97.5 >= CERTAIN


def test_a_fuzzy_match_below_certainty_is_ambiguous() -> None:
    """Two substitutions in 20 characters: 100 * (1 - 4/40) = 90, above FUZZY, below CERTAIN."""
    old = "甲乙丙丁戊己庚辛壬癸" * 2
    new = old[:5] + "天" + old[6:14] + "地" + old[15:]
    found = anchor(old, ("n", new))
    assert FUZZY <= found.score == 90.0 < CERTAIN
    assert (found.chunks, found.ambiguous) == (("n",), f"a fuzzy score below {CERTAIN:.0f}")


def test_below_the_fuzzy_threshold_nothing_is_proposed() -> None:
    """Five substitutions in 20 characters: the whole alignment scores 100 * (1 - 10/40) = 75, the best
    partial one 76.9 (rapidfuzz's), both below FUZZY."""
    old = "甲乙丙丁戊己庚辛壬癸" * 2
    new = "".join("天" if i % 4 == 0 else char for i, char in enumerate(old))
    found = anchor(old, ("n", new))
    assert not found.found and found.how == "none"


def test_a_clear_winner_drops_the_weaker_overlapping_candidate() -> None:
    """The exact copy scores 100; the copy with two substitutions (90) covers the same text: noise."""
    old = "甲乙丙丁戊己庚辛壬癸" * 2
    worse = "天" + old[1:10] + "地" + old[11:]
    found = Matcher(corpus(("w", worse), ("n", old + "多"))).anchor(old + "少")
    assert found.chunks == ("n",) and found.ambiguous == ""


def test_an_empty_old_text_is_found_nowhere() -> None:
    assert not anchor(" \n", ("a", "一二三")).found


def long_text(length: int, seed: int) -> str:
    """Sentences of common characters, seeded: no run of 8 repeats by chance."""
    import random

    rng = random.Random(seed)
    found: list[str] = []
    while len(found) < length:
        found += [rng.choice("的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学")
                  for _ in range(rng.randint(8, 30))] + ["。"]
    return "".join(found[:length])


def test_long_texts_are_aligned_without_rapidfuzz_s_cubic_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """The campaign's hang: an 18,000-character gold chunk renamed with one character edited took 232 s in
    `partial_ratio_alignment` (old code: it is called, and raises here). The alignment of long texts gives
    the same proposal, and turns down the same text with its sentences reordered (every trigram shared)."""
    from rapidfuzz import fuzz

    old = long_text(18_000, 1)
    edited = old[:9_000] + "甲" + old[9_001:]
    reordered = "。".join(reversed(old.split("。")))

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("rapidfuzz's partial_ratio search on texts over LONG characters")

    monkeypatch.setattr(fuzz, "partial_ratio_alignment", refused)
    found = anchor(old, ("reordered", reordered), ("renamed", edited), ("other", long_text(300, 2)))
    assert (found.chunks, found.how, found.covered, found.ambiguous) == (("renamed",), "fuzzy", 1.0, "")
    assert str(found) == "text 100% matched, fuzzy score 100"


@pytest.mark.parametrize(("shape", "edits"), [("same length", 1), ("same length", 12), ("cut short", 3),
                                               ("inside more", 2)])
def test_the_long_alignment_gives_rapidfuzz_s_answer_just_above_the_limit(shape: str, edits: int) -> None:
    """Just over LONG characters, where rapidfuzz's search still takes a fraction of a second: the same
    span and score (to the shown decimal) for a chunk with edits, cut short, or holding the old text and more."""
    from rapidfuzz import fuzz

    from pytest_ragretrieval.labels.anchor import LONG, _aligned

    old = long_text(LONG + 100, 3)
    edited = list(old)
    for n in range(edits):
        edited[(n * 97 + 50) % len(old)] = "甲"
    piece = {"same length": "".join(edited), "cut short": "".join(edited[:LONG + 40]),
             "inside more": long_text(200, 4) + "".join(edited) + long_text(300, 5)}[shape]
    expected = fuzz.partial_ratio_alignment(old, piece, score_cutoff=FUZZY)
    found = _aligned(old, piece)
    assert expected is not None and found is not None
    assert (found.start, found.end, round(found.score, 1)) == (expected.src_start, expected.src_end,
                                                                round(expected.score, 1))
