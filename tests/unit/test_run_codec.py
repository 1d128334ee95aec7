"""record/run.py: one run type, `RetrieverRun`, and one codec, with limits, for the reuse cache's entries and
the shards' partial records; what either cannot take is a cache miss (reuse) or one line (a partial)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_reuse import CHUNK_ROWS, QUESTION_ROWS
from test_reuse import project as reuse_project
from test_shards import error, project, write_shards

from pytest_ragretrieval.files.jsonshape import Node, ShapeProblem
from pytest_ragretrieval.record import run as codec
from pytest_ragretrieval.record.run import RetrieverRun, decode, document, scored
from pytest_ragretrieval.runner import reuse
from pytest_ragretrieval.scoring.evaluate import Run, score
from pytest_ragretrieval.shards.partial import read_partial


def kept(tmp_path: Path) -> tuple[Path, Run]:
    """A reuse entry of bm25 under the keys i1 and k1, three deep."""
    config = reuse_project(tmp_path)
    rankings = {q.id: ("travel-001", "refund-001", "travel-002") for q in QUESTION_ROWS}
    ran = Run(result=score("bm25", QUESTION_ROWS, rankings, config.shown, {q.id: 2.5 for q in QUESTION_ROWS}),
              diagnostics={"ann_recall@3": 0.5}, notes=("a note",))
    path = reuse.entry_path(tmp_path / ".rag-cache", "bm25")
    reuse.write(path, "i1", "k1", "bm25", ran, 3, rankings)
    return path, ran


def source(path: Path) -> RetrieverRun | None:
    return reuse.source(path, "bm25", "i1", lambda: "k1", QUESTION_ROWS, 3, {chunk.id for chunk in CHUNK_ROWS})


def test_a_reuse_entry_decodes_to_the_run_type(tmp_path: Path) -> None:
    path, ran = kept(tmp_path)
    found = source(path)
    assert isinstance(found, RetrieverRun)
    assert found.depth == 3 and found.under == "k1" and found.notes == ("a note",)
    assert found.diagnostics == {"ann_recall@3": 0.5} and set(found.latency_ms.values()) == {2.5}
    entry = json.loads(path.read_text(encoding="utf-8"))
    assert entry["format"] == reuse.VERSION and decode(Node(entry["run"], "run"), 3, "k1") == found
    assert document(found) == entry["run"]
    config = reuse_project(tmp_path)
    assert scored("bm25", found, QUESTION_ROWS, config.shown).result == ran.result


def test_a_partial_decodes_to_the_run_type(tmp_path: Path) -> None:
    config, chunks, questions = project(tmp_path)
    partial = read_partial(write_shards(tmp_path, config, chunks, questions)[0])
    found = partial.runs["one"]
    assert isinstance(found, RetrieverRun)
    assert found.depth == config.depth and found.under == partial.configuration
    assert set(found.rankings) == set(found.latency_ms) == set(found.values) == set(partial.questions)
    assert found.notes == ("a note",) and found.diagnostics == {"ann_recall@5": 1.0}


@pytest.mark.parametrize("damage", [
    lambda entry: entry["run"]["questions"].popitem(),
    lambda entry: entry["run"]["questions"][next(iter(entry["run"]["questions"]))].update(latency_ms=-1),
    lambda entry: entry["run"]["questions"][next(iter(entry["run"]["questions"]))].update(ranking=["a"] * 4),
    lambda entry: entry["run"]["diagnostics"].update({"ann_recall@3": 7.5}),
    lambda entry: entry["run"].update(extra=1),
    lambda entry: entry.update(depth=0),
    lambda entry: entry.update(format=2),
])
def test_a_malformed_reuse_entry_is_a_miss(tmp_path: Path, damage: object) -> None:
    path, _ = kept(tmp_path)
    assert source(path) is not None
    entry = json.loads(path.read_text(encoding="utf-8"))
    damage(entry)  # type: ignore[operator]
    path.write_text(json.dumps(entry), encoding="utf-8")
    assert source(path) is None


def test_an_oversized_or_too_deep_reuse_entry_is_a_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, _ = kept(tmp_path)
    monkeypatch.setattr(codec, "MAX_BYTES", path.stat().st_size - 1)
    assert source(path) is None
    monkeypatch.undo()
    entry = json.loads(path.read_text(encoding="utf-8"))
    entry["run"]["notes"] = [json.loads("[" * 200 + "]" * 200)]
    path.write_text(json.dumps(entry), encoding="utf-8")
    assert source(path) is None


def test_an_oversized_or_malformed_partial_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config, chunks, questions = project(tmp_path)
    paths = write_shards(tmp_path, config, chunks, questions)
    monkeypatch.setattr(codec, "MAX_BYTES", 100)
    size = paths[0].stat().st_size
    assert error(paths, config, chunks, questions) == (
        f"{paths[0]}: holds {size:,} bytes, more than the 100 a run may; pass the files `pytest --rag-shard I/N "
        "--rag-json FILE` wrote, unchanged")
    monkeypatch.undo()
    doc = json.loads(paths[0].read_text(encoding="utf-8"))
    doc["retrievers"]["one"]["questions"]["q05"]["ranking"] = ["c1"] * (config.depth + 1)
    paths[0].write_text(json.dumps(doc), encoding="utf-8")
    assert error(paths, config, chunks, questions) == (
        f"{paths[0]}: retrievers.one.questions.q05.ranking[1] repeats 'c1'; pass the files `pytest --rag-shard I/N "
        "--rag-json FILE` wrote, unchanged")
    doc["retrievers"]["one"]["questions"]["q05"]["ranking"] = [f"c{i}" for i in range(config.depth + 1)]
    paths[0].write_text(json.dumps(doc), encoding="utf-8")
    assert f"retrievers.one.questions.q05.ranking holds {config.depth + 1} ids, more than the depth " \
        f"{config.depth}" in error(paths, config, chunks, questions)


def test_the_codec_names_the_json_path() -> None:
    with pytest.raises(ShapeProblem, match=r"^run\.questions\.q1 lacks the key 'latency_ms'$"):
        decode(Node({"questions": {"q1": {"ranking": []}}, "diagnostics": {}, "notes": []}, "run"), 3, "")
