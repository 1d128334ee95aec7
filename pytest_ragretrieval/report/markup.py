"""HTML built as strings, escaped once: the element helpers the page and its chart share."""
from __future__ import annotations

from html import escape


def e(text: object) -> str:
    return escape(str(text), quote=True)


def attrs(**values: object) -> str:
    """Escaped attributes; `data_x` becomes `data-x`, `cls` becomes `class`, None is left out."""
    parts = []
    for key, value in values.items():
        name = "class" if key == "cls" else key.replace("_", "-")
        if value is not None:
            parts.append(f' {name}="{e(value)}"')
    return "".join(parts)


def el(name: str, content: str = "", **values: object) -> str:
    """An element around already escaped content."""
    return f"<{name}{attrs(**values)}>{content}</{name}>"


def void(name: str, **values: object) -> str:
    return f"<{name}{attrs(**values)}/>"


def number(value: float | None) -> str | None:
    return None if value is None else f"{value:.6f}"


def fmt2(x: float) -> str:
    return f"{x:.2f}"
