"""runner/reuse.py: the key of a retriever's cached run changes with every input that decides its rankings."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from projects import CHUNKS, QUESTIONS, retriever, write_project

from pytest_ragretrieval.config.settings import Config, load_config
from pytest_ragretrieval.evalset.records import Chunk, Question
from pytest_ragretrieval.record.run import RetrieverRun
from pytest_ragretrieval.runner import reuse
from pytest_ragretrieval.scoring.evaluate import Run, score

RETRIEVERS = (retriever("bm25", "bm25", user_dict="words.txt") + retriever("vector", "vector")
              + retriever("hybrid", "hybrid", sources=["bm25", "vector"]))
SETUP = {"bm25": {}, "vector": {"embedding": "e5", "dimension": 384}, "hybrid": {}}


def project(folder: Path, settings: str = "", retrievers: str = RETRIEVERS) -> Config:
    write_project(folder, retrievers=retrievers, settings=settings)
    if not (folder / "words.txt").exists():
        (folder / "words.txt").write_text("检索 5\n", encoding="utf-8")
    return load_config(None, folder)


CHUNK_ROWS = tuple(Chunk(id=row["id"], text=row["text"]) for row in CHUNKS)
QUESTION_ROWS = tuple(Question(id=row["id"], query=row["query"], relevance={"travel-001": 1}) for row in QUESTIONS)


def key(config: Config, name: str = "hybrid", chunks: tuple[Chunk, ...] = CHUNK_ROWS,
        questions: tuple[Question, ...] = QUESTION_ROWS, setup: dict[str, dict[str, Any]] | None = SETUP,
        database: str = "embedded ") -> str:
    return reuse.key(config, name, reuse.shared(config, chunks, questions, database), setup)


def test_the_same_inputs_give_the_same_key(tmp_path: Path) -> None:
    config = project(tmp_path)
    assert key(config) == key(project(tmp_path)) and len(key(config)) == 64
    assert len({key(config, name) for name in ("bm25", "vector", "hybrid")}) == 3


def test_every_input_changes_the_key(tmp_path: Path) -> None:
    config = project(tmp_path)
    before = key(config)
    edited = (dataclasses.replace(CHUNK_ROWS[0], text=CHUNK_ROWS[0].text + "。"), *CHUNK_ROWS[1:])
    renamed = (dataclasses.replace(QUESTION_ROWS[0], query=QUESTION_ROWS[0].query + "?"), *QUESTION_ROWS[1:])
    changed = {
        "a chunk's text": key(config, chunks=edited),
        "a chunk's metadata": key(config, chunks=(dataclasses.replace(CHUNK_ROWS[0], metadata={"a": 1}),
                                                  *CHUNK_ROWS[1:])),
        "the corpus's order": key(config, chunks=CHUNK_ROWS[::-1]),
        "a query": key(config, questions=renamed),
        "the questions asked": key(config, questions=QUESTION_ROWS[1:]),
        "the embedder's set-up": key(config, setup={**SETUP, "vector": {"embedding": "e5", "dimension": 768}}),
        "the depth": key(project(tmp_path, 'metrics = ["ndcg@10"]')),
        "the embedder": key(project(tmp_path, 'embedding = "python:emb:embed"\nembedding_id = "emb"')),
        "the tokenizer": key(project(tmp_path, 'tokenizer = "whitespace"')),
        "the database's setting": key(project(tmp_path, 'db = "embedded"')),
        "the database the run resolved": key(config, database="url postgresql://u:***@host/db"),
        "what the types add, asked or not": key(config, setup=None),
        "a source's parameter": key(project(tmp_path, retrievers=RETRIEVERS.replace(
            'type = "vector"', 'type = "vector"\nmin_score = 0.5'))),
        "the fusion's parameter": key(project(tmp_path, retrievers=RETRIEVERS + "rrf_k = 10\n")),
    }
    (tmp_path / "words.txt").write_text("检索 6\n", encoding="utf-8")
    changed["the user dictionary's bytes"] = key(config)
    (tmp_path / "words.txt").write_text("检索 5\n", encoding="utf-8")
    (tmp_path / "emb.py").write_text("def embed(texts): ...\n", encoding="utf-8")
    python = project(tmp_path, 'embedding = "python:emb:embed"\nembedding_id = "emb"')
    first = key(python)
    (tmp_path / "emb.py").write_text("def embed(texts): return []\n", encoding="utf-8")
    changed["a python: embedder's source"] = key(python)
    assert first != changed["a python: embedder's source"]
    same = [what for what, found in changed.items() if found == before]
    assert same == [], f"unchanged key after a change of {same}"
    assert key(project(tmp_path)) == before


def test_code_and_library_versions_are_in_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = project(tmp_path)
    before = key(config)
    monkeypatch.setattr(reuse, "code_digest", lambda: "0" * 64)
    assert key(config) != before
    monkeypatch.undo()
    monkeypatch.setattr(reuse, "_version", lambda name: "9.9" if name == "jieba" else None)
    assert key(config) != before


def test_what_is_never_reused(tmp_path: Path) -> None:
    config = project(tmp_path)
    assert all(reuse.reusable(config, name) for name in ("bm25", "vector", "hybrid"))
    timed = project(tmp_path, retrievers=RETRIEVERS.replace('type = "bm25"', 'type = "bm25"\nmax_latency_ms = 50'))
    assert not reuse.reusable(timed, "bm25") and reuse.reusable(timed, "hybrid")  # its own latency item only
    hnsw = project(tmp_path, 'index = "hnsw"')
    assert not reuse.reusable(hnsw, "vector") and not reuse.reusable(hnsw, "hybrid") and reuse.reusable(hnsw, "bm25")
    user = project(tmp_path, retrievers=RETRIEVERS + retriever("mine", "python", factory="table_retriever:make")
                   + retriever("both", "hybrid", sources=["bm25", "mine"]))
    assert not reuse.reusable(user, "mine") and not reuse.reusable(user, "both")


def test_an_entry_is_read_back_only_under_its_keys(tmp_path: Path) -> None:
    config = project(tmp_path)
    known = {chunk.id for chunk in CHUNK_ROWS}
    rankings = {q.id: ("travel-001", "refund-001") for q in QUESTION_ROWS}
    latencies = {q.id: 1.5 + number for number, q in enumerate(QUESTION_ROWS)}
    ran = Run(result=score("bm25", QUESTION_ROWS, rankings, config.shown, latencies), notes=("a note",))
    path = reuse.entry_path(tmp_path / ".rag-cache", "bm25")
    reuse.write(path, "i1", "k1", "bm25", ran, 2, rankings)
    assert (path.parent / ".gitignore").read_text(encoding="utf-8").splitlines()[-1] == "*"

    def read(inputs: str | None = "i1", wanted: str | None = "k1", name: str = "bm25",
             ids: set[str] = known) -> Run | None:
        return reuse.read(path, name, inputs, lambda: wanted, QUESTION_ROWS, config.shown, 2, ids)

    found = read()
    assert found is not None and found.result == ran.result
    assert found.notes == ("a note",)  # that the rankings were reused is the record's `reused`, a note, not a warning
    assert read(wanted="k2") is None and read(inputs="i2") is None and read(inputs=None) is None
    assert read(wanted=None) is None  # the set-up failed: the retriever runs and names why
    assert read(name="other") is None
    assert read(ids={"travel-001"}) is None  # a ranking names a chunk the corpus no longer has: runs
    asked: list[str] = []

    def setup() -> str:
        asked.append("set-up")
        return "k1"

    reuse.read(path, "bm25", "i2", setup, QUESTION_ROWS, config.shown, 2, known)
    assert asked == []  # a changed input is known before the set-up (which may embed) is asked for
    path.write_text('{"key": "k1", "inputs": "i1", "name": "bm25", "rankings": [', encoding="utf-8")
    assert read() is None  # damaged: runs
    reuse.write(path, "i1", "k1", "bm25", Run(error=None, skipped="no model here"), 2, rankings)
    assert path.read_text(encoding="utf-8").startswith('{"key": "k1", "inputs": "i1", "name": "bm25", "rankings": [')


def test_a_source_is_read_back_as_deep_as_its_entry_holds(tmp_path: Path) -> None:
    """Entries held only the top `depth` (k) of each ranking, so a fusion reading its sources 10 deep had
    to run them again; an entry now keeps them as deep as a consumer reads them, and serves a consumer
    only that deep, under its keys, with names the corpus holds."""
    config = project(tmp_path)
    known = {chunk.id for chunk in CHUNK_ROWS}
    deep = {q.id: ("travel-001", "refund-001", "travel-002") for q in QUESTION_ROWS}
    ran = Run(result=score("bm25", QUESTION_ROWS, {qid: ranking[:2] for qid, ranking in deep.items()},
                           config.shown, {q.id: 2.5 for q in QUESTION_ROWS}))
    path = reuse.entry_path(tmp_path / ".rag-cache", "bm25")
    reuse.write(path, "i1", "k1", "bm25", ran, 3, deep)

    def source(depth: int, wanted: str = "k1", ids: set[str] = known) -> RetrieverRun | None:
        return reuse.source(path, "bm25", "i1", lambda: wanted, QUESTION_ROWS, depth, ids)

    found = source(3)
    assert found is not None and found.depth == 3 and dict(found.rankings) == deep
    assert set(found.latency_ms.values()) == {2.5}
    assert source(4) is None  # a consumer reads deeper than the entry holds: the source runs
    assert source(3, wanted="k2") is None and source(3, ids=known - {"travel-002"}) is None
    again = reuse.read(path, "bm25", "i1", lambda: "k1", QUESTION_ROWS, config.shown, 2, known)
    assert again is not None and again.result is not None
    assert [q.ranking for q in again.result.questions] == [q.ranking for q in ran.result.questions]  # type: ignore[union-attr]


def test_a_latency_item_keeps_a_source_measured(tmp_path: Path) -> None:
    """A source read by a retriever with `max_latency_ms` (or with one itself) is never served from its
    cached run: that item's latency would be partly as measured then."""
    config = project(tmp_path, retrievers=RETRIEVERS.replace('sources = ["bm25", "vector"]',
                                                             'sources = ["bm25", "vector"]\nmax_latency_ms = 50')
                     + retriever("solo", "bm25"))
    assert reuse.measured(config, "vector") and reuse.measured(config, "bm25") and reuse.measured(config, "hybrid")
    assert not reuse.measured(config, "solo")


def test_the_embedding_caches_files_are_an_input_of_what_reads_vectors(tmp_path: Path) -> None:
    """Packs are named by the digest of their bytes: another CPU's vectors for the same texts are new
    files, and vector and hybrid (which reads vector) run again; bm25 reads no vector and is reused."""
    config = project(tmp_path)
    cache = tmp_path / "cache"
    assert reuse.vector_files(cache) == []
    space = cache / "embeddings" / "e5-0123abcd"
    space.mkdir(parents=True)
    (space / "id.txt").write_text("e5\n", encoding="utf-8")
    (space / "aa.pack").write_bytes(b"one")
    first = reuse.vector_files(cache)
    assert first == ["e5-0123abcd/aa.pack", "e5-0123abcd/id.txt"]
    (space / "aa.pack").rename(space / "bb.pack")
    second = reuse.vector_files(cache)
    common = reuse.shared(config, CHUNK_ROWS, QUESTION_ROWS, "embedded ")
    for name, reads in (("vector", True), ("hybrid", True), ("bm25", False)):
        assert reuse.reads_vectors(config, name) is reads
        differs = reuse.key(config, name, common, SETUP, first) != reuse.key(config, name, common, SETUP, second)
        assert differs is reads, name
        # the key without the set-up, checked first, is the same: nothing is embedded to compute it
        assert reuse.key(config, name, common, None, first) == reuse.key(config, name, common, None, second)


def test_questions_unchanged_are_read_back_alone_under_the_keys_without_the_questions(tmp_path: Path) -> None:
    """An entry keeps its keys without the questions and each question's digest (id, text, tags): with only
    the eval set changed, the rankings of the unchanged questions are served, the added or edited are not."""
    config = project(tmp_path)
    known = {chunk.id for chunk in CHUNK_ROWS}
    rankings = {q.id: ("travel-001", "refund-001") for q in QUESTION_ROWS}
    ran = Run(result=score("bm25", QUESTION_ROWS, rankings, config.shown, {q.id: 2.5 for q in QUESTION_ROWS}))
    path = reuse.entry_path(tmp_path / ".rag-cache", "bm25")
    reuse.write(path, "i1", "k1", "bm25", ran, 2, rankings, partial=("p1", "w1"), questions=QUESTION_ROWS)
    edited = dataclasses.replace(QUESTION_ROWS[1], query=QUESTION_ROWS[1].query + "？")
    retagged = dataclasses.replace(QUESTION_ROWS[2], tags=("new",))
    added = Question(id="q99", query="发票抬头", relevance={"travel-003": 1})
    asked = (QUESTION_ROWS[0], edited, retagged, *QUESTION_ROWS[3:], added)

    def partial(inputs: str = "p1", wanted: str = "w1", depth: int = 2) -> RetrieverRun | None:
        return reuse.partial(path, "bm25", inputs, lambda: wanted, asked, depth, known)

    found = partial()
    assert found is not None and set(found.rankings) == {q.id for q in QUESTION_ROWS} - {edited.id, retagged.id}
    assert set(found.latency_ms) == set(found.rankings)
    assert partial(inputs="p2") is None and partial(wanted="w2") is None  # the corpus or a setting changed
    assert partial(depth=3) is None  # read deeper than the entry holds
    assert reuse.partial(path, "bm25", "p1", lambda: "w1", (added,), 2, known) is None  # nothing to reuse
    reuse.write(path, "i1", "k1", "bm25", ran, 2, rankings)  # an entry written without them
    assert partial() is None


def test_what_is_reused_question_by_question(tmp_path: Path) -> None:
    """A fusion of per-question sources is; a `run` retriever (its notes span the whole set) and a fusion over
    one are not."""
    config = project(tmp_path, retrievers=RETRIEVERS + retriever("file", "run", path="run.txt")
                     + retriever("fused", "hybrid", sources=["bm25", "file"]))
    assert all(reuse.per_question(config, name) for name in ("bm25", "vector", "hybrid"))
    assert not reuse.per_question(config, "file") and not reuse.per_question(config, "fused")
