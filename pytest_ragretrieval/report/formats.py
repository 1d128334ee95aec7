"""The registry of report file formats: each is one module with `render(data) -> str` and one line here.

Kept free of heavy imports: the plugin reads it to add one `--rag-*` option per format.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

if TYPE_CHECKING:
    from .model import ReportInput


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


FORMATS: tuple[FileFormat, ...] = (
    FileFormat("markdown", "--rag-report", "rag_report", "write the evaluation report as Markdown to PATH",
               f"{__package__}.markdown"),
    FileFormat("html", "--rag-html", "rag_html", "write the evaluation report as one self-contained HTML page to PATH",
               f"{__package__}.html"),
)


def render(fmt: FileFormat, data: ReportInput) -> str:
    return cast(Renderer, import_module(fmt.module)).render(data)


def write_reports(targets: Mapping[str, Path], data: ReportInput, write: Callable[[Path, str], None]) -> None:
    """Render each requested format (by name) and hand it to `write` with its path, in registry order.

    The caller writes, so that one file that cannot be written is one line and the others still are.
    """
    for fmt in FORMATS:
        if fmt.name in targets:
            write(targets[fmt.name], render(fmt, data))
