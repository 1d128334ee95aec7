"""Small gate projects written into a pytester folder: a corpus, an eval set, a config; and what
the tests that run them share (the options of every run, the one-line error, retriever tables)."""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

RUN = ("-p", "no:cacheprovider")
"""Options of every pytester run: no .pytest_cache written into the project."""


def one_line_error(result: pytest.RunResult) -> str:
    """The usage error pytest printed; asserts it is a single line and no traceback."""
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    lines = [line for line in result.stderr.lines if line.strip()]
    assert len(lines) == 1, lines
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    return lines[0]


def toml_value(value: object) -> str:
    """A TOML value for the strings, numbers, booleans and lists a retriever table holds."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value), ensure_ascii=False)


def retriever(name: str, kind: str, **params: object) -> str:
    """`[tool.ragretrieval.retrievers.NAME]` with `type = KIND` and one line per parameter."""
    lines = [f"[tool.ragretrieval.retrievers.{name}]", f"type = {toml_value(kind)}"]
    lines += [f"{key} = {toml_value(value)}" for key, value in params.items()]
    return "\n".join(lines) + "\n"


def write_distribution(folder: Path, name: str, entry_points: Mapping[str, Mapping[str, str]],
                       modules: Mapping[str, str]) -> Path:
    """An installed distribution as pip lays one out in `folder`: `NAME-1.0.dist-info` (METADATA and
    entry_points.txt, group -> entry name -> value) beside its modules (relative path -> source).
    Put `folder` on sys.path (PYTHONPATH, for a run in a subprocess) to install it."""
    info = folder / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{entry} = {value}\n" for entry, value in entries.items()) + "\n"
        for group, entries in entry_points.items()
    ), encoding="utf-8")
    for path, source in modules.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(source, encoding="utf-8")
    return folder

CHUNKS: list[dict[str, str]] = [
    {"id": "travel-001", "doc": "差旅报销制度.md", "text": "一线城市住宿标准为每晚不超过600元，二线城市每晚不超过450元。"},
    {"id": "travel-002", "doc": "差旅报销制度.md", "text": "出差结束后15个工作日内在系统提交报销单，并附上发票原件。"},
    {"id": "travel-003", "doc": "差旅报销制度.md", "text": "报销需要提供增值税发票，抬头必须是公司全称。"},
    {"id": "refund-001", "doc": "退换货政策.md", "text": "签收后7天内可申请无理由退货，商品需保持完好。"},
    {"id": "refund-002", "doc": "退换货政策.md", "text": "退款在审核通过后3个工作日内原路退回。"},
    {"id": "error-001", "doc": "错误码手册.md", "text": "ORDER-2024 表示订单已超时关闭，请重新下单。"},
    {"id": "error-002", "doc": "错误码手册.md", "text": "PAY-3001 表示支付渠道暂时不可用，请稍后重试。"},
    {"id": "service-001", "doc": "客服.md", "text": "客服工作时间为周一至周五9:00到18:00，周末休息。"},
]

QUESTIONS: list[dict[str, Any]] = [
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
    if rankings is None:
        rankings = GOLD if questions is QUESTIONS else {}
    set_rankings(folder, rankings, questions)
    if retrievers is None:
        retrievers = retriever("bm25", "bm25") + TABLE_ONLY
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
    document: dict[str, Any] = json.loads(baseline_bytes(folder))
    return document


E2E_CHUNKS = [*CHUNKS, {"id": "faq-001", "doc": "常见问题.md", "text": CHUNKS[3]["text"]}]
"""The corpus plus refund-001's text again under an id that sorts first: equal vectors must tie, broken by id."""

E2E_DEPTH = len(E2E_CHUNKS)
"""The largest metric cutoff: every retriever is asked for, and records, its full ranking."""

QUERIES = {q["id"]: q["query"] for q in QUESTIONS}


def toml_string(value: object) -> str:
    """A TOML basic string; JSON's escaping is valid TOML for the paths and names we write."""
    return json.dumps(str(value), ensure_ascii=False)


MINILM = "sentence-transformers:all-MiniLM-L6-v2"


def e2e_settings(cache: Path | str, *lines: str) -> str:
    """Settings of an end-to-end project: the embedded database, a test-owned cache, full-depth metrics,
    and MiniLM (the `minilm` fixture loads it first; the default embedder has its own tests)."""
    return "\n".join(
        ['db = "embedded"', f"cache = {toml_string(cache)}", f'metrics = ["ndcg", "recall@{E2E_DEPTH}"]',
         f"embedding = {toml_string(MINILM)}", *lines]
    )


def write_e2e_project(folder: Path, retrievers: str, cache: Path | str, *lines: str) -> Path:
    """A project over E2E_CHUNKS with the given retriever tables."""
    return write_project(folder, retrievers=retrievers, settings=e2e_settings(cache, *lines), chunks=E2E_CHUNKS)


def read_results(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document


def rankings(results: Mapping[str, Any], retriever: str) -> dict[str, list[str]]:
    """Question id -> ranking of one retriever in a results (or baseline) document."""
    return {qid: q["ranking"] for qid, q in results["retrievers"][retriever]["questions"].items()}


def synthetic(count: int, no_answer: int = 0) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, list[str]]]:
    """`count` questions, each answered by two chunks of its own (grades 2 and 1), plus no-answer ones.

    Returns (chunks, questions, perfect rankings by question id).
    """
    chunks = []
    questions = []
    gold: dict[str, list[str]] = {}
    for i in range(1, count + 1):
        best, second = f"c{i:03d}a", f"c{i:03d}b"
        chunks += [{"id": best, "text": f"第{i}条制度的主要内容"}, {"id": second, "text": f"第{i}条制度的补充说明"}]
        questions.append({"id": f"q{i:02d}", "query": f"问题{i}", "relevant": {best: 2, second: 1}, "tags": ["semantic"]})
        gold[f"q{i:02d}"] = [best, second]
    for j in range(1, no_answer + 1):
        questions.append({"id": f"n{j:02d}", "query": f"无答案问题{j}", "relevant": [], "tags": ["no-answer"]})
        gold[f"n{j:02d}"] = []
    chunks.append({"id": "z-noise", "text": "与任何问题无关的内容"})
    return chunks, questions, gold


TABLE_ONLY = retriever("table", "python", factory="table_retriever:make")
VECTOR_AND_BM25 = retriever("vector", "vector") + retriever("bm25", "bm25")


def cache_keys(cache: Path, kind: str) -> set[bytes]:
    """The keys (sha256 of the key text) held in the packs of one kind of a cache, any namespace."""
    import struct

    import numpy as np

    from pytest_ragretrieval.cache.packs import decode

    keys: set[bytes] = set()
    for path in (cache / kind).rglob("*.pack"):
        raw = path.read_bytes()
        (size,) = struct.unpack_from("<I", raw, 8)
        dtype = np.dtype(json.loads(raw[12 : 12 + size])["dtype"])
        keys.update(decode(path, raw, dtype).keys)
    return keys


def cache_files(cache: Path) -> dict[Path, tuple[int, int]]:
    """Each file of a cache with its inode and modification time: any rewrite changes them."""
    return {path: (path.stat().st_ino, path.stat().st_mtime_ns) for path in sorted(cache.rglob("*")) if path.is_file()}


def without_timings(path: Path) -> dict[str, Any]:
    """A `--rag-json` file without what is measured in time (the phases, each retriever's latency)."""
    found: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    found.pop("phases", None)
    for entry in found["retrievers"].values():
        entry.pop("latency_ms")
    return found


DOCUMENTS = {
    "travel.md": "# Travel\n\nHotels in first-tier cities cost at most 600 yuan a night. Book through the portal.\n\n"
                 "## Taxis\n\nTaxis after 10 pm are refunded with a receipt.\n",
    "it/laptop.txt": "A lost laptop must be reported to IT within two hours. IT then locks the device remotely. "
                     "Cloud desktop login failures are fixed by restarting the client.",
    "refunds.txt": "Refunds are paid back within three working days after approval. Rejected claims can be "
                   "appealed once.",
}
"""Documents mode's small knowledge base (a folder `kb/`): markdown and text, one document in a subfolder."""
SPAN = "reported to IT within two hours"
DOCUMENT_QUESTIONS: list[dict[str, Any]] = [
    {"id": "laptop", "query": "lost laptop reported IT hours",
     "relevant_spans": [{"doc": "it/laptop.txt", "start": DOCUMENTS["it/laptop.txt"].index(SPAN),
                         "end": DOCUMENTS["it/laptop.txt"].index(SPAN) + len(SPAN), "grade": 2, "text": SPAN}]},
    {"id": "hotel", "query": "hotel cost per night", "relevant_text": ["at most 600 yuan a night"]},
    {"id": "refund", "query": "refunds paid back working days", "relevant_text": ["three working days"]},
    {"id": "taxi", "query": "taxi refunded receipt", "relevant_text": ["Taxis after 10 pm are refunded"]},
]
"""Gold as a span and as snippets, over DOCUMENTS."""


OVERLAP_TABLE = ('[tool.ragretrieval.retrievers.overlap]\ntype = "python"\nfactory = "overlap_retriever:make"\n'
                 "options = {reverse = false}\n")
OVERLAP = '''
import re


def words(text):
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def make(ctx):
    chunks = ctx.chunks
    reverse = ctx.options["reverse"]

    def search(query, k):
        ranked = [c.id for c in sorted(chunks, key=lambda c: (-len(words(query) & words(c.text)), c.id))]
        return (ranked[::-1] if reverse else ranked)[:k]
    return search
'''
"""A python retriever over the documents' chunks: by words shared with the query, or reversed (a worse one)."""


def documents_config(metrics: Sequence[str], tables: str, *, k: int = 2, lines: str = "") -> str:
    """pyproject.toml of the documents project: `kb/` cut one sentence a chunk, English tokens, k and
    `metrics`, `lines` more in [tool.ragretrieval], then `tables` (retrievers, chunkings)."""
    listed = ", ".join(f'"{label}"' for label in metrics)
    return (f'[tool.ragretrieval]\ndocuments = "kb"\nevalset = "fixtures/evalset.jsonl"\n'
            f'baseline = "baselines/retrieval.json"\nk = {k}\ntokenizer = "english"\nmetrics = [{listed}]\n{lines}'
            f'\n[tool.ragretrieval.chunker]\ntype = "sentences"\nsize = 1\n\n{tables}')


def write_documents_project(folder: Path, config: str) -> None:
    """DOCUMENTS under `kb/`, DOCUMENT_QUESTIONS as `fixtures/evalset.jsonl`, and `config` as pyproject.toml."""
    for name, text in DOCUMENTS.items():
        (folder / "kb" / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / "kb" / name).write_text(text, encoding="utf-8")
    (folder / "fixtures").mkdir(exist_ok=True)
    (folder / "fixtures" / "evalset.jsonl").write_text(jsonl(DOCUMENT_QUESTIONS), encoding="utf-8")
    (folder / "pyproject.toml").write_text(config, encoding="utf-8")


def merged_shards(project: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """Record, run the gate as two shards, `ragretrieval merge` them: the merged results."""
    from pytest_ragretrieval.cli import main

    assert project.runpytest("--rag-update-baseline", *RUN).ret == 0
    for index in (1, 2):
        result = project.runpytest("--rag-eval", f"--rag-shard={index}/2", f"--rag-json=part{index}.json", *RUN)
        assert result.ret == 0, result.stdout.str()
    capsys.readouterr()
    code = main(["merge", "part1.json", "part2.json", "--json", "merged.json"])
    out = capsys.readouterr().out
    assert code == 0, out
    found: dict[str, Any] = json.loads((project.path / "merged.json").read_text(encoding="utf-8"))
    return found
