"""Reading TOML tables at the boundary: every value is checked, every leftover key is an error."""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, overload

from ..core.errors import Choice, ConfigError, did_you_mean
from ..core.urls import url_problem

_MISSING: Any = object()
"""The default of a required key: its absence is an error."""
MAX_INTEGER = 2**31 - 1
"""The largest integer a setting takes (k, depths, batch sizes): beyond it Postgres, numpy and range() fail."""


def shown(value: Any) -> str:
    """A value as the message quotes it: a number of 400 digits by its first digits and its length."""
    text = repr(value)
    return text if len(text) <= 24 else f"{text[:20]}... ({len(text)} characters)"


class Table:
    """One TOML table being read; `where` names the file and table in every error."""

    def __init__(self, data: Mapping[str, Any], where: str, root: Path | None = None) -> None:
        self.data = dict(data)
        self.where = where
        self.root = root or Path.cwd()
        """The config file's folder: the table's relative paths are relative to it."""
        self.known: list[str] = []

    def error(self, key: str, problem: str) -> ConfigError:
        return ConfigError(f"{self.where} key {key!r}: {problem}")

    def url(self, key: str, instead: str) -> str | None:
        """An optional http(s) server address, checked now (`core/urls.py`); `instead` says where its API
        key goes rather than in the URL."""
        value = self.text(key, None)
        problem = None if value is None else url_problem(value, instead)
        if problem is not None:
            raise self.error(key, problem)
        return value

    def _get(self, key: str, default: Any) -> tuple[bool, Any]:
        """(given, value): `given` is False when the default stands in for an absent key."""
        self.known.append(key)
        if key in self.data:
            return True, self.data[key]
        if default is _MISSING:
            raise ConfigError(f"{self.where}: missing key {key!r}")
        return False, default

    def has(self, key: str) -> bool:
        return key in self.data

    @overload
    def text(self, key: str, *, choices: Iterable[str] | None = None) -> str: ...

    @overload
    def text(self, key: str, default: str, choices: Iterable[str] | None = None) -> str: ...

    @overload
    def text(self, key: str, default: str | None, choices: Iterable[str] | None = None) -> str | None: ...

    def text(self, key: str, default: str | None = _MISSING, choices: Iterable[str] | None = None) -> str | None:
        given, value = self._get(key, default)
        if not given:
            return default
        if not isinstance(value, str) or not value.strip():
            raise self.error(key, f"must be a non-empty string, got {value!r}")
        options = list(choices) if choices is not None else None
        if options is not None and value not in options:
            raise self.error(
                key, f"must be one of {', '.join(map(repr, options))}, got {value!r}{did_you_mean(value, options)}"
            )
        return value

    def choice(self, key: str, default: Choice, choices: Sequence[Choice]) -> Choice:
        """A text among `choices`, read as `text` reads it (the same errors), typed as the choices are."""
        value = self.text(key, default, choices=choices)
        return next(option for option in choices if option == value)

    @overload
    def integer(self, key: str, *, minimum: int | None = None) -> int: ...

    @overload
    def integer(self, key: str, default: int, minimum: int | None = None) -> int: ...

    @overload
    def integer(self, key: str, default: int | None, minimum: int | None = None) -> int | None: ...

    def integer(self, key: str, default: int | None = _MISSING, minimum: int | None = None) -> int | None:
        given, value = self._get(key, default)
        if not given:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(key, f"must be an integer, got {shown(value)}")
        if minimum is not None and value < minimum:
            raise self.error(key, f"must be >= {minimum}, got {shown(value)}")
        if value > MAX_INTEGER:
            raise self.error(key, f"must be <= {MAX_INTEGER}, got {shown(value)}")
        return value

    @overload
    def number(self, key: str, *, minimum: float | None = None, maximum: float | None = None) -> float: ...

    @overload
    def number(self, key: str, default: float, minimum: float | None = None, maximum: float | None = None) -> float: ...

    @overload
    def number(
        self, key: str, default: float | None, minimum: float | None = None, maximum: float | None = None
    ) -> float | None: ...

    def number(
        self, key: str, default: float | None = _MISSING, minimum: float | None = None, maximum: float | None = None
    ) -> float | None:
        given, value = self._get(key, default)
        if not given:
            return default
        return self.check_number(key, value, minimum, maximum)

    def check_number(self, key: str, value: Any, minimum: float | None, maximum: float | None) -> float:
        """A finite number in range: an integer too large for a float (400 digits) or inf is refused by name."""
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            raise self.error(key, f"must be a number, got {shown(value)}")
        if minimum is not None and value < minimum:
            raise self.error(key, f"must be >= {minimum}, got {shown(value)}")
        if maximum is not None and value > maximum:
            raise self.error(key, f"must be <= {maximum}, got {shown(value)}")
        number = finite(value)
        if number is None:
            raise self.error(key, f"must be a finite number, got {shown(value)}")
        return number

    @overload
    def texts(self, key: str, *, non_empty: bool = True) -> list[str]: ...

    @overload
    def texts(self, key: str, default: list[str], non_empty: bool = True) -> list[str]: ...

    @overload
    def texts(self, key: str, default: list[str] | None, non_empty: bool = True) -> list[str] | None: ...

    def texts(self, key: str, default: list[str] | None = _MISSING, non_empty: bool = True) -> list[str] | None:
        given, value = self._get(key, default)
        if not given:
            return default
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise self.error(key, f"must be a list of non-empty strings, got {value!r}")
        if non_empty and not value:
            raise self.error(key, "must not be empty")
        if len(set(value)) != len(value):
            raise self.error(key, "lists an entry twice")
        return list(value)

    def boolean(self, key: str, default: bool) -> bool:
        given, value = self._get(key, default)
        if given and not isinstance(value, bool):
            raise self.error(key, f"must be true or false, got {value!r}")
        return bool(value)

    def raw(self, key: str, default: Any = _MISSING) -> Any:
        return self._get(key, default)[1]

    def finish(self) -> None:
        """Reject keys nobody asked for: a typo must not silently fall back to a default."""
        unknown = sorted(set(self.data) - set(self.known))
        if unknown:
            known = sorted(set(self.known))
            raise ConfigError(
                f"{self.where}: unknown key {unknown[0]!r}{did_you_mean(unknown[0], known) or ';'} "
                f"known keys: {', '.join(known)}"
            )


def finite(value: int | float) -> float | None:
    """`value` as a finite float, or None: an integer beyond float range (10**400) or an infinity."""
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None
