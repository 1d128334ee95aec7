"""`tokenizer = "jieba-rs"`: jieba's cut by the Rust port (rjieba). Its tokens differ from jieba
0.42.1's only where docs/retrievers.md says: a run of ASCII letters and digits joined by `.`, `-`
or `_` is one token (jieba cuts it at each joiner and where digits meet letters after one)."""
from __future__ import annotations

import difflib
import json
import re
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from pytest_ragretrieval.core.optional import MissingExtra
from pytest_ragretrieval.retrievers.tokens import _jieba_rs, describe, tokenizer, tokenizer_key
from pytest_ragretrieval.retrievers.user_dict import read_user_dict

ROOT = Path(__file__).resolve().parents[2]
JOINED = re.compile(r"[a-z0-9]+(?:[._\-][a-z0-9]+)+|[0-9]+(?:\.[0-9]+)?[a-z]+")
"""One jieba-rs token where jieba gives several: letters and digits joined by `.`, `-` or `_` (TR-01,
a.b, foo_bar, 3.8), or a number glued to the letters after it (2.4km); tokens are lower-cased."""


def sample_texts() -> list[str]:
    lines = (ROOT / "fixtures" / "chunks.jsonl").read_text(encoding="utf-8").splitlines()
    lines += (ROOT / "fixtures" / "evalset.jsonl").read_text(encoding="utf-8").splitlines()
    return [record.get("text", record.get("query")) for record in map(json.loads, lines)]


def differences(theirs: list[str], ours: list[str]) -> list[tuple[list[str], list[str]]]:
    """The spans where two token lists differ: (jieba's tokens, jieba-rs's tokens)."""
    opcodes = difflib.SequenceMatcher(a=theirs, b=ours, autojunk=False).get_opcodes()
    return [(theirs[i1:i2], ours[j1:j2]) for op, i1, i2, j1, j2 in opcodes if op != "equal"]


def test_on_the_sample_the_tokens_differ_only_in_joined_ascii_runs() -> None:
    jieba, rs = tokenizer("jieba"), tokenizer("jieba-rs")
    spans = [span for text in sample_texts() for span in differences(jieba(text), rs(text))]
    # docs/retrievers.md: 455 of jieba's 13,528 tokens, in 144 places, are 145 tokens of jieba-rs
    assert (len(spans), sum(len(theirs) for theirs, _ in spans), sum(len(ours) for _, ours in spans)) == (144, 455, 145)
    for theirs, ours in spans:
        assert "".join(theirs) == "".join(ours), (theirs, ours)
        assert all(JOINED.fullmatch(token) for token in ours), (theirs, ours)
        assert len(theirs) > len(ours)


@pytest.mark.parametrize(("text", "theirs", "ours"), [
    ("在python-3.8上", ["在", "python", "-", "3.8", "上"], ["在", "python-3.8", "上"]),
    ("foo_bar和a.b", ["foo", "_", "bar", "和", "a", ".", "b"], ["foo_bar", "和", "a.b"]),
    ("全长2.4km", ["全长", "2.4", "km"], ["全长", "2.4km"]),
    ("笔记本电脑丢了", ["笔记本电脑", "丢", "了"], ["笔记本电脑", "丢", "了"]),
    # CMRC 2018's dev set, as docs/retrievers.md quotes it
    ("CCTV-1频道", ["cctv", "-", "1", "频道"], ["cctv-1", "频道"]),
    ("编号QS3304.1201.0002的产品", ["编号", "qs3304.1201", ".", "0002", "的", "产品"],
     ["编号", "qs3304.1201.0002", "的", "产品"]),
    ("斜坡。常在较陡峭的礁岸", ["斜坡", "。", "常", "在", "较", "陡峭", "的", "礁岸"],
     ["斜坡", "。", "常在", "较", "陡峭", "的", "礁岸"]),  # the HMM, rarely: 2 places on CMRC
])
def test_the_documented_cases(text: str, theirs: list[str], ours: list[str]) -> None:
    assert tokenizer("jieba")(text) == theirs
    assert tokenizer("jieba-rs")(text) == ours


def test_recorded_with_rjiebas_version() -> None:
    assert describe("jieba-rs") == f"jieba-rs (rjieba {version('rjieba')})"


def test_a_user_dictionary_adds_its_words(tmp_path: Path) -> None:
    path = tmp_path / "terms.txt"
    path.write_text("云桌面 100 n\n", encoding="utf-8")
    key = tokenizer_key("jieba-rs", path, read_user_dict(path).sha256)
    assert tokenizer(key)("云桌面登录失败") == ["云桌面", "登录", "失败"]
    assert tokenizer("jieba-rs")("云桌面登录失败") == ["云", "桌面", "登录", "失败"]


def test_with_the_samples_user_dictionary_the_same_class_of_differences() -> None:
    path = ROOT / "fixtures" / "user_dict.txt"
    sha256 = read_user_dict(path).sha256
    jieba, rs = tokenizer(tokenizer_key("jieba", path, sha256)), tokenizer(tokenizer_key("jieba-rs", path, sha256))
    spans = [span for text in sample_texts() for span in differences(jieba(text), rs(text))]
    assert spans and all(all(JOINED.fullmatch(token) for token in ours) for _, ours in spans)
    assert "扫地机器人" in rs("澜星扫地机器人的集尘袋") and "集尘袋" in rs("澜星扫地机器人的集尘袋")


def test_without_rjieba_one_line_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "rjieba", None)
    with pytest.raises(MissingExtra, match=r"^tokenizer 'jieba-rs' needs rjieba, which .*"
                       r"install pytest-ragretrieval\[jieba-rs\] \(the README's install line with \[jieba-rs\]\)$"):
        _jieba_rs(None)
