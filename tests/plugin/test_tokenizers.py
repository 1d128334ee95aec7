"""Tokenizers per bm25 retriever through the gate: jieba's search mode with a user dictionary beside
the default cut in one session, the dictionary recorded by digest, its change noticed."""
from __future__ import annotations

import json
import shutil
from importlib.metadata import version
from pathlib import Path

import jieba
import pytest
from projects import RUN, baseline, retriever, write_project

from pytest_ragretrieval.retrievers.user_dict import read_user_dict

CHUNKS = [
    {"id": "it-1", "text": "笔记本电脑丢失后，须在2小时内报告信息技术部"},
    {"id": "it-2", "text": "云桌面登录失败时，请重启客户端"},
    {"id": "desk-1", "text": "下班前清理桌面，桌面不得放置文件"},
    {"id": "travel-1", "text": "一线城市住宿标准为每晚600元"},
    {"id": "refund-1", "text": "退款在审核通过后3个工作日内原路退回"},
    {"id": "service-1", "text": "客服工作时间为周一至周五"},
]
QUESTIONS = [
    {"id": "q1", "query": "电脑丢了怎么办", "relevant": ["it-1"]},
    {"id": "q2", "query": "云桌面", "relevant": ["it-2"]},
]
RETRIEVERS = (
    retriever("bm25", "bm25")
    + retriever("bm25_search", "bm25", tokenizer="jieba-search", user_dict="fixtures/terms.txt")
    + retriever("bm25_terms", "bm25", user_dict="fixtures/other.txt")
)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    write_project(pytester.path, retrievers=RETRIEVERS, chunks=CHUNKS, questions=QUESTIONS,
                  settings='metrics = ["recall"]')
    (pytester.path / "fixtures" / "terms.txt").write_text("云桌面 100 n\n", encoding="utf-8")
    (pytester.path / "fixtures" / "other.txt").write_text("云桌面 100 n\n报销单\n", encoding="utf-8")
    return pytester


def rankings(results: dict, name: str) -> dict[str, list[str]]:  # type: ignore[type-arg]
    return {qid: q["ranking"] for qid, q in results["retrievers"][name]["questions"].items()}


def test_search_mode_and_a_dictionary_beside_the_default_cut(project: pytest.Pytester) -> None:
    result = project.runpytest("--rag-update-baseline", "--rag-json=results.json", *RUN)
    assert result.ret == 0, result.stdout.str()
    results = json.loads((project.path / "results.json").read_text(encoding="utf-8"))
    assert rankings(results, "bm25") == {"q1": [], "q2": ["it-2", "desk-1"]}
    assert rankings(results, "bm25_search") == {"q1": ["it-1"], "q2": ["it-2", "desk-1"]}
    assert rankings(results, "bm25_terms") == {"q1": [], "q2": ["it-2"]}
    assert list(jieba.cut("云桌面")) == ["云", "桌面"]  # this process's jieba is left as it was
    recorded = baseline(project.path)["fingerprint"]["retrievers"]
    assert recorded["bm25"] == {"type": "bm25", "k1": 1.5, "b": 0.75, "epsilon": 0.25, "min_score": 0.0}
    assert recorded["bm25_search"]["tokenizer"] == f"jieba-search {jieba.__version__}"
    assert recorded["bm25_search"]["user_dict"] == "fixtures/terms.txt"
    assert recorded["bm25_search"]["user_dict_sha256"] == read_user_dict(project.path / "fixtures/terms.txt").sha256
    assert "tokenizer" not in recorded["bm25_terms"] and recorded["bm25_terms"]["user_dict"] == "fixtures/other.txt"
    assert str(project.path) not in (project.path / "baselines" / "retrieval.json").read_text(encoding="utf-8")


def test_a_changed_dictionary_is_a_named_change_of_its_retriever(project: pytest.Pytester) -> None:
    assert project.runpytest("--rag-update-baseline", *RUN).ret == 0
    before = read_user_dict(project.path / "fixtures/terms.txt").sha256
    (project.path / "fixtures" / "terms.txt").write_text("云桌面 100 n\n桌面 1\n", encoding="utf-8")
    after = read_user_dict(project.path / "fixtures/terms.txt").sha256
    result = project.runpytest("--rag-eval", "-k", "bm25_search", *RUN)
    result.stdout.fnmatch_lines([f'compared across changes: bm25_search.user_dict_sha256 "{before[:50]}* -> "{after[:50]}*'])


def test_the_sample_runs_with_jieba_rs(pytester: pytest.Pytester) -> None:
    """The bundled sample under the Rust port's cut: recorded with rjieba's version, and gated."""
    sample = Path(__file__).resolve().parents[2] / "fixtures"
    write_project(pytester.path, retrievers=retriever("bm25", "bm25") + retriever("bm25_rs", "bm25", tokenizer="jieba-rs"),
                  settings='metrics = ["recall", "ndcg"]')
    for name in ("chunks.jsonl", "evalset.jsonl"):
        shutil.copy(sample / name, pytester.path / "fixtures" / name)
    result = pytester.runpytest("--rag-update-baseline", "--rag-json=results.json", *RUN)
    assert result.ret == 0, result.stdout.str()
    results = json.loads((pytester.path / "results.json").read_text(encoding="utf-8"))
    assert results["fingerprint"]["retrievers"]["bm25_rs"]["tokenizer"] == f"jieba-rs (rjieba {version('rjieba')})"
    questions = results["retrievers"]["bm25_rs"]["questions"]
    assert len(questions) == len((sample / "evalset.jsonl").read_text(encoding="utf-8").splitlines())
    assert results["retrievers"]["bm25_rs"]["metrics"]["recall@3"] > 0
    assert rankings(results, "bm25_rs") != rankings(results, "bm25")  # TR-01 is one token here, three there
    pytester.runpytest("--rag-eval", *RUN).assert_outcomes(passed=4)
