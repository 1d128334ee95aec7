"""Secrets out of every message: masked by their value, wherever they appear, before any cutting.

A server or driver may echo what we sent (the API key, the DSN password) anywhere in a long
message. Masking the whole text first and cutting it afterwards is what keeps a cut from
leaving the first characters of a secret behind; masking by value is what catches keys of any
shape (OpenAI's `sk-...`, vLLM, TEI and Azure keys alike).
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import quote, unquote

MASK = "***"
MESSAGE_LIMIT = 400
MIN_SECRET = 4
"""Shorter values are not masked: masking "ab" would garble every message and hide nothing."""

_KEY_LIKE = re.compile(r"\bsk-[A-Za-z0-9_*.\-]{3,}")
"""OpenAI-style keys, also partly starred ones a server echoes (`sk-test-****7890`)."""


def spellings(secret: str, shortest: int = MIN_SECRET) -> set[str]:
    """The secret as written, URL-decoded and URL-encoded: servers echo any of them."""
    if not secret:
        return set()
    forms = {secret, unquote(secret), quote(secret, safe=""), quote(secret, safe=" +")}
    return {form for form in forms if len(form) >= shortest and form != MASK}


def mask(text: str, secrets: Iterable[str], shortest: int = MIN_SECRET) -> str:
    """`text` with every spelling of every secret, and anything shaped like an OpenAI key, replaced by `***`."""
    forms: set[str] = set()
    for secret in secrets:
        forms |= spellings(secret, shortest)
    for form in sorted(forms, key=len, reverse=True):
        text = text.replace(form, MASK)
    return _KEY_LIKE.sub("sk-" + MASK, text)


def one_line(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """Whitespace collapsed and long output cut, so every error stays one line; mask before calling this."""
    line = " ".join(text.split()) or "no message"
    return line if len(line) <= limit else line[: limit - 3] + "..."


def safe_line(text: str, secrets: Iterable[str], limit: int = MESSAGE_LIMIT) -> str:
    """Masked first, then one line cut to `limit`: the order that never shows part of a secret."""
    return one_line(mask(text, secrets), limit)
