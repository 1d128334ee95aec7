"""Sharded runs, without pytest: which shard holds a question, the partial record written and read
back, and the merge that rebuilds the unsharded runs or refuses in one line."""
from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_ragretrieval.baseline.fingerprint import fingerprint
from pytest_ragretrieval.baseline.format import dumps
from pytest_ragretrieval.config.settings import Config, load_config
from pytest_ragretrieval.evalset.jsonl import load_chunks, load_evalset
from pytest_ragretrieval.evalset.records import Chunk, Question
from pytest_ragretrieval.gate.items import ItemKey, Skip
from pytest_ragretrieval.scoring.evaluate import Run, score
from pytest_ragretrieval.shards.assignment import Shard, parse_shard, shard_of
from pytest_ragretrieval.shards.items import shard_outcome
from pytest_ragretrieval.shards.merge import Merged, first_difference, merge
from pytest_ragretrieval.shards.partial import PartialError, partial_document, read_partial

CHUNKS = [f"c{i}" for i in range(8)]
QUESTION_IDS = [f"q{i:02d}" for i in range(12)]
DESCRIBED = {"embedder": "none", "database": "none"}


def test_a_question_belongs_to_the_shard_its_ids_digest_names() -> None:
    assert shard_of("q1", 3) == int(hashlib.sha256(b"q1").hexdigest(), 16) % 3 + 1
    assert [shard_of(qid, 3) for qid in QUESTION_IDS] == [int(hashlib.sha256(qid.encode()).hexdigest(), 16) % 3 + 1
                                                          for qid in QUESTION_IDS] == [3, 1, 2, 3, 3, 1, 1, 1, 1, 3, 1, 1]
    assert shard_of("问题", 1) == 1


@given(st.lists(st.text(min_size=1), unique=True, max_size=30), st.integers(1, 12))
def test_every_question_is_in_exactly_one_shard(ids: list[str], count: int) -> None:
    holders = [[index for index in range(1, count + 1) if Shard(index, count).holds(qid)] for qid in ids]
    assert all(len(found) == 1 for found in holders)


@pytest.mark.parametrize("text", ["0/3", "4/3", "3", "1/0", "a/b", "1/3/5", "-1/3", "1/1001", ""])
def test_a_bad_shard_is_one_line(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r"^expected I/N, shard I of N with 1 <= I <= N <= 1000 "):
        parse_shard(text)


def test_a_good_shard() -> None:
    assert parse_shard("2/4") == Shard(2, 4) and str(parse_shard(" 1/1 ")) == "1/1"


def project(tmp_path: Path, k: int = 3) -> tuple[Config, tuple[Chunk, ...], tuple[Question, ...]]:
    rows = [{"id": chunk, "text": f"文本 {chunk}"} for chunk in CHUNKS]
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    questions = [{"id": qid, "query": f"问题 {qid}", "relevant": sorted({CHUNKS[i % 8], CHUNKS[(i * 3 + 1) % 8]})}
                 for i, qid in enumerate(QUESTION_IDS)]
    questions.append({"id": "none", "query": "没有答案", "relevant": []})
    (tmp_path / "e.jsonl").write_text("".join(json.dumps(row) + "\n" for row in questions), encoding="utf-8")
    text = (f'chunks = "c.jsonl"\nevalset = "e.jsonl"\nk = {k}\nmetrics = ["ndcg", "recall", "mrr@5"]\n'
            '[retrievers.one]\ntype = "bm25"\n[retrievers.two]\ntype = "bm25"\nk1 = 1.2\n')
    (tmp_path / "rag.toml").write_text(text, encoding="utf-8")
    config = load_config(str(tmp_path / "rag.toml"), tmp_path)
    assert config.chunks is not None
    chunks = load_chunks(config.chunks)
    return config, chunks, load_evalset(config.evalset, chunks)


def rankings(name: str, questions: Sequence[Question]) -> dict[str, list[str]]:
    """Made-up rankings that differ by retriever and question; `none` gets an empty one from `one`."""
    step = 1 if name == "one" else 3
    return {q.id: [] if q.id == "none" and name == "one" else [CHUNKS[(number(q) * step + j) % 8] for j in range(5)]
            for q in questions}


def number(question: Question) -> int:
    return [*QUESTION_IDS, "none"].index(question.id)


def latencies(questions: Sequence[Question]) -> dict[str, float]:
    return {q.id: number(q) / 7 for q in questions}


def write_shards(tmp_path: Path, config: Config, chunks: tuple[Chunk, ...], questions: tuple[Question, ...], count: int = 3,
                 runs: Any = None, names: tuple[str, ...] = ("one", "two"), set_up: tuple[str, ...] | None = None,
                 ) -> list[Path]:
    """Partials of a run of the retrievers `names` (`set_up`: those the partials say were set up)."""
    setup: dict[str, dict[str, Any]] = {name: {} for name in (names if set_up is None else set_up)}
    found = fingerprint(config, chunks, questions, setup)
    selected = [f"rag::{name}::{spec.label}" for name in names for spec in config.metrics]
    paths = []
    for index in range(1, count + 1):
        shard = Shard(index, count)
        share = [q for q in questions if shard.holds(q.id)]
        ran = runs(shard, share) if runs is not None else {
            name: Run(result=score(name, share, rankings(name, share), config.shown, latencies(share)),
                      diagnostics={"ann_recall@5": 1.0}, notes=("a note",))
            for name in names}
        doc = partial_document(config, shard, found, setup, selected, [q.id for q in share], ran, DESCRIBED)
        path = tmp_path / f"part{index}.json"
        path.write_text(dumps(doc), encoding="utf-8")
        paths.append(path)
    return paths


def merged(paths: Sequence[Path], config: Config, chunks: tuple[Chunk, ...], questions: tuple[Question, ...]) -> Merged:
    return merge([read_partial(path) for path in paths], config, chunks, questions)


def test_the_merge_scores_all_questions_as_one_run(tmp_path: Path) -> None:
    config, chunks, questions = project(tmp_path)
    found = merged(write_shards(tmp_path, config, chunks, questions), config, chunks, questions)
    for name in ("one", "two"):
        whole = score(name, questions, rankings(name, questions), config.shown, latencies(questions))
        assert found.runs[name].result == whole
    assert found.runs["one"].result is not None and found.runs["one"].result.no_answer_empty == 1
    assert found.runs["one"].diagnostics == {f"ann_recall@5 shard {i}/3": 1.0 for i in (1, 2, 3)}
    assert found.runs["one"].notes == ("a note",)
    assert found.fingerprint == json.loads(json.dumps(fingerprint(config, chunks, questions, {"one": {}, "two": {}})))
    assert found.selected[0] == "rag::one::ndcg@3" and found.described == DESCRIBED


def test_shards_of_a_selection_merge_and_describe_what_ran(tmp_path: Path) -> None:
    """On 571473c every partial set up (and so described) every configured retriever: a run of `-k one`
    embedded a chunk for a vector retriever it never ran. Partials now describe what ran and its sources,
    and the merge asks exactly that of them."""
    config, chunks, questions = project(tmp_path)
    found = merged(write_shards(tmp_path, config, chunks, questions, names=("one",)), config, chunks, questions)
    assert set(found.runs) == {"one"} and set(found.fingerprint["retrievers"]) == {"one"}
    for set_up in ((), ("one", "two")):
        paths = write_shards(tmp_path, config, chunks, questions, names=("one",), set_up=set_up)
        with pytest.raises(PartialError, match=r"part1\.json: measured under another configuration .*\(setup differs\)"):
            merged(paths, config, chunks, questions)


def test_an_error_or_a_skip_on_a_shard_is_the_runs(tmp_path: Path) -> None:
    from pytest_ragretrieval.core.errors import RetrieverError

    config, chunks, questions = project(tmp_path)

    def runs(shard: Shard, share: list[Question]) -> dict[str, Run]:
        one = Run(error=RetrieverError("retriever 'one' raised boom")) if shard.index == 2 else Run(
            result=score("one", share, rankings("one", share), config.shown, latencies(share)))
        two = Run(skipped="no server here") if shard.index == 3 else Run(
            result=score("two", share, rankings("two", share), config.shown, latencies(share)))
        return {"one": one, "two": two}

    found = merged(write_shards(tmp_path, config, chunks, questions, runs=runs), config, chunks, questions)
    assert str(found.runs["one"].error) == "retriever 'one' raised boom"
    assert str(found.runs["two"].error) == ("retriever 'two' could not run on shard 3/3 (no server here) but ran on "
                                            "others; run every shard where it runs")


def error(paths: Sequence[Path], config: Config, chunks: tuple[Chunk, ...], questions: tuple[Question, ...]) -> str:
    with pytest.raises(PartialError) as caught:
        merged(paths, config, chunks, questions)
    assert "\n" not in str(caught.value)
    return str(caught.value)


def test_a_missing_or_repeated_shard_is_one_line(tmp_path: Path) -> None:
    config, chunks, questions = project(tmp_path)
    one, two, three = write_shards(tmp_path, config, chunks, questions)
    assert error([one, three], config, chunks, questions) == (
        "shard 2/3 missing: got 1/3, 3/3; pass all 3 partial records of the run")
    assert error([one, two, three, two], config, chunks, questions) == (
        f"{two} and {two} are both shard 2/3; pass each shard once")


def test_a_foreign_shard_is_one_line(tmp_path: Path) -> None:
    config, chunks, questions = project(tmp_path)
    one, two, _ = write_shards(tmp_path, config, chunks, questions)
    (tmp_path / "other").mkdir()
    other_config, other_chunks, other_questions = project(tmp_path / "other", k=4)
    foreign = write_shards(tmp_path / "other", other_config, other_chunks, other_questions)[2]
    assert error([one, two, foreign], config, chunks, questions) == (
        f"{foreign}: another configuration than {one}'s (fingerprint.yardstick.k differs): merge the shards of one "
        "run, all run from one commit with the same options")
    assert error(write_shards(tmp_path / "other", other_config, other_chunks, other_questions), config, chunks,
                 questions).endswith("(k differs); merge in the checkout the shards ran in")
    four = write_shards(tmp_path / "other", config, chunks, questions, count=4)
    assert error([one, two, four[2]], config, chunks, questions) == (
        f"{four[2]}: shard 3/4 of a run in 4 shards, {one} is shard 1/3; merge the shards of one run")


def test_questions_that_are_not_the_shards_share_are_one_line(tmp_path: Path) -> None:
    config, chunks, questions = project(tmp_path)
    paths = write_shards(tmp_path, config, chunks, questions)
    fewer = tuple(q for q in questions if q.id != "q05")  # q05 is in shard 1/3
    assert error(paths, config, chunks, fewer).startswith(f"{paths[0]}: question 'q05' is not in ")
    more = (*questions, Question("q99", "新问题", {"c1": 1}))
    assert error(paths, config, chunks, more) == (
        f"{paths[shard_of('q99', 3) - 1]}: shard {shard_of('q99', 3)}/3 lacks question 'q99' of {config.evalset}; "
        "merge the shards in the checkout they ran in")


@pytest.mark.parametrize(("edit", "message"), [
    (lambda doc: doc.update(k="3"), "k must be a whole number from 1 to 1000000, got the string \"3\""),
    (lambda doc: doc.pop("setup"), "the document lacks the key 'setup'"),
    (lambda doc: doc["shard"].update(index=4), "shard.index must be a whole number from 1 to 3, got 4"),
    (lambda doc: doc["fingerprint"].update(tokenizer="whitespace"),
     "configuration does not match the file's fingerprint, metrics, depth and items: the file was edited"),
    (lambda doc: doc["retrievers"]["one"]["questions"]["q05"].update(ranking=["c1", "c1"]),
     "retrievers.one.questions.q05.ranking[1] repeats 'c1'"),
    (lambda doc: doc["retrievers"]["one"]["questions"]["q05"]["metrics"].update({"ndcg@3": 0.123}),
     "retrievers.one.questions.q05.metrics disagree with its ranking scored again; the file was edited or another "
     "metric version wrote it"),
])
def test_a_damaged_partial_is_one_line_naming_the_json_path(tmp_path: Path, edit: Any, message: str) -> None:
    config, chunks, questions = project(tmp_path)
    paths = write_shards(tmp_path, config, chunks, questions)
    doc = json.loads(paths[0].read_text(encoding="utf-8"))
    edit(doc)
    paths[0].write_text(json.dumps(doc), encoding="utf-8")
    assert message in error(paths, config, chunks, questions)
    assert error(paths, config, chunks, questions).startswith(f"{paths[0]}: ")


@pytest.mark.parametrize(("edit", "message"), [
    (lambda doc: doc["retrievers"]["one"]["questions"]["q05"].update(latency_ms=-1),
     "retrievers.one.questions.q05.latency_ms must be a number of at least 0, got -1.0"),
    (lambda doc: doc["retrievers"]["one"]["diagnostics"].update({"ann_recall@5": 7.5}),
     "retrievers.one.diagnostics.ann_recall@5 must be a number from 0 to 1, got 7.5"),
    (lambda doc: doc["retrievers"]["two"]["diagnostics"].update({"pool_recall@50": -0.5}),
     "retrievers.two.diagnostics.pool_recall@50 must be a number from 0 to 1, got -0.5"),
])
def test_a_value_out_of_its_range_in_a_partial_is_refused(tmp_path: Path, edit: Any, message: str) -> None:
    """issue 40, item 11: the configuration's digest does not cover the measurements, and `merge` kept a
    latency of -1 ms (which passes any `max_latency_ms`) and an ANN recall of 7.5."""
    config, chunks, questions = project(tmp_path)
    paths = write_shards(tmp_path, config, chunks, questions)
    doc = json.loads(paths[0].read_text(encoding="utf-8"))
    edit(doc)
    paths[0].write_text(json.dumps(doc), encoding="utf-8")
    assert error(paths, config, chunks, questions) == f"{paths[0]}: {message}; pass the files `pytest --rag-shard " \
        "I/N --rag-json FILE` wrote, unchanged"


def test_a_measured_retriever_unavailable_on_every_shard_fails(tmp_path: Path) -> None:
    """issue 40, item 11: every partial claiming `unavailable.one` made `merge` skip it and exit 0; a
    retriever the baseline measured is a failure when no shard ran it, a skip only when none ever did."""
    config, chunks, questions = project(tmp_path)

    def runs(shard: Shard, share: list[Question]) -> dict[str, Run]:
        return {"one": Run(skipped="claimed"),
                "two": Run(result=score("two", share, rankings("two", share), config.shown, latencies(share)))}

    paths = write_shards(tmp_path, config, chunks, questions, runs=runs)
    found = merge([read_partial(path) for path in paths], config, chunks, questions, {"one", "two"})
    assert found.runs["one"].skipped is None and str(found.runs["one"].error) == (
        "retriever 'one' could not run on any of the 3 shards (claimed), but the baseline holds its values: a merge "
        "does not skip a retriever the baseline measured; run the shards where it runs")
    assert merged(paths, config, chunks, questions).runs["one"].skipped == "claimed"


def test_first_difference() -> None:
    assert first_difference({"a": [1, {"b": 2}]}, {"a": [1, {"b": 3}]}, "x") == "x.a[1].b"
    assert first_difference({"a": [1]}, {"a": [1, 2]}, "x") == "x.a"
    assert first_difference({"a": 1}, {"a": 1}, "x") is None


def test_a_shards_items_say_what_was_measured_and_pass(tmp_path: Path) -> None:
    config, _, questions = project(tmp_path)
    shard = Shard(1, 3)
    share = [q for q in questions if shard.holds(q.id)]
    run = Run(result=score("one", share, rankings("one", share), config.shown, latencies(share)))
    assert run.result is not None
    found = shard_outcome(ItemKey("one", "metric", "ndcg@3"), run, shard)
    assert found.passed and found.summary == (
        f"ndcg@3 of 'one': {run.result.metrics['ndcg@3']:.4f} on shard 1/3, {len(share)} of the questions; "
        "judged by `ragretrieval merge` over all shards")
    with pytest.raises(Skip, match="^question q00 is in shard 3/3, not 1/3$"):
        shard_outcome(ItemKey("one", "question", "q00"), run, shard)
    assert shard_outcome(ItemKey("one", "question", "q05"), run, shard).passed
    from pytest_ragretrieval.core.errors import RetrieverError

    failed = shard_outcome(ItemKey("one", "metric", "ndcg@3"), Run(error=RetrieverError("boom")), shard)
    assert not failed.passed and failed.summary == "boom"
