"""The chunkers a team would compare: `recursive`, the caps of `sentences` and `markdown`, sizes in every
character or in tokens, and sentence ends that survive abbreviations and cut at 。！？. On committed
excerpts of about 20,000 characters (tests/unit/data/chunking/README.md says where from): every capped
chunk within its cap, no character lost, every chunk an exact slice."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_ragretrieval.core.errors import ConfigError
from pytest_ragretrieval.evalset.chunkers import Chunker, Measure, chunk_documents, sentence_bounds, token_bounds
from pytest_ragretrieval.evalset.documents import Document

DATA = Path(__file__).parent / "data" / "chunking"
TEXTS = {name: (DATA / name).read_text(encoding="utf-8") for name in ("english.txt", "chinese.txt", "markdown.md")}
CASES = json.loads((DATA / "sentences.json").read_text(encoding="utf-8"))
CAPPED = (
    Chunker("recursive", size=1000, overlap=200),
    Chunker("recursive", size=300, overlap=0),
    Chunker("recursive", size=64, overlap=16, unit="tokens"),
    Chunker("sentences", size=3, overlap=1, cap=400),
    Chunker("sentences", size=5, cap=50, unit="tokens"),
    Chunker("markdown", size=800),
    Chunker("markdown", size=120, unit="tokens"),
    Chunker("tokens", size=700, overlap=70, tokenizer="characters"),
)


def cap_of(chunker: Chunker) -> int:
    return chunker.cap or chunker.size


def test_at_least_twenty_abbreviation_and_cjk_cases() -> None:
    texts = " ".join(case["text"] for case in CASES)
    for mark in ("Dr.", "U.S.", "e.g.", "i.e.", "No.", "Fig.", "Mr.", "etc.", "。", "！", "？", "……"):
        assert mark in texts
    assert len(CASES) >= 20


@pytest.mark.parametrize("case", CASES, ids=lambda case: case["text"][:24])
def test_sentence_ends_survive_abbreviations_and_cut_at_cjk_marks(case: dict[str, list[str] | str]) -> None:
    text = case["text"]
    assert isinstance(text, str)
    bounds = sentence_bounds(text)
    assert [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)] == case["sentences"]


@pytest.mark.parametrize("name", TEXTS)
@pytest.mark.parametrize("chunker", CAPPED, ids=lambda c: f"{c.type}-{c.size}-{c.cap}-{c.unit}-{c.tokenizer}")
def test_every_chunk_within_its_cap_nothing_lost_every_chunk_a_slice(name: str, chunker: Chunker) -> None:
    text = TEXTS[name]
    chunks = chunk_documents([Document("d", text)], chunker, Path("."))
    measure = Measure(text, Chunker("tokens", tokenizer=chunker.tokenizer) if chunker.type == "tokens" else chunker)
    covered = bytearray(len(text))
    for before, chunk in zip((None, *chunks), chunks, strict=False):
        assert chunk.start is not None and chunk.end is not None
        assert chunk.text == text[chunk.start:chunk.end] and chunk.text.strip()
        assert measure(chunk.start, chunk.end) <= cap_of(chunker)
        if before is not None:
            assert before.start is not None and before.end is not None
            assert before.start < chunk.start <= before.end  # in order, no gap
        covered[chunk.start:chunk.end] = b"\x01" * len(chunk.text)
    assert all(flag or text[at].isspace() for at, flag in enumerate(covered))


def test_a_character_is_every_character() -> None:
    text = "word " * 300
    chunks = chunk_documents([Document("d", text)], Chunker("tokens", size=512, overlap=0, tokenizer="characters"),
                             Path("."))
    assert len(chunks[0].text) == 512  # "chars" counts non-space code points: 640 characters here
    legacy = chunk_documents([Document("d", text)], Chunker("tokens", size=512, overlap=0, tokenizer="chars"),
                             Path("."))
    assert len(legacy[0].text) == 640


def test_recursive_cuts_paragraphs_then_sentences_then_words() -> None:
    text = ("First paragraph. It is short.\n\n" + "A long sentence of many words that goes on and on. " * 3
            + "\n\nLast one.")
    chunks = chunk_documents([Document("d", text)], Chunker("recursive", size=60), Path("."))
    assert [c.text for c in chunks] == [
        "First paragraph. It is short.\n\n",
        "A long sentence of many words that goes on and on. ",
        "A long sentence of many words that goes on and on. ",
        "A long sentence of many words that goes on and on. \n\n",
        "Last one.",
    ]
    words = chunk_documents([Document("d", "x" * 10 + " " + "y" * 10)], Chunker("recursive", size=8), Path("."))
    assert [c.text for c in words] == ["xxxxxxxx", "xx yyyyy", "yyyyy"]  # a word over the cap: characters


def test_recursive_overlap_repeats_the_last_pieces_within_the_overlap() -> None:
    text = "one two three four five six seven eight"
    chunks = chunk_documents([Document("d", text)], Chunker("recursive", size=14, overlap=6), Path("."))
    assert [c.text for c in chunks] == ["one two three ", "three four ", "four five six ", "six seven ",
                                        "seven eight"]


def test_sentences_with_a_cap_hold_no_chunk_over_it() -> None:
    long = "A sentence that is far too long for its cap and keeps going without an end in sight "
    text = "Short one. " + long * 3 + ". Another short one. And one more."
    chunks = chunk_documents([Document("d", text)], Chunker("sentences", size=3, cap=100), Path("."))
    assert max(len(c.text) for c in chunks) <= 100
    assert chunks[-1].text.endswith("Another short one. And one more.")
    uncapped = chunk_documents([Document("d", text)], Chunker("sentences", size=3), Path("."))
    assert max(len(c.text) for c in uncapped) > 100


def test_markdown_splits_a_paragraph_over_its_size() -> None:
    text = "# Title\n\n" + "Words in a paragraph that never ends. " * 20 + "\n\n## Next\n\nShort."
    chunks = chunk_documents([Document("d.md", text)], Chunker("markdown", size=200), Path("."))
    assert max(len(c.text) for c in chunks) <= 200
    assert {tuple(c.metadata["headings"]) for c in chunks} == {("Title",), ("Title", "Next")}
    assert "".join(c.text for c in chunks) == text


def test_a_cap_in_tokens_counts_the_tokenizers_tokens() -> None:
    text = "笔记本电脑丢失后须报告。" * 10
    chunker = Chunker("recursive", size=20, unit="tokens")
    chunks = chunk_documents([Document("d", text)], chunker, Path("."))
    for chunk in chunks:
        assert len(token_bounds(chunk.text, "unicode")) - 1 <= 20
    assert "".join(c.text for c in chunks) == text


def test_the_fingerprint_tells_the_new_rules_and_units_apart() -> None:
    assert Chunker("sentences", size=3).described() == {"type": "sentences", "size": 3, "overlap": 0, "version": 2}
    assert Chunker("sentences", size=3, cap=500).described()["cap"] == 500
    assert Chunker("markdown", size=2000).described() == {"type": "markdown", "size": 2000, "version": 2,
                                                          "unit": "characters"}
    assert Chunker("recursive", size=100, unit="tokens").described() == {
        "type": "recursive", "size": 100, "overlap": 0, "unit": "tokens", "tokenizer": "unicode"}
    assert (Chunker("tokens", 512, 64, "characters").described()
            != Chunker("tokens", 512, 64, "chars").described())


def config(tmp_path: Path, body: str) -> Chunker:
    from pytest_ragretrieval.config.settings import load_config

    (tmp_path / "docs.jsonl").write_text('{"id": "a", "text": "x"}\n', encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.ragretrieval]\ndocuments = "docs.jsonl"\nevalset = "e.jsonl"\n'
        '[tool.ragretrieval.retrievers.bm25]\ntype = "bm25"\n'
        f"[tool.ragretrieval.chunker]\n{body}\n", encoding="utf-8")
    found = load_config(None, tmp_path).chunker
    assert found is not None
    return found


def test_the_config_reads_the_new_keys(tmp_path: Path) -> None:
    assert config(tmp_path, 'type = "recursive"') == Chunker("recursive", size=1000)
    assert config(tmp_path, 'type = "recursive"\nsize = 256\noverlap = 32\nunit = "tokens"') == \
        Chunker("recursive", size=256, overlap=32, unit="tokens")
    assert config(tmp_path, 'type = "sentences"\ncap = 1500') == Chunker("sentences", size=3, cap=1500)
    assert config(tmp_path, 'type = "tokens"\ntokenizer = "characters"') == \
        Chunker("tokens", 512, 64, "characters")
    with pytest.raises(ConfigError, match=r"chunker key 'tokenizer': counts tokens, and this chunker's unit is "
                                          r"characters; set unit = \"tokens\" or remove the tokenizer"):
        config(tmp_path, 'type = "recursive"\ntokenizer = "unicode"')
    with pytest.raises(ConfigError, match=r"chunker key 'overlap': must be below size \(100\), got 100"):
        config(tmp_path, 'type = "recursive"\nsize = 100\noverlap = 100')
    with pytest.raises(ConfigError, match=r"chunker key 'unit'"):
        config(tmp_path, 'type = "markdown"\nunit = "words"')
