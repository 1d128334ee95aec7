"""The ANN diagnostics from per-query overlaps, and what seeding allows itself for a large corpus."""
from __future__ import annotations

from pytest_ragretrieval.database.seed import index_memory_mb, seed_timeout
from pytest_ragretrieval.database.settings import IndexSettings
from pytest_ragretrieval.retrievers.vector import ANN_DIAGNOSTICS, ann_recall, ann_recall_worst


def test_ann_recall_is_the_mean_and_its_worst_the_lowest_query() -> None:
    overlaps = [1.0, 0.8, 0.3, 0.9]  # three queries found most of their exact top 10, one 3 of 10
    assert ann_recall(overlaps) == (1.0 + 0.8 + 0.3 + 0.9) / 4 == 0.75
    assert ann_recall_worst(overlaps) == 0.3
    assert list(ANN_DIAGNOSTICS) == ["ann_recall", "ann_recall_worst"]


def test_seeding_timeout_grows_with_the_rows_and_more_for_an_index() -> None:
    assert seed_timeout(20_000, IndexSettings()) == "310s"  # 300 s + 20,000 x 0.5 ms
    assert seed_timeout(1_000_000, IndexSettings(kind="hnsw")) == "5300s"  # 300 s + 1,000,000 x 5 ms


def test_index_memory_holds_the_graph_between_the_default_and_the_cap() -> None:
    hnsw = IndexSettings(kind="hnsw")  # m = 16: 4·384 + 32·16 + 200 = 2,248 bytes a row
    assert index_memory_mb(1_000, 384, hnsw) == 64  # 2.1 MiB: never below PostgreSQL's default
    assert index_memory_mb(1_000_000, 384, hnsw) == 2144  # 2,248,000,000 bytes / 2^20 = 2143.9, rounded up
    assert index_memory_mb(10_000_000, 384, hnsw) == 4096  # capped
