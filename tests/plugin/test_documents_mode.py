"""The gate in documents mode: a folder of documents cut by a chunker, gold given as spans and snippets,
the bm25 retriever end to end; the baseline records the chunker and the documents, a second run passes, and
an edited document changes only its own chunks."""
from __future__ import annotations

import json

import pytest
from projects import RUN

from pytest_ragretrieval.cli import main

DOCUMENTS = {
    "travel.md": "# Travel\n\nHotels in first-tier cities cost at most 600 yuan a night. Book through the portal.\n\n"
                 "## Taxis\n\nTaxis after 10 pm are refunded with a receipt.\n",
    "it/laptop.txt": "A lost laptop must be reported to IT within two hours. IT then locks the device remotely. "
                     "Cloud desktop login failures are fixed by restarting the client.",
    "refunds.txt": "Refunds are paid back within three working days after approval. Rejected claims can be "
                   "appealed once.",
}
SPAN = "reported to IT within two hours"
QUESTIONS = [
    {"id": "laptop", "query": "lost laptop reported IT hours",
     "relevant_spans": [{"doc": "it/laptop.txt", "start": DOCUMENTS["it/laptop.txt"].index(SPAN),
                         "end": DOCUMENTS["it/laptop.txt"].index(SPAN) + len(SPAN), "grade": 2, "text": SPAN}]},
    {"id": "hotel", "query": "hotel cost per night", "relevant_text": ["at most 600 yuan a night"]},
    {"id": "refund", "query": "refunds paid back working days", "relevant_text": ["three working days"]},
    {"id": "taxi", "query": "taxi refunded receipt", "relevant_text": ["Taxis after 10 pm are refunded"]},
]
CONFIG = """
[tool.ragretrieval]
documents = "kb"
evalset = "fixtures/evalset.jsonl"
baseline = "baselines/retrieval.json"
k = 2
tokenizer = "english"
metrics = ["recall", "ndcg"]

[tool.ragretrieval.chunker]
type = "sentences"
size = 1

[tool.ragretrieval.retrievers.bm25]
type = "bm25"
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    for name, text in DOCUMENTS.items():
        (pytester.path / "kb" / name).parent.mkdir(parents=True, exist_ok=True)
        (pytester.path / "kb" / name).write_text(text, encoding="utf-8")
    (pytester.path / "fixtures").mkdir()
    (pytester.path / "fixtures" / "evalset.jsonl").write_text(
        "\n".join(json.dumps(q) for q in QUESTIONS), encoding="utf-8")
    (pytester.path / "pyproject.toml").write_text(CONFIG, encoding="utf-8")
    return pytester


def test_documents_mode_records_a_baseline_and_passes_again(project: pytest.Pytester) -> None:
    first = project.runpytest("--rag-update-baseline", "--rag-json=results.json", *RUN)
    assert first.ret == 0, first.stdout.str()
    results = json.loads((project.path / "results.json").read_text(encoding="utf-8"))
    rankings = {qid: q["ranking"] for qid, q in results["retrievers"]["bm25"]["questions"].items()}
    assert rankings["laptop"][0] == "it/laptop.txt#0" and rankings["refund"][0] == "refunds.txt#0"
    recorded = json.loads((project.path / "baselines" / "retrieval.json").read_text(encoding="utf-8"))
    chunks = recorded["fingerprint"]["chunks"]
    assert chunks["chunker"] == {"type": "sentences", "size": 1, "overlap": 0}
    assert chunks["documents"]["count"] == 3 and len(chunks["documents"]["sha256"]) == 64
    assert set(chunks["gold"]) == {"it/laptop.txt#0", "travel.md#1", "refunds.txt#0", "travel.md#4"}
    second = project.runpytest("--rag-eval", *RUN)
    assert second.ret == 0, second.stdout.str()
    second.stdout.fnmatch_lines(["*passed*"])
    (project.path / "kb" / "refunds.txt").write_text("Note: updated. " + DOCUMENTS["refunds.txt"], encoding="utf-8")
    third = project.runpytest("--rag-eval", *RUN)
    assert third.ret == 0, third.stdout.str()
    third.stdout.fnmatch_lines([  # the other documents' chunks keep their ids: their questions stay comparable
        "compared across changes: chunks: 2 edited (refunds.txt#0, refunds.txt#1), 1 added (refunds.txt#2), 0 removed",
        "questions: 3 comparable, 0 added, 0 removed, 1 edited (refund: *",
    ])


def test_shards_merge_in_documents_mode(project: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    """`ragretrieval merge` cuts the documents as the session did: it read a chunks file only, and stopped with
    "reads a chunks file" on a documents config."""
    assert project.runpytest("--rag-update-baseline", *RUN).ret == 0
    for index in (1, 2):
        result = project.runpytest("--rag-eval", f"--rag-shard={index}/2", f"--rag-json=part{index}.json", *RUN)
        assert result.ret == 0, result.stdout.str()
    capsys.readouterr()
    code = main(["merge", "part1.json", "part2.json", "--json", "merged.json"])
    out = capsys.readouterr().out
    assert code == 0, out
    merged = json.loads((project.path / "merged.json").read_text(encoding="utf-8"))
    assert merged["fingerprint"]["chunks"]["chunker"] == {"type": "sentences", "size": 1, "overlap": 0}
    assert sorted(merged["retrievers"]["bm25"]["questions"]) == ["hotel", "laptop", "refund", "taxi"]
