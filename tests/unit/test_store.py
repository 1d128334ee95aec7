"""Each ranking computed once per session: the memo in front of every retriever, and honest latency."""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from pytest_ragretrieval.retrievers.hybrid import HybridRetriever
from pytest_ragretrieval.retrievers.protocol import Query
from pytest_ragretrieval.runner.store import Memo, Rankings


class Clock:
    """A perf_counter that moves only when a fake retriever says it worked."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def spend(self, ms: float) -> None:
        self.now += ms / 1000.0


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(time, "perf_counter", fake)  # as runner/latency.py calls it
    monkeypatch.setattr("pytest_ragretrieval.core.timing.time.perf_counter", fake)
    return fake


class Fake:
    """Ranks a fixed list, records each call, and takes `ms` per call on the fake clock."""

    def __init__(self, ranking: Sequence[str], clock: Clock | None = None, ms: float = 0.0) -> None:
        self.ranking = list(ranking)
        self.calls: list[tuple[str, int]] = []
        self.clock = clock
        self.ms = ms

    def __call__(self, query: str, k: int) -> list[str]:
        self.calls.append((query, k))
        if self.clock is not None:
            self.clock.spend(self.ms)
        return self.ranking[:k]


def test_a_query_runs_once_at_the_deepest_depth_and_shallower_asks_get_a_slice() -> None:
    fake = Fake([f"c{i}" for i in range(20)])
    memo = Memo("vector", fake, Rankings(), depth=10)
    assert memo("q", 5) == ("c0", "c1", "c2", "c3", "c4")
    assert memo("q", 10) == tuple(f"c{i}" for i in range(10))
    assert memo("q", 3) == ("c0", "c1", "c2")
    assert fake.calls == [("q", 10)]


def test_a_deeper_ask_than_stored_runs_again_and_is_kept() -> None:
    fake = Fake([f"c{i}" for i in range(20)])
    memo = Memo("vector", fake, Rankings(), depth=5)
    memo("q", 5)
    assert len(memo("q", 12)) == 12
    memo("q", 8)
    assert fake.calls == [("q", 5), ("q", 12)]


def test_a_ranking_shorter_than_asked_is_all_there_is() -> None:
    fake = Fake(["a", "b"])
    memo = Memo("bm25", fake, Rankings(), depth=10)
    memo("q", 10)
    assert memo("q", 50) == ("a", "b")
    assert fake.calls == [("q", 10)]


def test_what_is_not_a_ranking_is_passed_on_for_the_caller_to_reject() -> None:
    memo = Memo("broken", lambda query, k: "c1", Rankings(), depth=5)
    assert memo("q", 5) == "c1"
    assert memo.entries == {}


def test_hybrid_reads_its_sources_from_the_store_and_counts_their_latency(clock: Clock) -> None:
    store = Rankings()
    sources = Fake(["a", "b", "c"], clock, ms=10), Fake(["c", "d"], clock, ms=20)
    vector, bm25 = Memo("vector", sources[0], store, depth=10), Memo("bm25", sources[1], store, depth=10)
    question = Query("q1", "q")
    vector.ask(question, 5)  # the sources' own items ran first
    bm25.ask(question, 5)

    class Timed(HybridRetriever):
        def ask(self, query: Query, k: int) -> list[str]:
            clock.spend(1)
            return super().ask(query, k)

    hybrid = Memo("hybrid", Timed([vector, bm25], depth=10, rrf_k=60), store, depth=5)
    assert hybrid.ask(question, 5) == ("c", "a", "b", "d")  # b and d tie at 1/62: by id
    assert [fake.calls for fake in sources] == [[("q", 10)], [("q", 10)]]
    latencies = (vector.latency_ms(question), bm25.latency_ms(question), hybrid.latency_ms(question))
    assert latencies == pytest.approx((10, 20, 31))


def test_latency_is_the_same_when_sources_are_computed_inside_the_consumer(clock: Clock) -> None:
    store = Rankings()
    vector = Memo("vector", Fake(["a"], clock, ms=10), store, depth=10)

    def consumer(query: str, k: int) -> list[str]:
        clock.spend(2)
        return list(vector(query, 10))

    rerank = Memo("rerank", consumer, store, depth=5)
    rerank.ask(Query("q1", "q"), 5)
    assert rerank.latency_ms(Query("q1", "q")) == pytest.approx(12)
    assert store.phases.seconds == pytest.approx({"run rerank": 0.002, "run vector": 0.010})


class Batch(Fake):
    def __init__(self, ranking: Sequence[str]) -> None:
        super().__init__(ranking)
        self.batches: list[tuple[list[str], int]] = []

    def search_many(
        self, queries: Sequence[str], k: int, tick: Callable[[int], None]
    ) -> list[tuple[Sequence[str], float]]:
        self.batches.append((list(queries), k))
        tick(len(queries))
        return [(self.ranking[:k], 7.0) for _ in queries]


def test_prefetch_fills_sources_first_then_runs_one_batch_for_the_missing_queries() -> None:
    store = Rankings()
    source = Batch(["a", "b", "c"])
    vector = Memo("vector", source, store, depth=10)
    vector("known", 10)
    hybrid_calls: list[str] = []

    def consumer(query: str, k: int) -> list[str]:
        hybrid_calls.append(query)
        return list(vector(query, 10))

    hybrid = Memo("hybrid", consumer, store, depth=5, sources=lambda: [vector])
    ticks: list[int] = []
    asked = [Query("a", "known"), Query("b", "q1"), Query("c", "q2"), Query("d", "q1")]  # d asks what b asks
    hybrid.prefetch(asked, 5, ticks.append)
    assert source.batches == [(["q1", "q2"], 10)]
    assert source.calls == [("known", 10)]
    assert hybrid_calls == ["known", "q1", "q2"]
    assert sum(ticks) == 4
    assert vector.latency_ms(Query("b", "q1")) == 7.0


class ById(Fake):
    """A retriever that answers by question id (as a run file does): same text, different rankings."""

    def ask(self, query: Query, k: int) -> list[str]:
        self.calls.append((query.id, k))
        return {"q1": ["a"], "q2": ["b"]}[query.id][:k]


def test_questions_with_the_same_text_keep_their_own_rankings_where_ids_decide() -> None:
    store = Rankings()
    run = Memo("run", ById([]), store, depth=5)
    text = Memo("text", Fake(["t"]), store, depth=5)
    hybrid = Memo("hybrid", HybridRetriever([run, text], depth=5, rrf_k=60), store, depth=5)
    first, second = Query("q1", "same text"), Query("q2", "same text")
    hybrid.prefetch([first, second], 5)
    assert (hybrid.ask(first, 5), hybrid.ask(second, 5)) == (("a", "t"), ("b", "t"))
    assert run.retriever.calls == [("q1", 5), ("q2", 5)]  # type: ignore[attr-defined]
    assert text.retriever.calls == [("same text", 5)]  # type: ignore[attr-defined]


class Rerank:
    """A rerank over `source` with a cross-encoder whose load takes 500 ms on the fake clock: the real
    RerankRetriever, its scorer's load replaced, its scores through a real cache."""

    @staticmethod
    def build(source: Memo, cache_folder: str, clock: Clock) -> Any:
        from pytest_ragretrieval.cache.store import Cache
        from pytest_ragretrieval.retrievers.rerank import CrossEncoderScorer, RerankRetriever

        class Scorer(CrossEncoderScorer):
            def load(self) -> Any:
                if self._encoder is None:
                    clock.spend(500.0)
                    self._encoder = self
                return self._encoder

            def __call__(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
                self.load()
                return [float(len(text)) for _, text in pairs]

        scorer = Scorer("tiny", Path(cache_folder), 8)
        cache = Cache(Path(cache_folder)).namespace("rerank", "tiny", dtype="u1")
        texts = {"a": "a", "bb": "bb", "ccc": "ccc"}
        return RerankRetriever(source, texts, scorer, cache, 3, None)


def test_a_cross_encoder_loads_before_the_first_question_and_not_when_every_pair_is_cached(
    clock: Clock, tmp_path: Path,
) -> None:
    """The rerank's own memo preloads after its source's rankings are stored: the load is reported apart,
    and no question's latency holds it; a second session over the same cache loads nothing."""
    questions = [Query("q1", "first"), Query("q2", "second")]
    for warm in (False, True):
        store = Rankings()
        source = Memo("table", Fake(["a", "bb", "ccc"], clock, ms=1.0), store, depth=3)
        rerank = Rerank.build(source, str(tmp_path), clock)
        memo = Memo("rerank", rerank, store, depth=3, sources=partial(list, (source,)))
        memo.prefetch(questions, 3)
        assert memo.loads == ({} if warm else {"cross-encoder tiny": 500.0})
        assert rerank.scorer.loaded is not warm
        assert [memo.latency_ms(question) for question in questions] == pytest.approx([1.0, 1.0])
        assert memo.ask(questions[0], 3) == ("ccc", "bb", "a")
        rerank.cache.flush()  # as the runner does at the session's end


def test_a_retriever_without_preload_still_counts_its_load_in_its_first_question(clock: Clock) -> None:
    """A third party's type that loads on its first call, and implements no `preload`, works as before."""
    loaded: list[bool] = []

    def lazy(query: str, k: int) -> list[str]:
        if not loaded:
            clock.spend(400.0)
            loaded.append(True)
        clock.spend(1.0)
        return ["a"]

    memo = Memo("lazy", lazy, Rankings(), depth=3)
    memo.prefetch([Query("q1", "first"), Query("q2", "second")], 3)
    assert memo.loads == {}
    assert [memo.latency_ms(Query(qid, text)) for qid, text in (("q1", "first"), ("q2", "second"))] == pytest.approx([401.0, 1.0])
