"""Our cut of jieba 0.42.1 gives jieba's own tokens, on the sample, generated text, batches and tie cases."""
from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jieba
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jieba import finalseg

from pytest_ragretrieval.retrievers.jieba_cut import VERSION, Cut, cutter

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def loaded() -> Any:
    jieba.setLogLevel(logging.WARNING)
    own = jieba.Tokenizer()
    own.initialize()
    return own


def sample_texts() -> list[str]:
    texts = []
    for name, key in (("chunks.jsonl", "text"), ("evalset.jsonl", "query")):
        for line in (ROOT / "fixtures" / name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                texts.append(json.loads(line)[key])
    return texts


def test_the_version_repeated_is_the_one_installed() -> None:
    assert jieba.__version__ == VERSION


def test_sample_tokens_are_jiebas(loaded: Any) -> None:
    fast = Cut(loaded)
    texts = sample_texts()
    assert len(texts) > 100
    for text in texts:
        assert fast.cut(text) == list(loaded.cut(text)), text
        assert fast.cut_for_search(text) == list(loaded.cut_for_search(text)), text


ACROSS = ["笔记", "本电脑", "中华人民", "共和国", "北京大", "学", "\ud800笔记本\U00020000电脑", "丢", "失。"]
"""Texts whose neighbours complete their words: a batch is one string, a text's words stay its own."""


@pytest.mark.parametrize("batch", [1, 5, 64, 1 << 16])
def test_many_texts_in_batches_of_any_size_give_each_texts_own_tokens(loaded: Any, batch: int) -> None:
    fast = Cut(loaded)
    texts = ACROSS + sample_texts()[:40] + ACROSS
    assert list(fast.cut_many(texts, batch)) == [list(loaded.cut(text)) for text in texts]
    assert list(fast.search_many(texts, batch)) == [list(loaded.cut_for_search(text)) for text in texts]


def test_a_text_longer_than_a_batch_is_one_batch(loaded: Any) -> None:
    fast = Cut(loaded)
    text = "笔记本电脑丢失怎么办" * 300 + "a1" * 200
    assert list(fast.cut_many([text, "电脑"], batch=100)) == [list(loaded.cut(text)), ["电脑"]]


WORDS = ["笔记本电脑", "丢失", "怎么办", "北京大学", "研究生", "命", "的", "了", "中华人民共和国", "密码", "重置"]
PIECES = st.one_of(
    st.sampled_from(WORDS),
    st.characters(min_codepoint=0x4E00, max_codepoint=0x9FD5),  # Han, most of them in the dictionary
    st.characters(min_codepoint=0x9FA6, max_codepoint=0x9FFF),  # Han jieba's block rule leaves out
    st.sampled_from(list("abcXYZ019 .%-+#&_\t\r\n，。！？、“”（）")),
    st.sampled_from(["ORDER-2024", "3.14%", "iPhone15", "\r\n", "C++", "e-mail", "１２３", "ＡＢ"]),
    st.characters(codec="utf-8"),
)


@pytest.fixture(scope="module")
def fast(loaded: Any) -> Cut:
    return Cut(loaded)


@settings(max_examples=400, deadline=None)
@given(st.lists(PIECES, max_size=40).map("".join))
def test_generated_text_gives_jiebas_tokens(loaded: Any, fast: Cut, text: str) -> None:
    assert fast.cut(text) == list(loaded.cut(text))
    assert fast.cut_for_search(text) == list(loaded.cut_for_search(text))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(PIECES, max_size=12).map("".join), max_size=6), st.integers(min_value=1, max_value=40))
def test_generated_texts_in_generated_batches_give_jiebas_tokens(
    loaded: Any, fast: Cut, texts: list[str], batch: int
) -> None:
    assert list(fast.cut_many(texts, batch)) == [list(loaded.cut(text)) for text in texts]


@pytest.fixture
def tiny(tmp_path: Path) -> Iterator[Any]:
    """A tokenizer over a five-word dictionary, its own cache file in tmp_path."""
    dictionary = tmp_path / "dict.txt"
    dictionary.write_text("甲乙 5\n乙丙 5\n甲 3\n丙 3\n乙 1\n丁戊己 2\n", encoding="utf-8")
    own = jieba.Tokenizer(str(dictionary))
    own.tmp_dir = str(tmp_path)
    own.initialize()
    yield own


def test_equal_scores_take_the_longer_word_as_jieba_does(tiny: Any) -> None:
    """甲乙|丙 and 甲|乙丙 score exactly alike (the same two sums, added in the other order):
    jieba's max over (score, end) takes the larger end, 甲乙."""
    fast = Cut(tiny)
    assert list(tiny.cut("甲乙丙")) == ["甲乙", "丙"]
    assert fast.cut("甲乙丙") == ["甲乙", "丙"]
    for text in ("甲乙丙甲乙丙", "丙甲乙", "乙丙甲", "丁戊己甲乙丙丁", "戊己丁", "甲 乙丙。丁戊"):
        assert fast.cut(text) == list(tiny.cut(text)), text
        assert fast.cut_for_search(text) == list(tiny.cut_for_search(text)), text


def test_long_runs_of_single_characters_are_jiebas(loaded: Any) -> None:
    """Runs jieba grows a character at a time, here sliced once: letters, a Han character jieba's
    dictionary lacks (the HMM's), and both around words."""
    fast = Cut(loaded)
    for text in ("a" * 3000, "\u9fa6" * 3000, "电脑" + "\u9fa6" * 2000 + "丢失" + "a1" * 500, "了" * 2000):
        assert fast.cut(text) == list(loaded.cut(text))


def test_user_words_count_force_split_words_stay_split_and_a_later_change_is_refused(loaded: Any) -> None:
    own = jieba.Tokenizer()
    own.FREQ, own.total, own.initialized = dict(loaded.FREQ), loaded.total, True
    before = Cut(own)
    text = "电脑丢了怎么办，联系小蓝鲸客服"
    own.add_word("小蓝鲸客服", 2000)
    own.add_word("蓝鲸", 0)  # frequency 0: jieba also adds it to the HMM's force-split words
    try:
        with pytest.raises(RuntimeError, match="dictionary changed after this Cut was made"):
            before.cut(text)
        fast = Cut(own)
        assert fast.cut(text) == list(own.cut(text))
        assert "小蓝鲸客服" in fast.cut(text)
        assert fast.cut("蓝鲸来了") == list(own.cut("蓝鲸来了"))
    finally:
        finalseg.Force_Split_Words.discard("蓝鲸")


def test_another_jieba_version_gets_jiebas_own_cut(loaded: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(cutter(loaded, search=False).__self__, Cut)  # type: ignore[attr-defined]
    monkeypatch.setattr(jieba, "__version__", "0.43.0")
    monkeypatch.setattr(jieba.Tokenizer, "cut", lambda self, text: iter(["cut", text]))
    monkeypatch.setattr(jieba.Tokenizer, "cut_for_search", lambda self, text: iter(["search", text]))
    assert list(cutter(loaded, search=False)(["电脑", "丢"])) == [["cut", "电脑"], ["cut", "丢"]]  # jieba's own
    assert list(cutter(loaded, search=True)(["电脑"])) == [["search", "电脑"]]
