"""The address of an outside server (an embedding, rerank or judge service), checked where it is given.

A port that is no number, an unclosed `[` or a line break in a URL surfaced deep in an HTTP client as
a traceback; a `user:password@` in it was sent as HTTP Basic auth in place of the API key, so a server
that echoed the header showed the password's base64, which no masking by value catches. So every URL
option and key is checked at the boundary by `url_problem`, and the caller names the option and the
fix in one line. Credentials are refused rather than masked: keys go in the environment variables
the options name.
"""
from __future__ import annotations

import unicodedata
from urllib.parse import urlsplit

SCHEMES = ("http", "https")
SHOWN = 80
"""How much of a bad URL a line quotes."""


def url_problem(value: str, instead: str) -> str | None:
    """What is wrong with `value` as an http(s) address, said as the rest of one line; None when nothing
    is. `instead` says where a key goes rather than in the URL (`the key goes in OPENAI_API_KEY`). Never
    quotes a URL that holds credentials."""
    odd = next((char for char in value if char.isspace() or unicodedata.category(char) in ("Cc", "Cf")), None)
    if odd is not None:
        return f"holds {'a space' if odd == ' ' else f'a control character (U+{ord(odd):04X})'}; write the URL alone"
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - parsed here so that a bad port is refused now, not in the client
    except ValueError as exc:
        return f"{shown(value)} is not a URL ({exc}); write it as http://host:port/path"
    if parts.username is not None or parts.password is not None:
        return ("holds a user name or password (user:password@), which an HTTP client sends as Basic auth and a "
                f"server may echo; remove them ({instead})")
    if parts.scheme not in SCHEMES or not parts.hostname:
        return f"{shown(value)} is not an http:// or https:// URL with a host; write it as http://host:port/path"
    return None


def shown(value: str) -> str:
    """A URL as a message quotes it: cut."""
    return repr(value if len(value) <= SHOWN else value[:SHOWN - 3] + "...")
