"""Keeping DSN passwords out of every message: the DSN redacted, driver messages scrubbed, one line each."""
from __future__ import annotations

import re
from urllib.parse import quote, unquote

MASK = "***"
MESSAGE_LIMIT = 400

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


def _passwords(dsn: str) -> set[str]:
    """Every spelling of the DSN's password: as written, decoded, encoded, and as libpq parses it."""
    found = {_parsed_password(dsn) or ""}
    match = _URL_FORM.match(dsn)
    if match:
        rest = match.group("rest")
        found.add(_userinfo_password(rest))
        found.update(m.group("value") for m in _URL_PASSWORD_PARAM.finditer(rest))
    else:
        for m in _KV_PASSWORD.finditer(dsn):
            found.update({m.group("value"), m.group("value").strip("'")})
    forms = set()
    for password in filter(None, found):
        forms.update({password, unquote(password), quote(password, safe=""), quote(password, safe=" +")})
    return {form for form in forms if form and form != MASK}


def _mask_literal(text: str, passwords: set[str]) -> str:
    for password in sorted(passwords, key=len, reverse=True):
        text = text.replace(password, MASK)
    return text


def redact(dsn: str) -> str:
    """The DSN with any password replaced by `***`, in URL or key=value form."""
    match = _URL_FORM.match(dsn)
    if match:
        safe = _redact_url(match.group("scheme"), match.group("rest"))
    else:
        safe = _KV_PASSWORD.sub(lambda m: m.group("key") + MASK, dsn)
    if MASK in safe:
        return safe
    return _mask_literal(safe, _passwords(dsn))


def scrub(message: str, dsn: str) -> str:
    """A driver message on one line, with the DSN's password and any echoed DSN masked."""
    text = _mask_literal(message, _passwords(dsn))
    text = _EMBEDDED_URL.sub(lambda m: redact(m.group(0)), text)
    text = _KV_PASSWORD.sub(lambda m: m.group("key") + MASK, text)
    return one_line(text)


def one_line(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """Whitespace collapsed and long driver or Docker output cut, so every error stays one line."""
    line = " ".join(text.split()) or "no message"
    return line if len(line) <= limit else line[: limit - 3] + "..."
