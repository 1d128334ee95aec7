"""Tokenizing ahead: a process forked before the corpus is embedded tokenizes the corpus's misses
and the questions; what the run takes from it is what it would have tokenized itself, to the byte."""
from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import numpy as np
import pytest

from pytest_ragretrieval.cache.store import Cache, Namespace
from pytest_ragretrieval.config.settings import load_config
from pytest_ragretrieval.core.errors import RagError
from pytest_ragretrieval.core.progress import PlainOutput
from pytest_ragretrieval.core.timing import Phases
from pytest_ragretrieval.evalset.records import Chunk, Question
from pytest_ragretrieval.retrievers import corpus_tokens as module
from pytest_ragretrieval.retrievers.corpus_tokens import Ahead, cached_tokens, tokenize_ahead, tokenizer_id
from pytest_ragretrieval.retrievers.tokens import tokenizer
from pytest_ragretrieval.runner.resources import Resources
from pytest_ragretrieval.runner.runs import Runner
from pytest_ragretrieval.runner.workbench import Workbench

# Forking needs this thread alone: threads an earlier test in this worker left alive must not count
# (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("threads_of_this_test")

CORPUS = [f"{text}，第{i}条" for i, text in enumerate(
    ["一线城市住宿标准为每晚600元", "出差结束后提交报销单并附发票", "ORDER-2024 表示订单已超时关闭", "差旅费用 Travel"] * 3
)]
QUESTIONS = ["住宿标准是多少", "ORDER-2024 是什么意思", "一线城市住宿标准为每晚600元，第0条"]


def namespace(folder: Path) -> Namespace:
    return Cache(folder, "readwrite").namespace("tokens", tokenizer_id("jieba"), dtype="<i4")


def run(folder: Path, ahead: bool, cached: list[str]) -> tuple[object, object, list[bytes]]:
    """A run's corpus tokens, then its questions' (what bm25 asks for), and the packs it wrote;
    `cached`: texts a previous run tokenized already."""
    if cached:
        cached_tokens(cached, "jieba", namespace(folder), workers=1)
        for index in namespace(folder).folder.glob("jieba-dictionary-*.npz"):
            index.unlink()  # with it, the few texts left are cut here, not ahead (test_jieba_index.py)
    started = tokenize_ahead([*CORPUS, *QUESTIONS], "jieba", namespace(folder), workers=2) if ahead else None
    assert (started is not None) == ahead
    corpus = cached_tokens(CORPUS, "jieba", namespace(folder), workers=1, ahead=started)
    questions = cached_tokens(QUESTIONS, "jieba", namespace(folder), workers=1, ahead=started)
    packs = [path.read_bytes() for path in sorted(namespace(folder).folder.glob("*.pack"))]
    return (
        (corpus[0], [row.tolist() for row in corpus[1]]),
        (questions[0], [row.tolist() for row in questions[1]]),
        packs,
    )


@pytest.mark.parametrize("cached", [[], CORPUS[:5], QUESTIONS[:1]])
def test_tokens_taken_ahead_equal_those_tokenized_here_to_the_pack_bytes(tmp_path: Path, cached: list[str]) -> None:
    here = run(tmp_path / "here", ahead=False, cached=cached)
    ahead = run(tmp_path / "ahead", ahead=True, cached=cached)
    assert ahead == here
    if not cached:
        assert here[0] == tokens_of(CORPUS)


def tokens_of(texts: list[str]) -> tuple[list[str], list[list[int]]]:
    """jieba's tokens numbered in order of first use: what a cold run with nothing cached gives."""
    vocabulary: dict[str, int] = {}
    rows = [[vocabulary.setdefault(token, len(vocabulary)) for token in tokenizer("jieba")(text)] for text in texts]
    return list(vocabulary), rows


def test_nothing_starts_when_every_text_is_cached_or_one_process_is_asked_for(tmp_path: Path) -> None:
    cached_tokens([*CORPUS, *QUESTIONS], "jieba", namespace(tmp_path / "warm"), workers=1)
    assert tokenize_ahead(CORPUS, "jieba", namespace(tmp_path / "warm"), workers=2) is None
    assert tokenize_ahead(CORPUS, "jieba", namespace(tmp_path / "cold"), workers=1) is None


def test_nothing_starts_beside_another_thread(tmp_path: Path) -> None:
    """A fork beside a live thread could copy a lock that thread holds: no process is started then."""
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert tokenize_ahead(CORPUS, "jieba", namespace(tmp_path), workers=2) is None
    finally:
        stop.set()
        thread.join()


def test_texts_it_was_not_given_are_tokenized_here(tmp_path: Path) -> None:
    started = tokenize_ahead(CORPUS, "jieba", namespace(tmp_path), workers=2)
    assert started is not None
    other = ["报销需要哪些材料"]
    assert started.part(other) is None
    vocabulary, rows = cached_tokens(other, "jieba", namespace(tmp_path), workers=1, ahead=started)
    assert [vocabulary[i] for i in rows[0]] == tokenizer("jieba")(other[0])
    assert started.part(CORPUS[:2]) is not None  # the answer is still there for what it was given
    started.stop()


def test_a_process_that_died_means_tokenizing_here(tmp_path: Path) -> None:
    started = tokenize_ahead(CORPUS, "jieba", namespace(tmp_path), workers=2)
    assert started is not None
    os.kill(child_pid(started), signal.SIGKILL)
    assert started.part(CORPUS) is None
    vocabulary, rows = cached_tokens(CORPUS, "jieba", namespace(tmp_path), workers=1, ahead=started)
    assert [[vocabulary[i] for i in row] for row in rows] == [tokenizer("jieba")(text) for text in CORPUS]


def test_stop_kills_a_process_whose_answer_nobody_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(module, "_ahead", lambda name, texts, workers: sleep())
    started = tokenize_ahead(CORPUS, "jieba", namespace(tmp_path), workers=2)
    assert started is not None
    pid = child_pid(started)
    started.stop()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and reaped
    started.stop()  # twice is harmless


def sleep() -> bytes:
    threading.Event().wait(60)
    return b""


def child_pid(ahead: Ahead) -> int:
    child = ahead._child  # noqa: SLF001 - the test kills the real process
    assert child is not None
    return child.pid


def test_used_renumbers_into_the_words_a_subset_uses_in_order_of_first_use() -> None:
    words = ["a", "b", "c", "d"]
    found_words, rows = module._used(words, [np.array([3, 1, 3], dtype=np.int32), np.array([1, 2], dtype=np.int32)])
    assert found_words == ["d", "b", "c"]
    assert [row.tolist() for row in rows] == [[0, 1, 0], [1, 2]]


def bench(tmp_path: Path, planned: tuple[str, ...]) -> Workbench:
    (tmp_path / "rag.toml").write_text("\n".join([
        'chunks = "chunks.jsonl"', 'evalset = "evalset.jsonl"', 'embedding = "python:nowhere_embed:embed"', 'embedding_id = "nowhere@1"',
        'cache = ".rag-cache"', "workers = 2",
        "[retrievers.vector]", 'type = "vector"',
        "[retrievers.bm25]", 'type = "bm25"',
        "[retrievers.search]", 'type = "bm25"', 'tokenizer = "jieba-search"',
        "[retrievers.hybrid]", 'type = "hybrid"', 'sources = ["vector", "bm25"]',
    ]) + "\n", encoding="utf-8")
    config = load_config(str(tmp_path / "rag.toml"), tmp_path)
    chunks = tuple(Chunk(id=f"c{i}", doc="d", text=text) for i, text in enumerate(CORPUS))
    questions = tuple(Question(id=f"q{i}", query=text, relevance={"c0": 1}) for i, text in enumerate(QUESTIONS))
    made = Workbench(config, chunks, Resources(config, chunks, "embedded", None, "readwrite"), questions)
    made.planned = planned
    return made


@pytest.mark.parametrize(("planned", "started"), [
    (("vector",), []),
    (("hybrid",), ["jieba"]),  # through its sources
    (("vector", "search", "bm25"), ["jieba-search", "jieba"]),
    (("bm25", "hybrid"), ["jieba"]),
])
def test_the_planned_retrievers_and_their_sources_say_which_tokenizers_start(
    tmp_path: Path, planned: tuple[str, ...], started: list[str]
) -> None:
    made = bench(tmp_path, planned)
    try:
        made.tokenize_ahead()
        assert list(made._ahead) == started  # noqa: SLF001 - which processes run is the point
    finally:
        made.close()
    assert not made._ahead  # noqa: SLF001


def test_the_corpus_and_the_questions_come_from_the_process_started_ahead(tmp_path: Path) -> None:
    made = bench(tmp_path, ("bm25",))
    try:
        made.tokenize_ahead()
        ahead = made._ahead["jieba"]  # noqa: SLF001
        vocabulary, rows = made.corpus_tokens("jieba")
        assert ahead._child is None and ahead._answer is not None  # noqa: SLF001 - read, not tokenized here
        assert (vocabulary, [row.tolist() for row in rows]) == tokens_of([text for _, text in sorted((f"c{i}", text) for i, text in enumerate(CORPUS))])  # by chunk id
    finally:
        made.close()


def test_the_resources_call_the_hook_before_they_embed(tmp_path: Path) -> None:
    """The embedder cannot even be imported here: the hook ran first all the same."""
    made = bench(tmp_path, ("bm25",))
    calls: list[str] = []
    made.resources.before_embedding = lambda: calls.append("ahead")
    with pytest.raises(RagError):
        made.resources.database  # noqa: B018 - starting it embeds the corpus first
    assert calls == ["ahead"]


def test_closing_the_runner_without_finishing_kills_the_process(tmp_path: Path) -> None:
    """SIGINT and SIGTERM reach `close` without `finish`: a process tokenizing ahead must not outlive the gate."""
    made = bench(tmp_path, ())
    runner = Runner(made.config, made.chunks, made.questions, db_mode="embedded", dsn=None, cache_mode="readwrite",
                    phases=Phases(), out=PlainOutput())
    runner.plan(["bm25"])
    runner.bench.tokenize_ahead()
    pid = child_pid(runner.bench._ahead["jieba"])  # noqa: SLF001
    runner.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
