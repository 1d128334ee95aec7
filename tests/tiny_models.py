"""A tiny cross-encoder the tests build and save themselves: no hub, no download, under a second."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def vocabulary(texts: Iterable[str]) -> list[str]:
    """Special tokens, every character of `texts` (lower-cased) and `##` pieces of ASCII letters and digits.

    BERT's tokenizer splits Chinese into characters and other words into word pieces, so with
    these every token of the texts is known and scores depend on the text, not on [UNK].
    """
    chars = sorted({char for text in texts for char in text.lower() if not char.isspace()})
    return SPECIAL_TOKENS + chars + [f"##{char}" for char in chars if char.isascii() and char.isalnum()]


def build_cross_encoder(folder: Path, texts: Iterable[str], seed: int = 0) -> Path:
    """Save a seeded two-layer BERT with a one-logit head, and its tokenizer, into `folder`.

    initializer_range is 0.2 rather than BERT's 0.02: untrained, the smaller weights give every
    pair nearly the same score, and the rankings would hang on rounding.
    """
    import torch
    from transformers import (
        BertConfig,
        BertForSequenceClassification,
        BertTokenizerFast,
    )

    folder.mkdir(parents=True, exist_ok=True)
    vocab = vocabulary(texts)
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast.from_pretrained(str(folder), model_max_length=128)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        initializer_range=0.2,
        num_labels=1,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = BertForSequenceClassification(config)
    model.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


def cross_encoder_scores(folder: Path, query: str, texts: Sequence[str], batch_size: int = 32) -> list[float]:
    """Scores of (query, text) pairs from sentence-transformers' CrossEncoder, called as the reranker calls it."""
    from sentence_transformers import CrossEncoder

    encoder = CrossEncoder(str(folder), device="cpu", local_files_only=True)
    scores = encoder.predict([(query, text) for text in texts], batch_size=batch_size, show_progress_bar=False)
    return [float(score) for score in scores]
