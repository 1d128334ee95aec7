"""Secrets masked by value, in every spelling, before a message is cut to one line."""
from __future__ import annotations

from pytest_ragretrieval.core.redact import mask, one_line, safe_line
from pytest_ragretrieval.database.dsn import scrub


def test_any_key_is_masked_by_its_value() -> None:
    for key in ("tei-0123456789abcdef", "hf_AbCdEf0123456789", "3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c"):
        assert mask(f"key {key} rejected", [key]) == "key *** rejected"


def test_encoded_spellings_are_masked_too() -> None:
    assert mask("token=p%40ss%2Fword%21 and p@ss/word!", ["p@ss/word!"]) == "token=*** and ***"


def test_openai_shaped_keys_are_masked_without_being_known() -> None:
    assert mask("Incorrect API key provided: sk-test-****7890.", []) == "Incorrect API key provided: sk-***"


def test_masking_comes_before_the_cut() -> None:
    key = "azure-9f8e7d6c5b4a39281706"
    text = "x" * 95 + key
    assert one_line(text, 100) == "x" * 95 + "az..."
    assert safe_line(text, [key], 100) == "x" * 95 + "***"


def test_short_values_are_left_alone_unless_asked() -> None:
    assert mask("an ab", ["ab"]) == "an ab"
    assert mask("an ab", ["ab"], shortest=1) == "an ***"


def test_dsn_messages_are_masked_then_cut() -> None:
    password = "Hunter2-Hunter2-Hunter2"
    dsn = f"postgresql://rag:{password}@db.example:5432/rag"
    line = scrub("y" * 390 + f" password {password} failed", dsn)
    assert "Hunter" not in line and len(line) == 400
