"""`--rag-report PATH` and `--rag-html PATH` write the evaluation report from a real run."""
from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from browser import MISSING, browser, dump_dom
from projects import GOLD, RUN, retriever, set_rankings, write_project


@pytest.fixture
def regressed(pytester: pytest.Pytester) -> pytest.Pytester:
    write_project(pytester.path)
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    set_rankings(pytester.path, dict(GOLD, q01=["travel-002", "travel-001"], q05=[], q06=["service-001"]))
    return pytester


def test_markdown_report_of_a_regression(regressed: pytest.Pytester) -> None:
    result = regressed.runpytest("--rag-eval", "--rag-report", "reports/eval.md", *RUN)
    result.assert_outcomes(passed=4, failed=4)
    result.stdout.fnmatch_lines(["rag: wrote reports/eval.md"])
    text = (regressed.path / "reports" / "eval.md").read_text(encoding="utf-8")
    assert "结果 / result：❌" in text
    assert "| table " in text and "0.7262 (-0.2738)" in text
    assert "q05" in text and "q01" in text
    assert "rag::table::ndcg@3" in text
    assert "公司年会在哪里办" in text and "service-001" in text
    assert "(error 2" not in text


class Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.bars: list[dict[str, str | None]] = []
        self.rows: list[str | None] = []
        self.gold: int = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        classes = (found.get("class") or "").split()
        if tag == "rect" and "bar" in classes:
            self.bars.append(found)
        if tag == "tr" and "question" in classes:
            self.rows.append(found.get("data-question"))
        if tag == "li" and {"chunk", "gold"} <= set(classes):
            self.gold += 1


def test_html_report_of_a_real_run(regressed: pytest.Pytester) -> None:
    regressed.runpytest("--rag-eval", "--rag-html", "reports/eval.html", *RUN)
    page = (regressed.path / "reports" / "eval.html").read_text(encoding="utf-8")
    parsed = Collector()
    parsed.feed(page)
    assert len(parsed.bars) == 2 * 5  # the four listed metrics and judged@3
    assert {bar["data-retriever"] for bar in parsed.bars} == {"bm25", "table"}
    assert parsed.rows == ["q01", "q02", "q03", "q04", "q05", "q06"]
    assert parsed.gold > 0
    assert "http://" not in page and "https://" not in page


def test_html_report_renders_in_chromium(regressed: pytest.Pytester) -> None:
    executable = browser()
    if executable is None:
        pytest.skip(MISSING)
    regressed.runpytest("--rag-eval", "--rag-html", "eval.html", *RUN)
    dom = dump_dom(executable, regressed.path / "eval.html").stdout
    parsed = Collector()
    parsed.feed(dom)
    assert len(parsed.bars) == 10
    assert f'data-gold-count="{parsed.gold}"' in dom


def test_github_actions_summary_and_annotations(regressed: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    summary = regressed.path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = regressed.runpytest("--rag-eval", *RUN)
    result.stdout.fnmatch_lines(["::error file=baselines/retrieval.json,title=rag%3A table ndcg@3::ndcg@3 of 'table' fell*"])
    assert sum(1 for line in result.stdout.lines if line.startswith("::error ")) == 4
    assert "table" in summary.read_text(encoding="utf-8")


def test_no_github_output_outside_actions(regressed: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    result = regressed.runpytest("--rag-eval", *RUN)
    assert not any(line.startswith("::error") for line in result.stdout.lines)


def test_html_report_explains_each_miss(regressed: pytest.Pytester) -> None:
    """Under a retriever that ranked no gold chunk of a question in its top k: the ranks and the tokens."""
    regressed.runpytest("--rag-eval", "--rag-html", "eval.html", *RUN)
    page = (regressed.path / "eval.html").read_text(encoding="utf-8")
    start = page.index('<details class="explanation" data-question="q05" data-retriever="table">')
    block = page[start:page.index("</details>", start)]
    assert '<td class="num" data-chunk="refund-002">-</td><td>this run, 0 ranked</td>' in block
    explained = {(q, r) for q, r in re.findall(r'class="explanation" data-question="(\w+)" data-retriever="(\w+)"', page)}
    assert ("q01", "table") not in explained and ("q06", "table") not in explained  # a hit; a no-answer question


def test_html_report_shows_the_tokens_bm25_saw(pytester: pytest.Pytester) -> None:
    question = {"id": "q07", "query": "多少钱包邮", "relevant": {"refund-001": 1}}
    write_project(pytester.path, retrievers=retriever("bm25", "bm25"), questions=[question])
    pytester.runpytest("--rag-update-baseline", "--rag-html", "eval.html", *RUN)
    page = (pytester.path / "eval.html").read_text(encoding="utf-8")
    start = page.index('<details class="explanation" data-question="q07" data-retriever="bm25">')
    block = page[start:page.index("</details>", start)]
    assert "<h5>bm25 tokens (jieba)</h5>" in block and "<strong>query</strong> 多少/钱包/邮" in block
    assert "shared: none" in block and '<td class="num" data-chunk="refund-001">-</td>' in block
