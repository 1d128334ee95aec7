"""Small gate projects written into a pytester folder: a corpus, an eval set, a config."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

CHUNKS = [
    {"id": "travel-001", "doc": "差旅报销制度.md", "text": "一线城市住宿标准为每晚不超过600元，二线城市每晚不超过450元。"},
    {"id": "travel-002", "doc": "差旅报销制度.md", "text": "出差结束后15个工作日内在系统提交报销单，并附上发票原件。"},
    {"id": "travel-003", "doc": "差旅报销制度.md", "text": "报销需要提供增值税发票，抬头必须是公司全称。"},
    {"id": "refund-001", "doc": "退换货政策.md", "text": "签收后7天内可申请无理由退货，商品需保持完好。"},
    {"id": "refund-002", "doc": "退换货政策.md", "text": "退款在审核通过后3个工作日内原路退回。"},
    {"id": "error-001", "doc": "错误码手册.md", "text": "ORDER-2024 表示订单已超时关闭，请重新下单。"},
    {"id": "error-002", "doc": "错误码手册.md", "text": "PAY-3001 表示支付渠道暂时不可用，请稍后重试。"},
    {"id": "service-001", "doc": "客服.md", "text": "客服工作时间为周一至周五9:00到18:00，周末休息。"},
]

QUESTIONS = [
    {"id": "q01", "query": "住宿标准一晚多少钱", "relevant": {"travel-001": 2}, "tags": ["semantic"]},
    {"id": "q02", "query": "ORDER-2024 是什么错误", "relevant": ["error-001"], "tags": ["keyword"]},
    {"id": "q03", "query": "出差回来钱怎么报", "relevant": {"travel-002": 2, "travel-003": 1}, "tags": ["semantic"]},
    {"id": "q04", "query": "PAY-3001", "relevant": ["error-002"], "tags": ["keyword"]},
    {"id": "q05", "query": "退款多久到账", "relevant": ["refund-002"], "tags": ["semantic"]},
    {"id": "q06", "query": "公司年会在哪里办", "relevant": [], "tags": ["no-answer"]},
]

GOLD = {
    q["id"]: sorted(q["relevant"], key=lambda c: -q["relevant"][c]) if isinstance(q["relevant"], dict) else list(q["relevant"])
    for q in QUESTIONS
}
"""A perfect ranking per question: the judged chunks, best grade first."""

TABLE_RETRIEVER = '''
import json
from pathlib import Path

HERE = Path(__file__).parent


def make(ctx):
    """Answers from rankings.json (query -> ids), read per build, so a test can change it between runs."""
    by_query = json.loads((HERE / "rankings.json").read_text(encoding="utf-8"))
    calls = HERE / "calls.txt"

    def retrieve(query, k):
        with calls.open("a", encoding="utf-8") as log:
            log.write(query + "\\n")
        return by_query.get(query, [])[:k]

    return retrieve
'''


def jsonl(rows: Sequence[Mapping[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def write_project(
    folder: Path,
    *,
    retrievers: str | None = None,
    settings: str = "",
    chunks: Sequence[Mapping[str, Any]] = CHUNKS,
    questions: Sequence[Mapping[str, Any]] = QUESTIONS,
    rankings: Mapping[str, list[str]] | None = None,
) -> Path:
    """Write a gate project; by default a `bm25` and a `table` retriever answering from rankings.json."""
    (folder / "fixtures").mkdir(exist_ok=True)
    (folder / "fixtures" / "chunks.jsonl").write_text(jsonl(chunks), encoding="utf-8")
    (folder / "fixtures" / "evalset.jsonl").write_text(jsonl(questions), encoding="utf-8")
    (folder / "table_retriever.py").write_text(TABLE_RETRIEVER, encoding="utf-8")
    set_rankings(folder, rankings if rankings is not None else GOLD, questions)
    if retrievers is None:
        retrievers = """
[tool.ragretrieval.retrievers.bm25]
type = "bm25"

[tool.ragretrieval.retrievers.table]
type = "python"
factory = "table_retriever:make"
"""
    (folder / "pyproject.toml").write_text(
        f"""
[tool.ragretrieval]
chunks = "fixtures/chunks.jsonl"
evalset = "fixtures/evalset.jsonl"
baseline = "baselines/retrieval.json"
k = 3
{settings}
{retrievers}
""",
        encoding="utf-8",
    )
    return folder


def set_rankings(folder: Path, rankings: Mapping[str, list[str]], questions: Sequence[Mapping[str, Any]] = QUESTIONS) -> None:
    """Make the `table` retriever answer question id -> ranking."""
    queries = {q["id"]: q["query"] for q in questions}
    by_query = {queries[qid]: ranking for qid, ranking in rankings.items()}
    (folder / "rankings.json").write_text(json.dumps(by_query, ensure_ascii=False), encoding="utf-8")


def baseline_bytes(folder: Path) -> bytes:
    return (folder / "baselines" / "retrieval.json").read_bytes()


def baseline(folder: Path) -> dict[str, Any]:
    return json.loads(baseline_bytes(folder))
