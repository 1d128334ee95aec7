"""Finding the settings: `[tool.ragretrieval]` of pyproject.toml, or a `--rag-config` file, read as TOML.

A table that looks like ours misspelt is named with the right spelling, instead of the plugin
reporting the first key it misses.
"""
from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

from ..core.errors import ConfigError, closest
from ..files.paths import Unreadable, display, read_input

TABLE = "ragretrieval"


def _read_toml(path: Path) -> dict[str, Any]:
    """The file's TOML; every way of failing (not a file, not UTF-8, nested too deeply) is one line."""
    try:
        data = read_input(path)
    except Unreadable as exc:
        problem = "config file not found" if exc.missing else str(exc)
        raise ConfigError(f"{display(path)}: {problem}") from None
    try:
        return tomllib.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{display(path)}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{display(path)}: invalid TOML ({exc})") from None
    except RecursionError:
        raise ConfigError(f"{display(path)}: invalid TOML (arrays or tables nested too deeply)") from None
    except ValueError as exc:
        raise ConfigError(f"{display(path)}: invalid TOML ({str(exc).splitlines()[0]})") from None


def find_settings(config_option: str | None, rootpath: Path) -> tuple[Path, str, dict[str, Any]]:
    """(file, dotted name of the settings table, table) from `--rag-config` or pyproject.toml."""
    if config_option:
        path = Path(config_option)
        if not path.is_absolute():
            path = Path.cwd() / path
        top = _read_toml(path)
        if "chunks" not in top and isinstance(top.get("tool"), dict) and TABLE in top["tool"]:
            raise ConfigError(
                f"{display(path)}: the settings sit in a [tool.{TABLE}] table, but a --rag-config file holds "
                "them at top level; remove the table header (and the prefix of its sub-tables: [retrievers.NAME])"
            )
        return path, "", top
    path = rootpath / "pyproject.toml"
    if not path.exists():
        raise ConfigError(
            f"no pyproject.toml in {display(rootpath)}; add a [tool.ragretrieval] table there "
            "or pass --rag-config PATH"
        )
    found = _read_toml(path).get("tool")
    tool: dict[str, Any] = found if isinstance(found, dict) else {}
    data = tool.get(TABLE)
    near = misspelt(tool)
    if near is not None and (not isinstance(data, dict) or "chunks" not in data):
        raise ConfigError(
            f"{display(path)}: [tool.{near}] is not read: the plugin's table is [tool.{TABLE}]; rename it "
            f"(and its sub-tables, [tool.{TABLE}.retrievers.NAME])"
        )
    if data is None:
        raise ConfigError(
            f"{display(path)} has no [tool.{TABLE}] table; add one (see the README) or pass --rag-config PATH"
        )
    if not isinstance(data, dict):
        raise ConfigError(f"{display(path)}: tool.{TABLE} must be a table, got {type(data).__name__}")
    return path, f"tool.{TABLE}", data


def misspelt(tool: dict[str, Any]) -> str | None:
    """The [tool.X] table that looks like ours misspelt ([tool.ragretreival], [tool.rag-retrieval]), shown
    as TOML writes its name; None when there is none."""
    def squeezed(name: str) -> str:
        return re.sub(r"[^a-z0-9]", "", name.lower())

    tables = {squeezed(name): name for name, value in tool.items() if name != TABLE and isinstance(value, dict)}
    near = closest(TABLE, tables, cutoff=0.8)
    if near is None:
        return None
    name = tables[near]
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else json.dumps(name, ensure_ascii=False)


def place(source: Path, dotted: str) -> str:
    """How messages name a table: `pyproject.toml [tool.ragretrieval.retrievers.bm25]`."""
    shown = dotted if dotted.isprintable() else repr(dotted)[1:-1]
    return f"{display(source)} [{shown}]" if dotted else display(source)
