"""The sample's documents version (fixtures/documents/): its documents cut by the whole-chunk chunker give back
fixtures/chunks.jsonl, its gold spans are its documents' slices and make exactly the sample's gold chunks
relevant at their grades, and the committed files are what benchmarks/sample_documents.py derives."""
from __future__ import annotations

import importlib.util
import json
import sys
from collections import defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pytest_ragretrieval.evalset.chunkers import Chunker
from pytest_ragretrieval.evalset.corpus import documents_corpus
from pytest_ragretrieval.evalset.documents import load_documents

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "fixtures" / "documents"
WHOLE = Chunker(type="python", python="sample_chunker:split")


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def derivation() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sample_documents_benchmark",
                                                  ROOT / "benchmarks" / "sample_documents.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_whole_chunk_chunker_gives_back_the_sample_chunks() -> None:
    """Each document's chunks, in order, are the sample's chunks of that document (ids aside)."""
    chunks, _ = documents_corpus(FOLDER / "kb", WHOLE, FOLDER, FOLDER / "evalset.jsonl")
    sample: dict[str, list[str]] = defaultdict(list)
    for row in lines(ROOT / "fixtures" / "chunks.jsonl"):
        sample[row["doc"]].append(row["text"])
    cut: dict[str, list[str]] = defaultdict(list)
    for chunk in chunks:
        assert chunk.doc is not None
        cut[chunk.doc].append(chunk.text)
    assert cut == sample and len(chunks) == 215


def test_gold_spans_are_their_documents_slices_and_the_sample_gold() -> None:
    """Every span's text is `doc[start:end]`; under the whole-chunk chunking the rule labels exactly the
    sample's gold chunks at their grades (matched by document and text), and no-answer questions stay so."""
    documents = {d.id: d.text for d in load_documents(FOLDER / "kb")}
    chunks, questions = documents_corpus(FOLDER / "kb", WHOLE, FOLDER, FOLDER / "evalset.jsonl")
    place = {c.id: (c.doc, c.text) for c in chunks}
    sample_rows = {row["id"]: (row["doc"], row["text"]) for row in lines(ROOT / "fixtures" / "chunks.jsonl")}
    sample = {q["id"]: q for q in lines(ROOT / "fixtures" / "evalset.jsonl")}
    derived = lines(FOLDER / "evalset.jsonl")
    assert [q["id"] for q in derived] == list(sample) and len(questions) == 60
    for row in derived:
        for span in row.get("relevant_spans", []):
            assert documents[span["doc"]][span["start"]:span["end"]] == span["text"]
    for question in questions:
        wanted = {sample_rows[cid]: grade for cid, grade in dict(sample[question.id]["relevant"]).items()}
        assert {place[cid]: grade for cid, grade in question.relevance.items()} == wanted, question.id
        assert question.answerable == bool(wanted)


def test_the_committed_files_are_what_the_script_derives(derivation: ModuleType) -> None:
    """A hand edit of fixtures/documents/ (or of the sample without rerunning the script) shows here."""
    files = derivation.wanted()
    assert len(files) == 9
    for path, text in files.items():
        assert path.read_text(encoding="utf-8") == text, path


def test_the_derivation_places_each_chunk_after_a_blank_line(derivation: ModuleType) -> None:
    """Offsets count the separators: the second chunk of a document starts after the first and "\\n\\n"."""
    chunks = [{"id": "a", "doc": "d.md", "text": "一二三"}, {"id": "b", "doc": "d.md", "text": "四五"},
              {"id": "c", "doc": "e.md", "text": "六"}]
    questions = [{"id": "q", "query": "?", "relevant": {"b": 2, "c": 1}, "tags": []},
                 {"id": "n", "query": "?", "relevant": [], "tags": ["no-answer"]}]
    documents, evalset = derivation.derive(chunks, questions)
    assert documents == {"d.md": "一二三\n\n四五\n", "e.md": "六\n"}
    assert [json.loads(line) for line in evalset] == [
        {"id": "q", "query": "?", "relevant_spans": [
            {"doc": "d.md", "start": 5, "end": 7, "grade": 2, "text": "四五"},
            {"doc": "e.md", "start": 0, "end": 1, "grade": 1, "text": "六"}], "tags": []},
        {"id": "n", "query": "?", "relevant": [], "tags": ["no-answer"]},
    ]


@pytest.fixture(scope="module")
def study() -> ModuleType:
    spec = importlib.util.spec_from_file_location("chunking_benchmark", ROOT / "benchmarks" / "chunking.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_study_writes_one_loadable_config_per_chunking(study: ModuleType, tmp_path: Path) -> None:
    """benchmarks/chunking.py's configs load through the config loader: the chunking's chunker, the committed
    documents and questions, a baseline (and, but for `whole`, a token cache) in its own folder, and the
    embedding retrievers and their comparisons only at `whole`."""
    from pytest_ragretrieval.config.settings import load_config

    for name, chunker in study.CHUNKINGS.items():
        work = tmp_path / name.replace("/", "_").replace(" ", "_")
        work.mkdir()
        (work / "ragretrieval.toml").write_text(
            study.toml_text(study.configured(study.sample_settings(), name, chunker, work)), encoding="utf-8")
        config = load_config(str(work / "ragretrieval.toml"), tmp_path)
        assert config.chunker == Chunker(**chunker)
        assert config.documents == FOLDER / "kb" and config.baseline == work / "baseline.json"
        assert (config.cache_dir == ROOT / ".rag-cache") == (name == "whole")
        names = {spec.name for spec in config.retrievers}
        embedding = {"vector", "hybrid"} if name == "whole" else set()
        assert names == {"bm25", "bm25_search", "bm25_rrf", *embedding}


def test_the_chroma_comparison_reads_their_questions_as_spans_and_loads(study: ModuleType, tmp_path: Path) -> None:
    """`--chroma` on a hand-made checkout laid out as theirs: only `state_of_the_union`'s questions, each
    reference an answer span whose text is the corpus slice, and one config whose three chunkings load, bm25
    on each, the named two paired with the paragraphs."""
    from pytest_ragretrieval.config.settings import load_config

    data = tmp_path / "checkout" / study.CHROMA_DATA
    (data / "corpora").mkdir(parents=True)
    text = "First paragraph about jobs.\n\nSecond paragraph about prices and fees."
    (data / "corpora" / "state_of_the_union.md").write_text(text, encoding="utf-8")
    fees = text.index("prices and fees")
    references = json.dumps([{"content": "prices and fees", "start_index": fees, "end_index": fees + 15}])
    (data / "questions_df.csv").write_text(
        "question,references,corpus_id\n"
        f'"What about fees?","{references.replace(chr(34), chr(34) * 2)}",state_of_the_union\n'
        '"Other?","[]",wikitexts\n', encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    rows = study.chroma_inputs(tmp_path / "checkout", work)
    assert [row["question"] for row in rows] == ["What about fees?"]
    (question,) = lines(work / "evalset.jsonl")
    assert question["relevant_spans"] == [
        {"doc": "state_of_the_union", "start": fees, "end": fees + 15, "grade": 1, "text": "prices and fees"}]
    (work / "ragretrieval.toml").write_text(study.toml_text(study.chroma_settings(work, 5)), encoding="utf-8")
    config = load_config(str(work / "ragretrieval.toml"), tmp_path)
    assert config.chunker == Chunker(type="python", python="sample_chunker:split")
    assert {spec.name for spec in config.retrievers} == {"bm25_paragraphs", "bm25_t512", "bm25_t256"}
