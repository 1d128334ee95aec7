"""The one digest the baseline keeps of anything: canonical JSON (sorted keys, no spaces), SHA-256, cut."""
from __future__ import annotations

import hashlib
import json
from typing import Any

SHORT = 12
"""Hex digits of a per-chunk or per-question digest: 48 bits, so that two versions of one chunk
collide with a chance of 1 in 2**48, and a 20,000-chunk baseline stays small."""

_CANONICAL = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"))
"""`json.dumps` with these arguments builds an encoder per call: one, made once, writes the same text."""


def digest(records: Any, length: int = 64) -> str:
    text = _CANONICAL.encode(records)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]
