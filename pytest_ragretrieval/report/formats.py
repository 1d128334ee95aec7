"""The registry of report file formats: each is one module with `render(data) -> str` and one line here,
or, from another distribution, an entry point in the group `pytest_ragretrieval.formats` naming its FileFormat.

Kept free of heavy imports: the plugin reads it to add one `--rag-*` option per format, when pytest
adds its options, so a third party's format is known by then too.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from ..core.extensions import Registry

if TYPE_CHECKING:
    from ..record.report import ReportInput


class Renderer(Protocol):
    """A format module: the same input always renders the same text (no dates, no dict-order surprises)."""

    def render(self, data: ReportInput) -> str: ...


@dataclass(frozen=True)
class FileFormat:
    """A report written to the path its option names."""

    name: str
    flag: str
    dest: str
    help: str
    module: str


def checked_format(name: str, value: object, members: Mapping[str, FileFormat]) -> FileFormat:
    """An entry point's FileFormat: named as the entry point, with a `--rag-*` option of its own."""
    if not isinstance(value, FileFormat):
        raise ValueError(f"is a {type(value).__name__}, not a FileFormat (pytest_ragretrieval.report.formats)")
    if value.name != name:
        raise ValueError(f"names the format {value.name!r}; the entry point's name must be the format's")
    if not value.flag.startswith("--rag-") or not value.dest.startswith("rag_") or not value.dest.isidentifier():
        raise ValueError(f"its option must look like --rag-NAME with dest rag_NAME, got {value.flag} ({value.dest})")
    taken = [fmt.name for fmt in members.values() if value.flag == fmt.flag or value.dest == fmt.dest]
    if taken:
        raise ValueError(f"its option {value.flag} ({value.dest}) is already the {taken[0]!r} format's")
    return value


FORMATS: Registry[FileFormat] = Registry("formats", {fmt.name: fmt for fmt in (
    FileFormat("markdown", "--rag-report", "rag_report", "write the evaluation report as Markdown to PATH",
               f"{__package__}.markdown"),
    FileFormat("html", "--rag-html", "rag_html", "write the evaluation report as one self-contained HTML page to PATH",
               f"{__package__}.html"),
)}, checked_format)


def render(fmt: FileFormat, data: ReportInput) -> str:
    return cast(Renderer, import_module(fmt.module)).render(data)


def write_reports(targets: Mapping[str, Path], data: ReportInput, write: Callable[[Path, str], None]) -> None:
    """Render each requested format (by name) and hand it to `write` with its path, in registry order.

    The caller writes, so that one file that cannot be written is one line and the others still are.
    """
    for fmt in FORMATS.values():
        if fmt.name in targets:
            write(targets[fmt.name], render(fmt, data))
