"""Documents mode's loading cached by digest: a warm load reads the chunks and the labelled questions back
without cutting or labelling; any byte of the documents or the eval set, a chunker, or the recorded digest
changed is a miss; a `python` chunker is never cached; `readonly` never writes, `off` never reads."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_ragretrieval.evalset import corpus
from pytest_ragretrieval.evalset.chunkers import Chunker
from pytest_ragretrieval.evalset.corpus import documents_corpus

TEXT = "Refunds are paid back within three working days. Hotels cost 600 a night. Refunds are final."
NAMED = {"big": Chunker("sentences", size=2)}
ONE = Chunker("sentences", size=1)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "policy.md").write_text(TEXT, encoding="utf-8")
    line = {"id": "q1", "query": "hotel", "relevant_spans": [{"doc": "policy.md", "start": 49, "end": 72,
                                                              "text": "Hotels cost 600 a night"}]}
    (tmp_path / "evalset.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    return tmp_path / "kb", tmp_path / "evalset.jsonl"


def load(files: tuple[Path, Path], chunker: Chunker = ONE, **options: Any) -> Any:
    documents, evalset = files
    return documents_corpus(documents, chunker, documents.parent, evalset, NAMED, cache=documents.parent / "c",
                            **options)


def count_loads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = corpus._documents_corpus

    def counted(*args: Any) -> Any:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(corpus, "_documents_corpus", counted)
    return calls


def test_a_warm_load_reads_back_what_the_cold_one_cut_and_labelled(
        files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    calls = count_loads(monkeypatch)
    cold = load(files)
    warm = load(files)
    assert calls == [1] and warm == cold
    assert [c.metadata for c in warm[0]] == [c.metadata for c in cold[0]]
    assert warm[1][0].relevance == {"policy.md#1": 1, "policy.md#big#0": 1}
    assert (files[0].parent / "c" / "corpus" / ".gitignore").read_text(encoding="utf-8").endswith("*\n")


def test_any_input_changed_is_a_miss(files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    calls = count_loads(monkeypatch)
    load(files)
    (files[0] / "policy.md").write_text(TEXT + " ", encoding="utf-8")
    load(files)
    files[1].write_text(files[1].read_text(encoding="utf-8").replace("hotel", "hotels"), encoding="utf-8")
    questions = load(files)[1]
    assert questions[0].query == "hotels"
    load(files, Chunker("sentences", size=2))
    load(files, Chunker("sentences", size=2), recorded="abc")
    (files[0] / "new.txt").write_text("Another document.", encoding="utf-8")
    chunks = load(files, Chunker("sentences", size=2), recorded="abc")[0]
    assert "new.txt#0" in {c.id for c in chunks}
    assert len(calls) == 6


def test_a_python_chunker_readonly_and_off(files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    calls = count_loads(monkeypatch)
    (files[0].parent / "mine.py").write_text("def split(text):\n    return [(0, len(text))]\n", encoding="utf-8")
    team = Chunker("python", python="mine:split")
    load(files, team)
    load(files, team)
    assert len(calls) == 2 and not (files[0].parent / "c").exists()
    load(files, mode="readonly")
    assert not (files[0].parent / "c").exists()
    load(files)
    load(files, mode="off")
    load(files, mode="readonly")
    assert len(calls) == 5  # readonly read the entry the readwrite load wrote


def test_a_damaged_entry_is_a_miss(files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    calls = count_loads(monkeypatch)
    first = load(files)
    (entry,) = (files[0].parent / "c" / "corpus").glob("*.msgpack")
    entry.write_bytes(b"\x00damaged")
    assert load(files) == first and len(calls) == 2
    assert load(files) == first and len(calls) == 2
