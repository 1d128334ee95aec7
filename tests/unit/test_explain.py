"""Explaining a miss (`labels/explain.py`, `ragretrieval explain`, the HTML's per-question view) on tiny
hand-made projects: jieba's tokens with and without a user dictionary and jieba's search mode, the terms
shared, bm25 ranks and scores computed by hand, and a hybrid of two run files whose source ranks and
fused scores are worked out below."""
from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_ragretrieval.cli import main
from pytest_ragretrieval.config.settings import Config, load_config
from pytest_ragretrieval.evalset.jsonl import load_chunks, load_evalset
from pytest_ragretrieval.labels.explain import Explainer, Recorded, missed, recorded_rankings
from pytest_ragretrieval.record.explain import Explanation
from pytest_ragretrieval.record.types import Question, Record, Retriever
from pytest_ragretrieval.report.html import render
from pytest_ragretrieval.report.view import view

SHOP_CHUNKS = [
    {"id": "ship", "text": "满99元包邮"},           # jieba: 满/99/元/包邮
    {"id": "wallet", "text": "钱包丢了怎么办"},      # jieba: 钱包/丢/了/怎么办
    {"id": "pay", "text": "支持分期付款"},           # jieba: 支持/分期付款; jieba-search: 支持/分期/付款/分期付款
]
SHOP_QUESTIONS = [
    {"id": "q1", "query": "多少钱包邮", "relevant": {"ship": 2}},  # jieba: 多少/钱包/邮; with 包邮 in the dictionary: 多少/钱/包邮
    {"id": "q2", "query": "能分期吗", "relevant": {"pay": 2}},     # 能/分期/吗
]
SHOP = """\
chunks = "chunks.jsonl"
evalset = "evalset.jsonl"
k = 1
tokenizer = "jieba"

[retrievers.bm25]
type = "bm25"

[retrievers.bm25_dict]
type = "bm25"
user_dict = "dict.txt"

[retrievers.search]
type = "bm25"
tokenizer = "jieba-search"
"""


def jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def write(folder: Path, settings: str, chunks: list[dict[str, Any]], questions: list[dict[str, Any]],
          files: Mapping[str, str] = {}) -> Config:
    (folder / "chunks.jsonl").write_text(jsonl(chunks), encoding="utf-8")
    (folder / "evalset.jsonl").write_text(jsonl(questions), encoding="utf-8")
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    (folder / "rag.toml").write_text(settings, encoding="utf-8")
    return load_config(str(folder / "rag.toml"), folder)


def explainer(config: Config, recorded: Recorded | None = None) -> tuple[Explainer, dict[str, Any]]:
    chunks = load_chunks(config.chunks_file("test"))
    questions = load_evalset(config.evalset, chunks)
    return Explainer(config, chunks, questions, recorded), {q.id: q for q in questions}


@pytest.fixture
def shop(tmp_path: Path) -> tuple[Explainer, dict[str, Any]]:
    return explainer(write(tmp_path, SHOP, SHOP_CHUNKS, SHOP_QUESTIONS, {"dict.txt": "包邮 100000\n"}))


def bm25_score(idf: float, tf: int, length: int, average: float, k1: float = 1.5, b: float = 0.75) -> float:
    return idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average))


def test_jieba_cuts_wallet_out_of_the_price_question_and_nothing_is_shared(shop: tuple[Explainer, Any]) -> None:
    explain, questions = shop
    found = explain.explain(questions["q1"], "bm25")
    (tokens,) = found.tokens
    assert tokens.tokenizer == "jieba" and tokens.query == ("多少", "钱包", "邮") and tokens.plain_query is None
    (gold,) = tokens.gold
    assert (gold.chunk, gold.tokens, gold.shared) == ("ship", ("满", "99", "元", "包邮"), ())
    (ranks,) = found.ranks
    # No query token is in "ship": bm25 scores it 0 and never returns it; the whole ranking is known.
    assert ranks.ranks == {"ship": None} and ranks.whole and ranks.shown("ship") == "-"
    assert found.missed == ("ship",)
    # The first (k = 1) is "wallet", on 钱包 alone: df 1 of 3 chunks, 4 tokens against an average of 10/3.
    assert ranks.kth is not None and ranks.kth[0] == "wallet"
    assert ranks.kth[1] == pytest.approx(bm25_score(math.log(2.5 / 1.5), 1, 4, 10 / 3))


def test_the_user_dictionary_keeps_包邮_whole_and_shows_both_cuts(shop: tuple[Explainer, Any]) -> None:
    explain, questions = shop
    found = explain.explain(questions["q1"], "bm25_dict")
    (tokens,) = found.tokens
    assert tokens.tokenizer == "jieba, user dictionary dict.txt"
    assert tokens.query == ("多少", "钱", "包邮") and tokens.plain_query == ("多少", "钱包", "邮")
    (gold,) = tokens.gold
    assert gold.shared == ("包邮",) and gold.plain_shared == () and gold.plain == gold.tokens
    (ranks,) = found.ranks
    assert ranks.ranks == {"ship": 1} and found.missed == () and tokens.plain_ranks == {"ship": None}
    # 包邮: df 1 of 3; "ship" has 4 tokens, the corpus 4 + 4 + 2.
    assert ranks.scores["ship"] == pytest.approx(bm25_score(math.log(2.5 / 1.5), 1, 4, 10 / 3))


def test_search_mode_gives_分期付款_its_parts(shop: tuple[Explainer, Any]) -> None:
    explain, questions = shop
    whole = explain.explain(questions["q2"], "bm25")
    assert whole.tokens[0].gold[0].tokens == ("支持", "分期付款") and whole.tokens[0].gold[0].shared == ()
    assert whole.ranks[0].ranks == {"pay": None}
    parts = explain.explain(questions["q2"], "search")
    assert parts.tokens[0].gold[0].tokens == ("支持", "分期", "付款", "分期付款")
    assert parts.tokens[0].gold[0].shared == ("分期",) and parts.ranks[0].ranks == {"pay": 1}


def test_the_english_tokenizer_shows_the_stems_it_matched(tmp_path: Path) -> None:
    chunks = [{"id": "policy", "text": "Refunds are shipped back to the card"}, {"id": "other", "text": "Opening hours"}]
    questions = [{"id": "q1", "query": "When is my refund shipping?", "relevant": {"policy": 1}}]
    settings = 'chunks = "chunks.jsonl"\nevalset = "evalset.jsonl"\nk = 1\ntokenizer = "english"\n\n' \
        '[retrievers.bm25]\ntype = "bm25"\n'
    explain, asked = explainer(write(tmp_path, settings, chunks, questions))
    (tokens,) = explain.explain(asked["q1"], "bm25").tokens
    # Stop words dropped, Snowball stems: "refunds"/"refund" -> refund, "shipped"/"shipping" -> ship.
    assert tokens.query == ("refund", "ship") and tokens.gold[0].tokens == ("refund", "ship", "back", "card")
    assert tokens.gold[0].shared == ("refund", "ship")


def test_the_tokens_are_those_the_run_cut_from_the_token_cache(tmp_path: Path) -> None:
    """A text the cache holds is not cut again: its cached tokens are what the run's bm25 matched on."""
    from pytest_ragretrieval.cache.store import Cache
    from pytest_ragretrieval.retrievers.corpus_tokens import tokenizer_id

    config = write(tmp_path, SHOP, SHOP_CHUNKS, SHOP_QUESTIONS, {"dict.txt": "包邮 100000\n"})
    Cache(config.cache_dir).namespace("tokens", tokenizer_id("jieba"), dtype="<i4").write(
        {"多少钱包邮": np.array([0, 1, 2], dtype="<i4")}, ["how", "much", "包邮"])
    before = sorted(config.cache_dir.rglob("*"))
    explain, questions = explainer(config)
    found = explain.explain(questions["q1"], "bm25")
    assert found.tokens[0].query == ("how", "much", "包邮") and found.tokens[0].gold[0].shared == ("包邮",)
    assert found.ranks[0].ranks == {"ship": 1}
    explain.explain(questions["q2"], "bm25_dict")  # texts the cache lacks are cut here, and not written
    assert sorted(config.cache_dir.rglob("*")) == before


RUN_CHUNKS = [{"id": f"c{n}", "text": f"text {n}"} for n in range(1, 6)]
RUN_QUESTIONS = [{"id": "q1", "query": "anything", "relevant": {"c4": 2, "c3": 1}}]
RUNS = """\
chunks = "chunks.jsonl"
evalset = "evalset.jsonl"
k = 1
tokenizer = "whitespace"

[retrievers.a]
type = "run"
path = "a.jsonl"

[retrievers.b]
type = "run"
path = "b.jsonl"

[retrievers.h]
type = "hybrid"
sources = ["a", "b"]
depth = 3
rrf_k = 1
weights = [2.0, 1.0]
"""
A_RANKING = ["c1", "c2", "c4", "c3"]
B_RANKING = ["c4", "c5", "c1"]


@pytest.fixture
def runs(tmp_path: Path) -> Config:
    return write(tmp_path, RUNS, RUN_CHUNKS, RUN_QUESTIONS, {
        "a.jsonl": jsonl([{"id": "q1", "ranking": A_RANKING}]), "b.jsonl": jsonl([{"id": "q1", "ranking": B_RANKING}])})


def test_a_hybrid_of_two_run_files_shows_each_source_rank_and_the_fused_scores(runs: Config) -> None:
    explain, questions = explainer(runs)
    found = explain.explain(questions["q1"], "h")
    assert [c for c, _ in found.gold] == ["c4", "c3"]
    by_name = {ranks.retriever: ranks for ranks in found.ranks}
    assert list(by_name) == ["h", "a", "b"]
    assert by_name["a"].ranks == {"c4": 3, "c3": 4} and by_name["b"].ranks == {"c4": 1, "c3": None}
    assert all(ranks.whole for ranks in found.ranks)
    # Within each source's top 3, weight / (1 + rank): c1 = 2/2 + 1/4 = 1.25, c4 = 2/4 + 1/2 = 1.0,
    # c2 = 2/3, c5 = 1/3; c3 is a's 4th, below the depth: 0, and the hybrid never returns it.
    assert by_name["h"].ranks == {"c4": 2, "c3": None}
    fusion = found.fusion
    assert fusion is not None and (fusion.rrf_k, fusion.depth, fusion.weights) == (1, 3, (2.0, 1.0))
    assert fusion.scores == {"c4": pytest.approx(1.0), "c3": 0}
    assert fusion.kth is not None and fusion.kth[0] == "c1" and fusion.kth[1] == pytest.approx(1.25)
    assert fusion.lower_bounds == () and found.missed == ("c4", "c3") and found.tokens == () and found.notes == ()


def test_a_source_known_only_to_its_recorded_top_makes_the_fused_scores_lower_bounds(runs: Config, tmp_path: Path) -> None:
    settings = RUNS.replace('type = "run"\npath = "a.jsonl"', 'type = "python"\nfactory = "mine:make"')
    config = write(tmp_path, settings, RUN_CHUNKS, RUN_QUESTIONS)
    recorded = Recorded("results.json", {"a": {"q1": ("c1", "c2")}, "h": {"q1": ("c4", "c1")}})
    found = explainer(config, recorded)[0].explain(explainer(config)[1]["q1"], "h")
    by_name = {ranks.retriever: ranks for ranks in found.ranks}
    assert not by_name["a"].whole and by_name["a"].shown("c4") == ">2" and by_name["a"].known == "results.json, top 2 recorded"
    # The hybrid is not computed when a source is not whole: its recorded ranking is read.
    assert by_name["h"].ranks == {"c4": 1, "c3": None} and by_name["h"].shown("c3") == ">2"
    assert found.fusion is not None and found.fusion.lower_bounds == ("a",)
    assert found.fusion.scores["c4"] == pytest.approx(1 / 2)  # b's first; a's rank of it is unknown
    assert found.fusion.kth is not None and found.fusion.kth[0] == "c4" and found.fusion.kth[1] == pytest.approx(0.5)


def test_a_ranking_nobody_recorded_is_unknown_not_a_miss(tmp_path: Path) -> None:
    settings = RUNS.replace('type = "run"\npath = "a.jsonl"', 'type = "python"\nfactory = "mine:make"')
    config = write(tmp_path, settings, RUN_CHUNKS, RUN_QUESTIONS, {"b.jsonl": jsonl([{"id": "q1", "ranking": B_RANKING}])})
    explain, questions = explainer(config, Recorded("results.json", {}))
    found = explain.explain(questions["q1"], "h")
    by_name = {ranks.retriever: ranks for ranks in found.ranks}
    assert [by_name[name].shown("c4") for name in ("h", "a", "b")] == ["?", "?", "1"]
    assert by_name["a"].known == "no ranking known" and found.missed is None
    assert found.notes == tuple(f"{name}: no ranking known (results.json holds none); pass the results of a run that "
                                "included it (pytest --rag-eval --rag-json RESULTS.json)" for name in ("a", "h"))


def test_a_computed_ranking_that_differs_from_the_recorded_one_is_named(runs: Config) -> None:
    recorded = Recorded("results.json", {"a": {"q1": ("c2", "c1")}})
    explain, questions = explainer(runs, recorded)
    found = explain.explain(questions["q1"], "a")
    assert found.ranks[0].origin.endswith("a.jsonl") and found.ranks[0].ranks == {"c4": 3, "c3": 4}
    assert found.notes == ("a: the ranking computed here differs from the one results.json recorded: an input "
                           "changed since it was written; rerun the gate for fresh results",)


# The command line


@pytest.fixture
def shop_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write(tmp_path, SHOP, SHOP_CHUNKS, SHOP_QUESTIONS, {"dict.txt": "包邮 100000\n"})
    (tmp_path / "pyproject.toml").write_text("[tool.ragretrieval]\n" + SHOP.replace(
        "[retrievers.", "[tool.ragretrieval.retrievers."), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str], list[str]]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err.splitlines()


def test_explain_prints_the_tokens_the_shared_terms_and_the_ranks(shop_project: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "explain", "q1", "--retriever", "bm25_dict")
    assert (code, err) == (0, [])
    assert out[0] == "q1 多少钱包邮 — bm25_dict (bm25), k=1"
    assert out[1] == "gold: ship (grade 2); missed within the top 1: none"
    assert "  bm25_dict  bm25  1     computed here, 1 ranked" in out
    assert out[-7:] == [
        "bm25_dict tokens (jieba, user dictionary dict.txt):",
        "  query: 多少/钱/包邮",
        "  ship: 满/99/元/包邮",
        "    shared: 包邮",
        "  without the user dictionary: query 多少/钱包/邮",
        "    ship shared: none",
        "    ranks without it: ship -",
    ]


def test_explain_every_retriever_by_default_and_as_json(shop_project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "explain", "q1")
    assert code == 0 and [line for line in out if line.startswith("q1 ")] == [
        "q1 多少钱包邮 — bm25 (bm25), k=1", "q1 多少钱包邮 — bm25_dict (bm25), k=1", "q1 多少钱包邮 — search (bm25), k=1"]
    assert "  query: 多少/钱包/邮" in out and "    shared: none" in out
    code, out, _ = run(capsys, "explain", "q1", "--retriever", "bm25", "--json")
    (found,) = json.loads("\n".join(out))
    assert found["missed"] == ["ship"] and found["tokens"][0]["query"] == ["多少", "钱包", "邮"]
    assert found["ranks"][0]["ranks"] == {"ship": None} and found["ranks"][0]["kth"][0] == "wallet"


def test_explain_names_an_unknown_question_or_retriever_and_the_known_ones(
        shop_project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "explain", "q9")
    assert (code, out) == (2, []) and err == [
        "ragretrieval: error: unknown question 'q9'; evalset.jsonl holds q1, q2"]
    code, _, err = run(capsys, "explain", "q" * 100_000)
    assert code == 2 and len(err) == 1 and len(err[0]) < 300 and "(100,000 characters)" in err[0]
    code, out, err = run(capsys, "explain", "q1", "--retriever", "bm26")
    assert code == 2 and err == ["ragretrieval: error: unknown retriever 'bm26'; did you mean 'bm25'?; "
                                 "pyproject.toml [tool.ragretrieval] [retrievers] holds bm25, bm25_dict, search"]


def test_the_known_ids_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    questions = [{"id": f"q{n:02}", "query": "x", "relevant": {"c1": 1}} for n in range(1, 26)]
    write(tmp_path, RUNS.replace('"a.jsonl"', '"b.jsonl"'), RUN_CHUNKS, questions,
          {"b.jsonl": jsonl([{"id": "q01", "ranking": B_RANKING}])})
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "explain", "zz", "--config", "rag.toml")
    assert code == 2 and err == ["ragretrieval: error: unknown question 'zz'; evalset.jsonl holds q01, q02, q03, q04, "
                                 "q05, q06, q07, q08, q09, q10 and 15 more"]


# The HTML report


def record(rankings: Mapping[str, Mapping[str, list[str]]]) -> Record:
    return Record(format_version=4, k=1, fingerprint={}, retrievers={
        name: Retriever(metrics={"ndcg@1": 0.0}, questions={qid: Question(tuple(r), {"ndcg@1": 0.0})
                                                         for qid, r in by_question.items()})
        for name, by_question in rankings.items()})


def test_the_html_per_question_view_explains_the_miss_escaped(tmp_path: Path) -> None:
    chunks = [{"id": "gold", "text": "<b>refund</b> within 7 days"}, {"id": "other", "text": "<script>x</script> refund"}]
    questions = [{"id": "q1", "query": "<script>x</script> days", "relevant": {"gold": 2}},
                 {"id": "q2", "query": "refund", "relevant": {"other": 1}}]
    settings = 'chunks = "chunks.jsonl"\nevalset = "evalset.jsonl"\nk = 1\ntokenizer = "whitespace"\n\n' \
        '[retrievers.bm25]\ntype = "bm25"\n'
    config = write(tmp_path, settings, chunks, questions)
    loaded = load_chunks(config.chunks_file("test"))
    asked = load_evalset(config.evalset, loaded)
    run_record = record({"bm25": {"q1": ["other"], "q2": ["other"]}})
    explained = missed(config, loaded, asked, recorded_rankings("this run", run_record.retrievers))
    assert list(explained) == ["q1"]  # q2 was hit: nothing to explain
    found: Explanation = explained["q1"]["bm25"]
    assert found.tokens[0].query == ("<script>x</script>", "days") and found.tokens[0].gold[0].shared == ("days",)
    assert found.ranks[0].shown("gold") == ">1"
    page = render(view(run_record, asked, loaded, explanations=explained))
    start = page.index('<details class="explanation" data-question="q1" data-retriever="bm25">')
    block = page[start:page.index("</details>", start)]
    assert "&lt;script&gt;x&lt;/script&gt;/<mark class=\"shared\">days</mark>" in block
    assert "&lt;b&gt;refund&lt;/b&gt;/within/7/<mark class=\"shared\">days</mark>" in block
    assert "shared: days" in block and '<td class="num" data-chunk="gold">&gt;1</td>' in block
    assert "<script>x" not in page and "<b>refund" not in page
    assert 'data-question="q2" data-retriever="bm25"' not in page


COMMAND_PAGE = Path(__file__).resolve().parents[2] / "docs" / "command.md"
EXAMPLE = re.compile(r"<!-- explain-example:start -->\n```text\n(.*?)```\n<!-- explain-example:end -->", re.S)


def test_the_command_page_example_is_what_explain_prints(shop_project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/command.md's example, on this project without `search`; `RAG_UPDATE_GOLDEN=1` rewrites it."""
    (shop_project / "pyproject.toml").write_text("[tool.ragretrieval]\n" + SHOP[:SHOP.index("[retrievers.search]")].replace(
        "[retrievers.", "[tool.ragretrieval.retrievers."), encoding="utf-8")
    assert main(["explain", "q1"]) == 0
    printed = capsys.readouterr().out
    page = COMMAND_PAGE.read_text(encoding="utf-8")
    (shown,) = EXAMPLE.findall(page)
    if os.environ.get("RAG_UPDATE_GOLDEN") == "1":
        COMMAND_PAGE.write_text(page.replace(f"```text\n{shown}```\n<!-- explain-example:end", f"```text\n{printed}```\n<!-- explain-example:end"), encoding="utf-8")
        return
    assert shown == printed, "docs/command.md's explain example is stale; rewrite it with RAG_UPDATE_GOLDEN=1"
