"""Keeping DSN passwords out of every message: the DSN redacted, driver messages scrubbed, one line each.

The masking itself (by value, before any cutting) is `core/redact.py`'s, shared with the embedders.
"""
from __future__ import annotations

import re

from ..core.redact import MASK, mask, one_line

__all__ = ["MASK", "one_line", "passwords", "redact", "scrub"]

_URL_FORM = re.compile(r"^(?P<scheme>\s*[a-z][a-z0-9+.-]*://)(?P<rest>.*)$", re.IGNORECASE | re.DOTALL)
_URL_PASSWORD_PARAM = re.compile(r"(?P<key>[?&]password=)(?P<value>[^&#]*)", re.IGNORECASE)
_KV_PASSWORD = re.compile(r"(?P<key>\bpassword\s*=\s*)(?P<value>'(?:[^'\\]|\\.)*'?|\S+)", re.IGNORECASE)
_EMBEDDED_URL = re.compile(r"postgres(?:ql)?://\S*", re.IGNORECASE)


def _userinfo_password(rest: str) -> str:
    """The URL password as written: after the first ':' and up to the last '@', so a raw '@' or '/' in it counts."""
    at = rest.rfind("@")
    return rest[:at].partition(":")[2] if at >= 0 else ""


def _redact_url(scheme: str, rest: str) -> str:
    if _userinfo_password(rest):
        at = rest.rfind("@")
        rest = f"{rest[:at].partition(':')[0]}:{MASK}{rest[at:]}"
    return scheme + _URL_PASSWORD_PARAM.sub(lambda m: m.group("key") + MASK, rest)


def _parsed_password(dsn: str) -> str | None:
    """The password as libpq understands the DSN, to catch forms our patterns miss."""
    try:
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        return None
    try:
        value = conninfo_to_dict(dsn).get("password")
    except Exception:
        return None
    return str(value) if value else None


def passwords(dsn: str) -> set[str]:
    """The DSN's password as written and as libpq parses it (redact.mask adds the encoded spellings)."""
    found = {_parsed_password(dsn) or ""}
    match = _URL_FORM.match(dsn)
    if match:
        rest = match.group("rest")
        found.add(_userinfo_password(rest))
        found.update(m.group("value") for m in _URL_PASSWORD_PARAM.finditer(rest))
    else:
        for m in _KV_PASSWORD.finditer(dsn):
            found.update({m.group("value"), m.group("value").strip("'")})
    return {password for password in found if password and password != MASK}


def redact(dsn: str) -> str:
    """The DSN with any password replaced by `***`, in URL or key=value form."""
    match = _URL_FORM.match(dsn)
    if match:
        safe = _redact_url(match.group("scheme"), match.group("rest"))
    else:
        safe = _KV_PASSWORD.sub(lambda m: m.group("key") + MASK, dsn)
    if MASK in safe:
        return safe
    return mask(safe, passwords(dsn), shortest=1)


def scrub(message: str, dsn: str) -> str:
    """A driver message on one line, with the DSN's password and any echoed DSN masked, then cut."""
    text = mask(message, passwords(dsn), shortest=1)
    text = _EMBEDDED_URL.sub(lambda m: redact(m.group(0)), text)
    text = _KV_PASSWORD.sub(lambda m: m.group("key") + MASK, text)
    return one_line(text)
