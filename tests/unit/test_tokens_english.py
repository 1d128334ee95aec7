"""The English tokenizer: tokens checked by hand against the Snowball (Porter2) rules."""
from __future__ import annotations

import pytest

from pytest_ragretrieval.evalset.records import Chunk
from pytest_ragretrieval.retrievers.bm25 import BM25Retriever
from pytest_ragretrieval.retrievers.tokens import SNOWBALL_ENGLISH_STOP_WORDS, describe, tokenizer


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        # stop words the/are/over go; -es, -ing (+ undoubling), -y -> i, plural -s
        ("The quick brown foxes are running over the lazy dogs.", ["quick", "brown", "fox", "run", "lazi", "dog"]),
        # "don't" is a stop word because the apostrophe stays inside the word; 's is a possessive
        ("Don't refund the customer's shipping fee!", ["refund", "custom", "ship", "fee"]),
        # punctuation and hyphens separate; digits are tokens; -ed, -y, -s
        ("Error ORDER-2024: payment failed; retry in 3.5 seconds.",
         ["error", "order", "2024", "payment", "fail", "retri", "3", "5", "second"]),
        # typographic apostrophes and the ligature U+FB01 are normalised first (NFKC)
        ("It\u2019s the user\u2019s \ufb01le", ["user", "file"]),
        ("Ponies and caresses", ["poni", "caress"]),
        ("snake_case", ["snake", "case"]),
        # other scripts stay whole runs: no stemming applies to them
        ("住宿标准 per night", ["住宿标准", "per", "night"]),
        ("", []),
        ("?!... -- ''", []),
    ],
)
def test_english_tokens(text: str, tokens: list[str]) -> None:
    assert tokenizer("english")(text) == tokens


def test_the_stop_list_is_snowballs() -> None:
    """174 words; the ones Snowball comments out (us, will, can, may, must) are not stop words."""
    assert len(SNOWBALL_ENGLISH_STOP_WORDS) == 174
    assert {"the", "don't", "ourselves", "very"} <= SNOWBALL_ENGLISH_STOP_WORDS
    assert not {"us", "will", "can", "may", "must"} & SNOWBALL_ENGLISH_STOP_WORDS
    assert tokenizer("english")("us will can") == ["us", "will", "can"]


def test_the_fingerprint_names_the_rule_version_and_the_stemmer() -> None:
    from importlib.metadata import version

    assert describe("english") == f"english 1 (snowball stop list, PyStemmer {version('PyStemmer')})"


def test_bm25_over_english_matches_inflected_forms() -> None:
    chunks = [Chunk("a", "Refunds are processed within three days."), Chunk("b", "The shipping fee is paid by the buyer."),
              Chunk("c", "Support answers on weekdays."), Chunk("d", "Passwords expire every ninety days.")]
    retriever = BM25Retriever(chunks, tokenizer("english"), k1=1.5, b=0.75, epsilon=0.25, min_score=0.0)
    assert retriever("when is my refund processing?", 2) == ["a"]
    assert retriever("who pays for shipping", 2) == ["b"]
