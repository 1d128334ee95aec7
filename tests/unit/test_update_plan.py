"""Planning a baseline update without pytest: what is written, merged, kept, refused and why."""
from __future__ import annotations

from pathlib import Path

from stages import GOOD, baseline, config, fingerprint, ran

from pytest_ragretrieval.baseline.update import plan_update
from pytest_ragretrieval.errors import RetrieverError
from pytest_ragretrieval.scoring.evaluate import Run

ALL = {"ndcg@3", "recall@3"}


def test_a_failed_retriever_writes_nothing(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    plan = plan_update(cfg, None, fingerprint(cfg), {"one": Run(error=RetrieverError("x"))}, {"one": ALL})
    assert plan.document is None and plan.lines == ["rag: baseline not written: retriever 'one' failed; fix it and run again"]


def test_unselected_retrievers_keep_their_recorded_entries(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    recorded = baseline(cfg, {"one": ran(cfg, "one", GOOD), "two": ran(cfg, "two", GOOD)}, fingerprint(cfg))
    lost = {"q1": ["a", "x", "y"], "q2": ["c"], "q3": []}
    plan = plan_update(cfg, recorded, fingerprint(cfg), {"two": ran(cfg, "two", lost)}, {"two": ALL})
    assert plan.document is not None
    assert plan.document["retrievers"]["one"] == recorded.document["retrievers"]["one"]
    assert plan.document["retrievers"]["two"]["metrics"]["recall@3"] == 0.75
    assert "  two recall@3: 1.0000 -> 0.7500" in plan.lines


def test_a_global_change_needs_every_retriever(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    recorded = baseline(cfg, {"one": ran(cfg, "one", GOOD)}, fingerprint(cfg))
    plan = plan_update(cfg, recorded, fingerprint(cfg, k=4), {"one": ran(cfg, "one", GOOD)}, {"one": ALL})
    assert plan.document is None and "k changed, so every retriever must be re-recorded" in plan.lines[0]


def test_a_skipped_retriever_is_recorded_as_unavailable(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    runs = {"one": ran(cfg, "one", GOOD), "two": Run(skipped="no model"), "fused": ran(cfg, "fused", GOOD)}
    plan = plan_update(cfg, None, fingerprint(cfg), runs, {"one": ALL, "two": ALL, "fused": ALL})
    assert plan.document is not None and plan.document["unavailable"] == {"two": "no model"}
    assert set(plan.document["retrievers"]) == {"one", "fused"}
    assert "rag: two recorded as unavailable: no model" in plan.lines
