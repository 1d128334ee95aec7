"""The HTML report, checked on the rendered text and, when Debian's chromium is there, on the DOM a browser built."""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field, replace
from html.parser import HTMLParser
from pathlib import Path

import pytest
from browser import MISSING, browser, dump_dom
from report_samples import CJK, sample_input, without_baseline

from pytest_ragretrieval.record.report import RetrieverView
from pytest_ragretrieval.report.html import render as render_html

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node | str] = field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    @property
    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text for c in self.children)

    def walk(self) -> list[Node]:
        found = [self]
        for child in self.children:
            if isinstance(child, Node):
                found += child.walk()
        return found

    def find(self, tag: str, cls: str | None = None, **attrs: str) -> list[Node]:
        """Descendants by tag, one class and attributes (`data_x` for `data-x`)."""
        wanted = {key.replace("_", "-"): value for key, value in attrs.items()}
        return [
            node for node in self.walk()[1:]
            if node.tag == tag and (cls is None or cls in node.classes)
            and all(node.attrs.get(k) == v for k, v in wanted.items())
        ]

    def one(self, tag: str, cls: str | None = None, **attrs: str) -> Node:
        (node,) = self.find(tag, cls, **attrs)
        return node


class TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        if any(node.tag == tag for node in self.stack[1:]):
            while self.stack.pop().tag != tag:
                pass

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(page: str) -> Node:
    builder = TreeBuilder()
    builder.feed(page)
    builder.close()
    return builder.root


def check_metrics_table(doc: Node) -> None:
    table = doc.one("table", id="metrics")
    body = table.one("tbody")
    assert [tr.attrs["data-retriever"] for tr in body.find("tr")] == ["hybrid", "hybrid_rerank"]
    hybrid = body.one("tr", data_retriever="hybrid")
    ndcg = hybrid.one("td", data_metric="ndcg@5")
    assert ndcg.text == "0.7500 (-0.1000)" and float(ndcg.attrs["data-value"]) == 0.75
    assert float(ndcg.attrs["data-delta"]) == pytest.approx(-0.1)
    assert hybrid.one("td", data_metric="precision@5").text == "0.3000"
    skipped = body.one("tr", data_retriever="hybrid_rerank")
    assert skipped.attrs["data-status"] == "unavailable"
    assert skipped.one("td", "status").text == "unavailable"
    assert skipped.one("td", "status").attrs["title"] == "cross-encoder not available"
    assert doc.one("ul", "reasons").text == "hybrid_rerank: unavailable: cross-encoder not available"


def check_chart(doc: Node) -> None:
    svg = doc.one("svg", id="metrics-chart")
    bars = svg.find("rect", "bar")
    assert len(bars) == 1 * 2  # ran retrievers x metrics
    plot = float(svg.attrs["data-plot-height"])
    for bar in bars:
        assert float(bar.attrs["height"]) == pytest.approx(plot * float(bar.attrs["data-value"]), abs=0.01)
    assert {(b.attrs["data-retriever"], b.attrs["data-metric"], b.attrs["data-value"]) for b in bars} == {
        ("hybrid", "precision@5", "0.300000"), ("hybrid", "ndcg@5", "0.750000")}
    assert [t.text for t in svg.find("text", "metric-label")] == ["precision@5", "ndcg@5"]
    assert "hybrid" in svg.one("g", "legend").text
    assert svg.one("line", "baseline-mark", data_metric="ndcg@5").attrs["data-value"] == "0.850000"


def check_questions(doc: Node) -> None:
    table = doc.one("table", id="questions")
    assert [tr.attrs["data-question"] for tr in table.find("tr", "question")] == ["q01", "q02", "q03"]
    q01 = table.one("tr", "question", data_question="q01")
    assert q01.one("td", data_retriever="hybrid").text == "0.5000 (-0.5000)"
    details = table.one("details", data_question="q01")
    assert "q01" in details.one("summary").text
    current = details.one("div", "ranking-block", data_retriever="hybrid").find("ol", "current")[0]
    chunks = current.find("li", "chunk")
    assert [li.attrs["data-chunk"] for li in chunks] == ["service-001", "travel-001"]
    assert "gold" not in chunks[0].classes and "gold" in chunks[1].classes and chunks[1].attrs["data-grade"] == "2"
    assert "✓" in chunks[1].one("span", "mark").text
    assert "一线城市住宿标准为每晚不超过600元。" in chunks[1].text and "差旅报销制度.md" in chunks[1].text
    baseline = details.one("ol", "baseline")
    assert [li.attrs["data-chunk"] for li in baseline.find("li", "chunk")] == ["travel-001", "travel-002"]
    assert len(baseline.find("li", "gold")) == 2


def check_escaping_and_no_urls(doc: Node) -> None:
    service = doc.find("li", "chunk", data_chunk="service-001")[0]
    assert service.one("p", "text").text == "客服工作时间为周一至周五9:00到18:00。<b>"
    assert not doc.find("b")
    for node in doc.walk()[1:]:
        for name in ("src", "href", "xlink:href", "action", "poster"):
            assert name not in node.attrs or node.attrs[name].startswith("#")
    styles = " ".join([*(node.text for node in doc.find("style")), *(n.attrs.get("style", "") for n in doc.walk())])
    assert "url(" not in styles and "@import" not in styles


def check_page(doc: Node) -> None:
    check_metrics_table(doc)
    check_chart(doc)
    check_questions(doc)
    check_escaping_and_no_urls(doc)


def test_rendered_page_structure() -> None:
    check_page(parse(render_html(sample_input())))


def test_no_url_and_the_chunk_markup_escaped_in_the_source() -> None:
    page = render_html(sample_input())
    assert not re.search(r"https?://|//[a-z]", page, re.I)
    assert "9:00到18:00。&lt;b&gt;" in page and "<b>" not in page
    assert "<link" not in page and "<img" not in page and " src=" not in page


def test_sections_tags_diagnostics_changes_no_answer_failures() -> None:
    doc = parse(render_html(sample_input()))
    config = doc.one("dl", id="config")
    evalset = config.one("div", data_key="evalset").one("dd").text
    assert evalset == "3 题 / questions (keyword 1 / no-answer 1 / semantic 1)"
    assert config.one("div", data_key="baseline").one("dd").text == "baselines/retrieval.json (可比 / comparable)"
    assert doc.one("ul", id="definitions").one("li", data_metric="ndcg@5").text == "ndcg@5: DCG@k / ideal DCG@k"
    assert doc.one("li", "note").text == "⚠️ the eval set has 2 answerable questions, fewer than 20"
    significance = doc.one("table", id="significance").one("tr", data_metric="ndcg@5")
    assert significance.text.endswith("20.03100.0155[-0.1800, -0.0200]0.4203")
    assert (significance.attrs["data-p"], significance.attrs["data-p-unadjusted"]) == ("0.031000", "0.015500")
    assert significance.attrs["data-mde"] == "0.420300"
    assert [li.text for li in doc.one("ul", id="since").find("li")][0] == (
        "compared across changes: hybrid.weights [1.0, 0.5] -> [0.2, 1.0]")
    semantic = doc.one("table", "tags", data_retriever="hybrid").one("tr", data_tag="semantic")
    assert semantic.one("td", data_metric="ndcg@5").text == "0.5000 (-0.5000)"
    diag = doc.one("table", id="diagnostics").one("tr", data_diagnostic="pool_recall@20")
    assert "0.9000" in diag.text and "ceiling no reranker can pass" in diag.text
    regressed = doc.one("table", "changes", data_kind="regressed").one("tr", "change", data_question="q01")
    assert [li.attrs["data-chunk"] for li in regressed.one("ol", "before").find("li")] == ["travel-001", "travel-002"]
    assert [li.attrs["data-chunk"] for li in regressed.one("ol", "after").find("li")] == ["service-001", "travel-001"]
    improved = doc.one("table", "changes", data_kind="improved").one("tr", "change", data_question="q02")
    assert "+0.3000" in improved.text
    q03 = doc.one("table", id="no-answer").one("tr", data_question="q03")
    assert q03.one("td", data_retriever="hybrid").attrs["data-empty"] == "false" and "service-001" in q03.text
    failure = doc.one("ul", id="failures").one("li", "failure", data_retriever="hybrid", data_metric="ndcg@5")
    assert failure.one("pre").text == "ndcg@5 of 'hybrid' fell from 0.8500 to 0.7500"


def test_no_baseline_no_deltas_no_marks_no_changes() -> None:
    page = render_html(without_baseline(sample_input()))
    doc = parse(page)
    assert "data-delta" not in page and not doc.find("line", "baseline-mark")
    assert not doc.find("table", id="significance")
    assert not doc.find("ol", "baseline") and not doc.find("table", "changes")
    metrics = doc.one("table", id="metrics")
    assert metrics.one("tr", data_retriever="hybrid").one("td", data_metric="ndcg@5").text == "0.7500"


def test_error_retriever_row_and_no_failures() -> None:
    data = sample_input()
    broken = RetrieverView(name="bm25", type="bm25", status="error", reason="index <missing>")
    doc = parse(render_html(replace(data, retrievers=(*data.retrievers, broken), failures=())))
    row = doc.one("table", id="metrics").one("tr", data_retriever="bm25")
    assert row.attrs["data-status"] == "error" and row.one("td", "status").text == "error"
    assert "bm25: error: index <missing>" in doc.one("ul", "reasons").text
    assert not doc.find("ul", id="failures") and doc.one("p", id="verdict").attrs["data-failures"] == "0"
    assert len(doc.find("rect", "bar")) == 2


def test_chart_groups_bars_per_metric_for_three_retrievers() -> None:
    data = sample_input()
    hybrid = data.retrievers[0]
    views = (hybrid, replace(hybrid, name="vector", metrics={"precision@5": 0.1, "ndcg@5": 0.0}),
             replace(hybrid, name="bm25", metrics={"precision@5": 1.0, "ndcg@5": 0.4}))
    svg = parse(render_html(replace(data, retrievers=views))).one("svg", id="metrics-chart")
    bars = svg.find("rect", "bar")
    assert len(bars) == 3 * 2 and len(svg.find("rect", "legend-swatch")) == 3
    xs = [float(b.attrs["x"]) for b in bars]
    assert xs == sorted(xs) and len(set(xs)) == 6
    assert [b.attrs["data-metric"] for b in bars] == ["precision@5"] * 3 + ["ndcg@5"] * 3
    zero = svg.one("rect", "bar", data_retriever="vector", data_metric="ndcg@5")
    full = svg.one("rect", "bar", data_retriever="bm25", data_metric="precision@5")
    assert float(zero.attrs["height"]) == 0 and float(full.attrs["height"]) == float(svg.attrs["data-plot-height"])
    assert max(x + 18 for x in xs) < float(svg.attrs["width"])


def test_attribute_values_are_escaped() -> None:
    data = sample_input()
    odd = RetrieverView(name='x" onload="alert(1)', type="bm25", status="unavailable", reason="r")
    doc = parse(render_html(replace(data, retrievers=(*data.retrievers, odd))))
    assert doc.one("table", id="metrics").one("tr", data_retriever='x" onload="alert(1)').attrs.get("onload") is None



@pytest.fixture(scope="module")
def browser_dom(tmp_path_factory: pytest.TempPathFactory) -> Node:
    """The DOM headless Chromium built from the sample page, after the injected probe script ran."""
    executable = browser()
    if executable is None:
        pytest.skip(MISSING)
    page = tmp_path_factory.mktemp("chromium") / "report.html"
    page.write_text(render_html(sample_input()), encoding="utf-8")
    done = dump_dom(executable, page)
    assert done.returncode == 0, done.stderr[-2000:]
    return parse(done.stdout)


def test_chromium_dom_has_the_same_structure(browser_dom: Node) -> None:
    check_page(browser_dom)


def test_chromium_ran_the_probe_script(browser_dom: Node) -> None:
    body = browser_dom.one("body")
    gold = [li for li in body.find("li", "chunk") if "gold" in li.classes]
    assert len(gold) == 5 and body.attrs.get("data-gold-count") == "5"


def test_details_rows_are_closed_until_opened(browser_dom: Node) -> None:
    details = browser_dom.find("details", "question-details")
    assert len(details) == 3 and all("open" not in d.attrs for d in details)


def test_comparisons_conclusions_and_next_steps() -> None:
    doc = parse(render_html(sample_input()))
    ndcg = doc.one("table", id="pairs").one("tr", data_a="hybrid", data_b="vector", data_metric="ndcg@5")
    assert ndcg.attrs["data-significant"] == "true" and ndcg.text.endswith("+0.10000.0310[+0.0200, +0.1800]2 / 0 / 0")
    assert ndcg.one("span", "delta").classes == {"delta", "positive"}
    precision = doc.one("table", id="pairs").one("tr", data_metric="precision@5")
    assert precision.attrs["data-significant"] == "false"
    conclusions = [li.text for li in doc.one("ul", id="conclusions").find("li")]
    assert "hybrid vs vector: precision@5 -0.0500 (p = 0.5000, not significant), ndcg@5 +0.1000 (p = 0.0310, significant)" in conclusions
    steps = [li.text for li in doc.one("ul", id="next-steps").find("li")]
    assert any(step.startswith("hybrid is significantly better than vector on ndcg@5") for step in steps)
    assert not parse(render_html(replace(sample_input(), pairs=()))).find("table", id="pairs")


ZH_PROBE = (
    '<script>document.body.setAttribute("data-zh-shown", String(Array.prototype.filter.call('
    'document.querySelectorAll(".zh"), function (n) { return getComputedStyle(n).display !== "none"; }).length));'
    "</script>"
)
"""Injected by the test: how many of the page's Chinese halves the browser still draws."""


def cjk_font_installed() -> bool:
    listed = shutil.which("fc-list")
    if listed is None:
        pytest.skip("fontconfig's fc-list is not installed: cannot tell whether a CJK font is")
    return bool(subprocess.run([listed, ":lang=zh"], capture_output=True, text=True, timeout=30).stdout.strip())


def test_the_bilingual_page_never_draws_boxes_without_a_cjk_font(tmp_path: Path) -> None:
    """On a machine without a CJK font the page showed its Chinese headings as boxes (issue 44): where
    no font draws CJK it now hides the Chinese halves and keeps the English; with one, both are shown."""
    executable = browser()
    if executable is None:
        pytest.skip(MISSING)
    page = tmp_path / "report.html"
    page.write_text(render_html(sample_input()).replace("</body>", ZH_PROBE + "</body>"), encoding="utf-8")
    done = dump_dom(executable, page)
    assert done.returncode == 0, done.stderr[-2000:]
    doc = parse(done.stdout)
    halves = doc.find("span", "zh")
    assert len(halves) > 20 and doc.find("h2")[0].text.endswith("Configuration")
    hidden = "no-cjk" in doc.one("html").classes
    assert hidden is not cjk_font_installed()
    assert doc.one("body").attrs["data-zh-shown"] == ("0" if hidden else str(len(halves)))


def test_an_english_page_has_no_cjk_character_and_no_font_check() -> None:
    english = render_html(replace(sample_input(), language="en", questions=(), chunks={}))
    assert not CJK.search(english) and "<script>" not in english and '<html lang="en">' in english
