"""A few texts cut from jieba's dictionary index: the whole dictionary's tokens, with no dictionary loaded."""
from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

from pytest_ragretrieval.cache.store import Cache
from pytest_ragretrieval.retrievers import jieba_index, tokens
from pytest_ragretrieval.retrievers.corpus_tokens import cached_tokens, tokenize_ahead, tokenizer_id

ROOT = Path(__file__).resolve().parents[2]


def texts(count: int, seed: int) -> list[str]:
    """Dictionary words run together (long words, prefixes, rare words), with Latin, digits and punctuation."""
    freq = tokens._jieba_tokenizer(None).FREQ
    words = sorted(word for word, count in freq.items() if count)
    rng = random.Random(seed)
    return ["".join(rng.choices(words, k=rng.randint(1, 25))) + rng.choice(["", " PAY-3001 退款", "（已修订）", "。Ok"])
            for _ in range(count)]


def kept(folder: Path) -> None:
    """The index written as a run that loaded the dictionary writes it (nothing without a loaded dictionary)."""
    tokens.steps("jieba")
    tokens.keep_index("jieba", folder)


def test_the_index_cuts_as_the_whole_dictionary(tmp_path: Path) -> None:
    kept(tmp_path)
    written = sorted(tmp_path.iterdir())
    assert [path.name for path in written] == [jieba_index.index_path(tmp_path).name]  # type: ignore[union-attr]
    sample = texts(200, 52) + ["", "  ", "工信处女干事每月经过下属科室都要亲口交代24口交换机等技术性器件的安装工作"]
    for key in ("jieba", "jieba-search"):
        few = tokens.few_steps(key, sample, tmp_path)
        assert few is not None
        assert [few(text) for text in sample] == [tokens.steps(key)(text) for text in sample]
    kept(tmp_path)  # there already: not written again
    assert sorted(tmp_path.iterdir()) == written and written[0].stat().st_mtime_ns == written[0].stat().st_mtime_ns


def test_many_texts_a_user_dictionary_or_no_index_load_the_dictionary(tmp_path: Path) -> None:
    assert not tokens.few("jieba", ["退款"], tmp_path)  # no index yet
    kept(tmp_path)
    assert tokens.few("jieba", ["退款"], tmp_path)
    assert not tokens.few("jieba", ["退" * (jieba_index.FEW + 1)], tmp_path)
    assert not tokens.few("whitespace", ["a b"], tmp_path)
    user = tmp_path / "user.txt"
    user.write_text("退款审核 5\n", encoding="utf-8")
    key = tokens.tokenizer_key("jieba", user, "0" * 64)
    assert not tokens.few(key, ["退款"], tmp_path)
    index = jieba_index.index_path(tmp_path)
    assert index is not None
    index.write_bytes(b"damaged")
    assert tokens.few_steps("jieba", ["退款"], tmp_path) is None  # an unreadable index: the dictionary is loaded


def test_a_few_new_texts_load_no_dictionary(tmp_path: Path) -> None:
    """Through the token cache, in a fresh process: the index kept by an earlier run serves the new texts."""
    space = Cache(tmp_path, "readwrite").namespace("tokens", tokenizer_id("jieba"), dtype="<i4")
    kept(space.folder)
    new = texts(5, 7)
    script = (
        "import sys\nfrom pathlib import Path\n"
        "from pytest_ragretrieval.cache.store import Cache\n"
        "from pytest_ragretrieval.retrievers import tokens\n"
        "from pytest_ragretrieval.retrievers.corpus_tokens import cached_tokens, tokenize_ahead, tokenizer_id\n"
        "space = Cache(Path(sys.argv[1]), 'readwrite').namespace('tokens', tokenizer_id('jieba'), dtype='<i4')\n"
        "words, rows = cached_tokens(sys.argv[2:], 'jieba', space, 2)\n"
        "print(tokens.steps.cache_info().currsize)\n"
        "print('|'.join(' '.join(words[i] for i in row) for row in rows))\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path), *new], capture_output=True, text=True,
                          check=True, cwd=ROOT, timeout=120)
    loaded, cut = done.stdout.splitlines()
    assert loaded == "0"  # no tokenizer built: the dictionary was never loaded
    words, rows = cached_tokens(new, "jieba", Cache(tmp_path / "other", "readwrite").namespace(
        "tokens", tokenizer_id("jieba"), dtype="<i4"), 1)
    assert cut == "|".join(" ".join(words[i] for i in row) for row in rows)


def test_with_the_index_a_few_missing_texts_start_no_process_ahead(tmp_path: Path) -> None:
    space = Cache(tmp_path, "readwrite").namespace("tokens", tokenizer_id("jieba"), dtype="<i4")
    kept(space.folder)
    assert tokenize_ahead(texts(5, 3), "jieba", space, workers=2) is None  # cut here, in a fraction of a load
