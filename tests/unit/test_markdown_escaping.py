"""Ids and texts from the user's files render as literal text in every Markdown output: the report,
the job summary and the pull-request comment, checked through a CommonMark renderer with GFM tables."""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from html.parser import HTMLParser
from typing import Any

import pytest
from markdown_it import MarkdownIt
from report_samples import sample_input

from pytest_ragretrieval.record.report import Failure, ReportInput
from pytest_ragretrieval.report.github import step_summary
from pytest_ragretrieval.report.markdown import code, esc
from pytest_ragretrieval.report.markdown import render as render_markdown
from pytest_ragretrieval.review.approval import Decision
from pytest_ragretrieval.review.changes import Changes, Entry, LostHit, SettingChange, ValueChange
from pytest_ragretrieval.review.comment import CommentInput
from pytest_ragretrieval.review.comment import render as render_comment

HOSTILE = {
    "travel-001": "![pix](https://x/y.png)",
    "travel-002": "[click](https://x)",
    "error-001": "@octocat",
    "service-001": "<img src=x onerror=alert(1)>",
    "q01": "q`01`|x",
    "q02": "#123 and owner/repo#45",
    "hybrid": "hy|brid @team",
    "semantic": "**bold** _em_ ~~gone~~",
    "keyword": "$x^2$ see www.example.com or me@mail.example",
    "住宿标准一晚多少钱": "住宿 | [link](https://evil.example) <a href=x>a</a>",
}
ALLOWED = {"h1", "h2", "h3", "h4", "h5", "p", "ul", "li", "table", "thead", "tbody", "tr", "th", "td", "strong",
           "code", "pre", "br", "details", "summary", "hr"}
"""What the outputs' own Markdown makes; a link, an image, emphasis from an id or raw HTML is none of these."""
LINKED = re.compile(r"(?<![\w/])@[A-Za-z0-9]|#[0-9]|https?://|www\.|\w@[\w-]+\.\w", re.IGNORECASE)
"""What GitHub turns into a mention, an issue reference or a link in the text of a rendered page."""


def renamed(value: Any, names: Mapping[str, str]) -> Any:
    """`value` with every string that is a key of `names` (as a whole) replaced, in dataclasses, dicts and tuples."""
    if isinstance(value, str):
        return names.get(value, value)
    if isinstance(value, tuple):
        return tuple(renamed(item, names) for item in value)
    if isinstance(value, dict):
        return {renamed(key, names): renamed(item, names) for key, item in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{f.name: renamed(getattr(value, f.name), names)
                                             for f in dataclasses.fields(value) if f.init})
    return value


def hostile_input() -> ReportInput:
    data: ReportInput = renamed(sample_input(), HOSTILE)
    return dataclasses.replace(
        data, notes=("retriever 'hy|brid @team' ran [click](https://x) <img src=x>",), info=("#7 @you",),
        failures=(Failure("rag::x", HOSTILE["hybrid"], "ndcg@5", "fell for ![pix](https://x/y.png) @octocat"),),
    )


HOSTILE_CHANGES = Changes(
    "main:baselines/a|b.json", "baselines/retrieval.json",
    fingerprint=("hy|brid `k1` 1.5 -> 1.2",), questions=("questions: 1 added (@octocat)",),
    lowered=(ValueChange(HOSTILE["hybrid"], "ndcg@5", 0.5885, 0.51, tag=HOSTILE["semantic"]),),
    removed=(Entry(HOSTILE["hybrid"], "mrr@5", "![pix](https://x/y.png)"),),
    loosened=(SettingChange("tolerance|x", HOSTILE["hybrid"], "0", "0.1"),),
    lost_hits=(LostHit(HOSTILE["hybrid"], HOSTILE["q02"]),),
    notes=("<img src=x> #9",),
)


class Page(HTMLParser):
    """The tags of a rendered page, its text (and apart, the text outside code, which GitHub links), and
    each table's rows as cell counts."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.text: list[str] = []
        self.linkable: list[str] = []
        self.rows: list[list[int]] = []
        self.code = 0

    def handle_endtag(self, tag: str) -> None:
        self.code -= tag in ("code", "pre")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.code += tag in ("code", "pre")
        if tag == "table":
            self.rows.append([])
        elif tag == "tr":
            self.rows[-1].append(0)
        elif tag in ("td", "th"):
            self.rows[-1][-1] += 1

    def handle_data(self, data: str) -> None:
        self.text.append(data.replace("\n", ""))
        if not self.code:
            self.linkable.append(data)


def rendered(markdown: str) -> Page:
    page = Page()
    page.feed(MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(markdown))
    return page


def outputs() -> dict[str, str]:
    data = hostile_input()
    decision = Decision("fail", "lowered without the label", "rag|label @x", True, "sticky comment")
    return {
        "report": render_markdown(data),
        "summary": step_summary(data),
        "comment": render_comment(CommentInput(data, True, "failure", HOSTILE_CHANGES, decision)),
    }


@pytest.mark.parametrize("name", ["report", "summary", "comment"])
def test_ids_and_texts_render_as_literal_text(name: str) -> None:
    """Old code escaped only `|`, `<` and newlines: a chunk id `![pix](https://...)` was an image in the
    report, the job summary and the comment, `[click](...)` a link, `@octocat` a mention."""
    page = rendered(outputs()[name])
    assert page.tags <= ALLOWED, sorted(page.tags - ALLOWED)
    text = "".join(page.text).replace("\u200b", "")
    shown = "\n".join(page.linkable)
    assert not LINKED.search(shown), shown[LINKED.search(shown).start() - 80:][:160]  # type: ignore[union-attr]
    for original in ("![pix](https://x/y.png)", "@octocat", "hy|brid @team", "#123 and owner/repo#45"):
        assert original in text, original
    if name != "comment":  # the comment shows the failures and the baseline's changes, not the tables of every id
        for original in ("q`01`|x", "[click](https://x)", "<img src=x onerror=alert(1)>", "**bold** _em_ ~~gone~~"):
            assert original in text, original


@pytest.mark.parametrize("name", ["report", "summary", "comment"])
def test_table_rows_keep_their_column_count(name: str) -> None:
    page = rendered(outputs()[name])
    assert page.rows, "the output has tables"
    for rows in page.rows:
        assert len(set(rows)) == 1, rows


@pytest.mark.parametrize("text", [*HOSTILE.values(), "a\nb\r\nc", "x\\", "> quoted", "GH-12", "&lt;b&gt;", "`", ""])
def test_one_cell_of_any_text_is_one_literal_cell(text: str) -> None:
    for cell in (esc(text), code(text)):
        page = rendered(f"| a | b |\n| --- | --- |\n| {cell} | x |\n")
        assert page.rows == [[2, 2]] and page.tags <= ALLOWED
        shown = "".join(page.text)
        assert not LINKED.search("".join(page.linkable))
        expected = text.replace("\r\n", "\n").replace("\n", "")
        assert shown.replace("\u200b", "") == f"ab{expected}x"
