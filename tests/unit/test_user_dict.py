"""Tokenizers per bm25 retriever: jieba's search mode, a jieba user dictionary read as jieba reads it
(every bad line one error naming file:line), recorded by digest, and never shared through jieba's
global state, the token cache or a worker process."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jieba
import pytest
from projects import retriever
from test_config import MINIMAL, config_at, error_of

from pytest_ragretrieval.baseline.fingerprint import retriever_fingerprint
from pytest_ragretrieval.cache.store import Cache
from pytest_ragretrieval.config.settings import load_config
from pytest_ragretrieval.core.errors import RagError
from pytest_ragretrieval.evalset.jsonl import load_chunks
from pytest_ragretrieval.evalset.records import Chunk
from pytest_ragretrieval.retrievers import corpus_tokens
from pytest_ragretrieval.retrievers.bm25 import BM25Retriever, tokenizer_for
from pytest_ragretrieval.retrievers.corpus_tokens import cached_tokens, tokenizer_id
from pytest_ragretrieval.retrievers.tokens import describe, tokenizer, tokenizer_key
from pytest_ragretrieval.retrievers.user_dict import MAX_WORD, read_user_dict

LAPTOP = Chunk("it-1", "笔记本电脑丢失后，须在2小时内报告信息技术部")
CHUNKS = [
    LAPTOP,
    Chunk("it-2", "云桌面登录失败时，请重启客户端"),
    Chunk("desk-1", "下班前清理桌面，桌面不得放置文件"),
    Chunk("travel-1", "一线城市住宿标准为每晚600元"),
    Chunk("refund-1", "退款在审核通过后3个工作日内原路退回"),
    Chunk("service-1", "客服工作时间为周一至周五"),
]


def write(folder: Path, text: str, name: str = "terms.txt") -> Path:
    path = folder / name
    path.write_bytes(text.encode("utf-8"))
    return path


def key(folder: Path, text: str, name: str = "jieba", file: str = "terms.txt") -> str:
    path = write(folder, text, file)
    return tokenizer_key(name, path, read_user_dict(path).sha256)


def bm25(tokenize_key: str) -> BM25Retriever:
    return BM25Retriever(CHUNKS, tokenizer(tokenize_key), k1=1.5, b=0.75, epsilon=0.25, min_score=0.0)


def test_entries_are_read_as_jieba_reads_them(tmp_path: Path) -> None:
    path = write(tmp_path, "\ufeff云桌面 100 n\n\nORDER-2024\n  统一认证平台 nz  \r\n报销单 5\n")
    assert read_user_dict(path).entries == (
        ("云桌面", 100, "n"), ("ORDER-2024", None, None), ("统一认证平台", None, "nz"), ("报销单", 5, None),
    )


def test_the_digest_is_over_the_entries_in_order(tmp_path: Path) -> None:
    first = read_user_dict(write(tmp_path, "云桌面 100 n\n报销单\n")).sha256
    assert read_user_dict(write(tmp_path, "\r\n云桌面 100 n\r\n\r\n报销单\r\n")).sha256 == first
    assert read_user_dict(write(tmp_path, "报销单\n云桌面 100 n\n")).sha256 != first
    assert read_user_dict(write(tmp_path, "云桌面 99 n\n报销单\n")).sha256 != first


@pytest.mark.parametrize(("text", "message"), [
    ("云桌面\nThinkPad X1\n", "terms.txt:2: expected 'word [frequency] [tag]' (a word without spaces, a whole-number "
                             "frequency, a lower-case tag), got 'ThinkPad X1'"),
    ("云桌面 100 n extra\n", "terms.txt:1: expected 'word [frequency] [tag]'"),
    ("云桌面 n 100\n", "terms.txt:1: expected 'word [frequency] [tag]'"),
    ("云桌面\t100\n", "terms.txt:1: expected 'word [frequency] [tag]'"),
])
def test_a_malformed_line_is_named_by_file_and_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     text: str, message: str) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError) as error:
        read_user_dict(write(tmp_path, text))
    assert str(error.value).startswith(message) and "\n" not in str(error.value)


def test_not_utf8_is_named_by_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "terms.txt").write_bytes("云桌面\n".encode() + "报销".encode("gbk") + b"\n")
    with pytest.raises(ValueError, match=r"^terms\.txt:2: not UTF-8 \(invalid start byte at byte 10\)$"):
        read_user_dict(tmp_path / "terms.txt")


BM25_SEARCH = MINIMAL + retriever("bm25_search", "bm25", tokenizer="jieba-search", user_dict="dicts/terms.txt")


def test_the_config_records_tokenizer_dictionary_and_digest(tmp_path: Path) -> None:
    (tmp_path / "dicts").mkdir()
    digest = read_user_dict(write(tmp_path / "dicts", "云桌面 100 n\n")).sha256
    config = config_at(tmp_path, BM25_SEARCH)
    assert config.retriever("bm25").params == {"k1": 1.5, "b": 0.75, "epsilon": 0.25, "min_score": 0.0}
    assert config.retriever("bm25_search").params == {
        "k1": 1.5, "b": 0.75, "epsilon": 0.25, "min_score": 0.0, "tokenizer": "jieba-search",
        "user_dict": "dicts/terms.txt", "user_dict_sha256": digest,
    }
    setup = {"bm25": {}, "bm25_search": {"tokenizer": describe("jieba-search")}}
    assert retriever_fingerprint(config, "bm25_search", setup) == {
        "type": "bm25", "k1": 1.5, "b": 0.75, "epsilon": 0.25, "min_score": 0.0,
        "tokenizer": f"jieba-search {jieba.__version__}", "user_dict": "dicts/terms.txt", "user_dict_sha256": digest,
    }


@pytest.mark.parametrize(("edit", "message"), [
    (("", ""), "pyproject.toml [tool.ragretrieval.retrievers.bm25_search] key 'user_dict': no file at dicts/terms.txt "
               "(the path is relative to the config's folder)"),
    (('tokenizer = "jieba-search"', 'tokenizer = "english"'),
     "pyproject.toml [tool.ragretrieval.retrievers.bm25_search] key 'user_dict': is a jieba user dictionary, which "
     "tokenizer 'english' does not take; set tokenizer = \"jieba\", \"jieba-search\" or \"jieba-rs\", or remove user_dict"),
])
def test_a_dictionary_that_cannot_be_used_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      edit: tuple[str, str], message: str) -> None:
    assert error_of(tmp_path, BM25_SEARCH.replace(*edit), monkeypatch) == message


def test_a_malformed_dictionary_names_the_key_and_the_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "dicts").mkdir()
    write(tmp_path / "dicts", "云桌面\nThinkPad X1 5\n")
    assert error_of(tmp_path, BM25_SEARCH, monkeypatch).startswith(
        "pyproject.toml [tool.ragretrieval.retrievers.bm25_search] key 'user_dict': dicts/terms.txt:2: expected "
    )


def test_search_mode_finds_the_laptop_the_default_cut_misses(tmp_path: Path) -> None:
    assert bm25("jieba")("电脑丢了怎么办", 3) == []
    assert bm25(key(tmp_path, "云桌面 100 n\n", "jieba-search"))("电脑丢了怎么办", 3) == ["it-1"]
    assert "电脑" in tokenizer("jieba-search")("笔记本电脑") and "电脑" not in tokenizer("jieba")("笔记本电脑")


def test_a_dictionary_keeps_a_domain_term_whole(tmp_path: Path) -> None:
    assert bm25("jieba")("云桌面", 3) == ["it-2", "desk-1"]
    assert bm25(key(tmp_path, "云桌面 100 n\n"))("云桌面", 3) == ["it-2"]


def test_two_dictionaries_in_one_process_do_not_interfere(tmp_path: Path) -> None:
    with_term = key(tmp_path, "云桌面 100 n\n", file="a.txt")
    without = key(tmp_path, "报销单 5\n", file="b.txt")
    assert tokenizer(with_term)("云桌面登录") == ["云桌面", "登录"]
    assert tokenizer(without)("云桌面登录") == ["云", "桌面", "登录"]
    assert tokenizer("jieba")("云桌面登录") == ["云", "桌面", "登录"]
    assert list(jieba.cut("云桌面登录")) == ["云", "桌面", "登录"]  # jieba's global tokenizer is left alone
    assert tokenizer(with_term)("云桌面登录") == ["云桌面", "登录"]


def test_a_dictionary_changed_after_the_config_was_read_is_refused(tmp_path: Path) -> None:
    stale = key(tmp_path, "云桌面 100 n\n", file="c.txt")
    write(tmp_path, "云桌面 5 n\n", "c.txt")
    with pytest.raises(RagError, match=r"^the user dictionary .*c\.txt changed while the gate ran; run it again$"):
        tokenizer(stale)


def test_the_token_cache_and_worker_processes_key_on_the_dictionary(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    with_term = key(tmp_path, "云桌面 100 n\n", file="d.txt")
    assert tokenizer_id(with_term) != tokenizer_id("jieba")
    assert tokenizer_id(with_term) == f"jieba {jieba.__version__}, user dictionary sha256 {with_term.split('|')[1]} (tokens 1)"
    assert str(tmp_path) not in tokenizer_id(with_term)
    monkeypatch.setattr(corpus_tokens, "PROBE_SECONDS", 0.0)
    monkeypatch.setattr(corpus_tokens, "processes", lambda workers, measured: 3)
    texts = [f"云桌面登录第{i}次" for i in range(6)]
    namespace = Cache(tmp_path / "cache", "readwrite").namespace("tokens", tokenizer_id(with_term), dtype="<i4")
    vocabulary, rows = cached_tokens(texts, with_term, namespace, workers=2)
    assert [[vocabulary[i] for i in row] for row in rows] == [tokenizer(with_term)(text) for text in texts]
    assert all(vocabulary[row[0]] == "云桌面" for row in rows)


def test_the_samples_search_mode_variant_finds_the_laptop_and_records_its_dictionary() -> None:
    """The bundled sample's `bm25_search` (jieba-search and fixtures/user_dict.txt) against its `bm25`."""
    root = Path(__file__).resolve().parents[2]
    config = load_config(None, root)
    assert config.chunks is not None
    chunks = load_chunks(config.chunks)
    texts = {chunk.id: chunk.text for chunk in chunks}
    found = {}
    for name in ("bm25", "bm25_search"):
        params = config.retriever(name).params
        key = tokenizer_for(params, config.tokenizer, config.root)
        own = {param: params[param] for param in ("k1", "b", "epsilon", "min_score")}
        found[name] = BM25Retriever(chunks, tokenizer(key), **own)("电脑丢了怎么办", 5)
    assert "笔记本电脑" in texts[found["bm25_search"][0]] and "笔记本电脑" not in texts[found["bm25"][0]]
    assert "security-010" in found["bm25_search"] and "security-010" not in found["bm25"]  # 笔记本电脑须随身携带
    params = config.retriever("bm25_search").params
    assert params["user_dict"] == "fixtures/user_dict.txt"
    assert params["user_dict_sha256"] == read_user_dict(root / "fixtures" / "user_dict.txt").sha256
    recorded = json.loads((root / "baselines" / "retrieval.json").read_text(encoding="utf-8"))
    assert recorded["fingerprint"]["retrievers"]["bm25_search"]["user_dict_sha256"] == params["user_dict_sha256"]
    assert recorded["fingerprint"]["retrievers"]["bm25_search"]["tokenizer"] == f"jieba-search {jieba.__version__}"


# issue 32: tokenizers share nothing; dictionaries read exactly as jieba.load_userdict reads them

ROOT = Path(__file__).resolve().parents[2]
ORDERS = r'''
import json, sys
from pathlib import Path
import jieba
from pytest_ragretrieval.evalset.jsonl import load_chunks, load_evalset
from pytest_ragretrieval.retrievers.bm25 import BM25Retriever
from pytest_ragretrieval.retrievers.tokens import tokenizer, tokenizer_key
from pytest_ragretrieval.retrievers.user_dict import read_user_dict
from pytest_ragretrieval.scoring.metrics import ndcg

root, zero, order = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3].split(",")
chunks = load_chunks(root / "fixtures" / "chunks.jsonl")
questions = [q for q in load_evalset(root / "fixtures" / "evalset.jsonl", chunks) if any(q.relevance.values())]
texts = [c.text for c in chunks] + [q.query for q in questions]
keys = {"bm25": "jieba", "zero": tokenizer_key("jieba-search", zero, read_user_dict(zero).sha256)}
for name in order:
    tokenizer(keys[name])("预热")  # each built and used before the next one is built
ours = {name: [tokenizer(keys[name])(text) for text in texts] for name in order}
ranked = BM25Retriever(chunks, tokenizer("jieba"), k1=1.5, b=0.75, epsilon=0.25, min_score=0.0)
found = round(sum(ndcg(ranked(q.query, 5), q.relevance, 5) for q in questions) / len(questions), 6)
def finished(pieces):
    return [piece.lower() for piece in pieces if piece.strip()]
alone = {"bm25": [finished(jieba.cut(text)) for text in texts]}  # jieba's global state is as it was
own = jieba.Tokenizer()
own.load_userdict(str(zero))  # jieba alone: its global force-split words are this dictionary's
alone["zero"] = [finished(own.cut_for_search(text)) for text in texts]
print(json.dumps({"ndcg@5": found, "same": {name: ours[name] == alone[name] for name in order},
                  "split": "哪台" not in {t for tokens in ours["zero"] for t in tokens},
                  "kept": "哪台" in {t for tokens in ours["bm25"] for t in tokens}}))
'''


def _in_a_fresh_process(zero: Path, order: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", ORDERS, str(ROOT), str(zero), order], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


@pytest.mark.parametrize("order", ["zero,bm25", "bm25,zero"])
def test_a_frequency_0_word_in_one_dictionary_changes_no_other_tokenizer(tmp_path: Path, order: str) -> None:
    """The sample's user dictionary plus `哪台 0` (a word jieba's HMM finds in the sample, forced to
    split) for a jieba-search tokenizer, and the sample's plain jieba `bm25`, built in either order in
    a fresh process: each gives jieba's tokens for it alone, and bm25 keeps nDCG@5 0.588477 (the
    recorded baseline's; 0.579652 when the force-split word leaked into it)."""
    zero = write(tmp_path, (ROOT / "fixtures" / "user_dict.txt").read_text(encoding="utf-8") + "哪台 0\n", "zero.txt")
    assert _in_a_fresh_process(zero, order) == {
        "ndcg@5": 0.588477, "same": {"bm25": True, "zero": True}, "split": True, "kept": True}


def test_building_a_tokenizer_leaves_jiebas_own_force_split_words_alone(tmp_path: Path) -> None:
    from jieba import finalseg

    before = set(finalseg.Force_Split_Words)
    zero = key(tmp_path, "李小福 0\n", file="zero.txt")
    text = "李小福是创新办主任"
    assert tokenizer(zero)(text)[:3] == ["李", "小", "福"]
    assert set(finalseg.Force_Split_Words) == before
    assert list(jieba.cut(text))[0] == "李小福"
    assert tokenizer(key(tmp_path, "云桌面 100 n\n", file="other.txt"))(text)[0] == "李小福"


LOAD_USERDICT = r'''
import json, sys
import jieba

taken = []
class Recording(jieba.Tokenizer):
    def add_word(self, word, freq=None, tag=None):
        taken.append([word, None if freq is None else int(freq), tag])
own = Recording()
own.initialize()
for path in sys.argv[1:]:
    del taken[:]
    try:
        own.load_userdict(path)
        print(json.dumps(taken))
    except ValueError:
        print(json.dumps("not utf-8"))
'''
PIECES = ["云桌面", "报销单", "猫眼屏", "ThinkPad X1", "X1", "\ufeff", "\ufeff\ufeff", " ", "\t", "\r", " 5", " 100",
          " 0", " n", " nz", " N", "\u3000", "词 5 n", "a\x0bb", "\x0c", "\x85", "5", "n"]


def _generated(seed: int) -> str:
    import random

    chance = random.Random(seed)
    lines = []
    for _ in range(chance.randint(1, 6)):
        lines.append("".join(chance.choice(PIECES) for _ in range(chance.randint(0, 4))))
    return chance.choice(["\n", "\r\n"]).join(lines) + chance.choice(["", "\n"])


def test_dictionaries_read_as_jieba_load_userdict_reads_them(tmp_path: Path) -> None:
    """A differential test against jieba: byte-order marks on any line, blank lines, tags, spaces in
    words, frequencies. Where jieba takes a word holding whitespace we refuse the line (file:line)."""
    texts = ["\ufeff云桌面 100 n\n\ufeff猫眼屏 20 n\n", "报销单\n\n\ufeff\n  \ufeff  \n云桌面 nz\n"]
    texts += [_generated(seed) for seed in range(120)]
    paths = [write(tmp_path, text, f"d{number}.txt") for number, text in enumerate(texts)]
    done = subprocess.run([sys.executable, "-c", LOAD_USERDICT, *map(str, paths)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    for path, line in zip(paths, done.stdout.splitlines(), strict=True):
        taken = json.loads(line)
        try:
            ours = [list(entry) for entry in read_user_dict(path).entries]
        except ValueError as error:
            assert re.match(rf"^.*{re.escape(path.name)}:\d+: expected 'word ", str(error)), error
            assert any(space in word for word, _, _ in taken for space in " \t\r\f\v\x85\u3000"), (path.read_bytes(), taken)
        else:
            assert ours == taken, path.read_bytes()


def test_two_dictionaries_concatenated_read_as_jieba_reads_them(tmp_path: Path) -> None:
    path = write(tmp_path, "\ufeff猫眼 20 n\n" + "\ufeff猫眼屏 20 n\n")
    assert read_user_dict(path).entries == (("猫眼", 20, "n"), ("猫眼屏", 20, "n"))
    assert tokenizer(tokenizer_key("jieba", path, read_user_dict(path).sha256))("猫眼屏坏了")[0] == "猫眼屏"


@pytest.mark.parametrize(("text", "message"), [
    ("云桌面\n" + "词" * 101 + " 5\n", "terms.txt:2: a word of 101 characters; a user dictionary's words may be 100 "
                                      "characters at most (jieba's own are 16 at most)"),
    ("词" * 100_000 + "\n", "terms.txt:1: a line of 100,000 characters; a user dictionary's words may be 100 "
                            "characters at most (jieba's own are 16 at most)"),
    ("云桌面 " + "9" * 309 + "\n", "terms.txt:1: the frequency '99999999999999999999999999999999999999999999999999"
                                 "... (309 characters)' is too large; give a whole number up to 1e308"),
])
def test_a_word_or_frequency_beyond_its_bound_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            text: str, message: str) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError) as error:
        read_user_dict(write(tmp_path, text))
    assert str(error.value).startswith(message) and "\n" not in str(error.value)
    assert read_user_dict(write(tmp_path, "词" * 100 + " 5\n")).entries == (("词" * 100, 5, None),)


def test_jiebas_longest_word_is_within_the_bound() -> None:
    dictionary = Path(jieba.__file__).parent / "dict.txt"
    longest = max(len(line.split(" ")[0]) for line in dictionary.read_text(encoding="utf-8").splitlines())
    assert longest == 16 and longest < MAX_WORD
