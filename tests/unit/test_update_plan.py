"""Planning a baseline update without pytest: what is written, merged, kept, refused and why."""
from __future__ import annotations

import json
from pathlib import Path

from stages import GOOD, baseline, config, document, fingerprint, ran, retriever_entry

from pytest_ragretrieval.baseline.format import dumps, parse
from pytest_ragretrieval.baseline.update import plan_update
from pytest_ragretrieval.core.errors import RetrieverError
from pytest_ragretrieval.record.codec import encode, file_document
from pytest_ragretrieval.scoring.evaluate import Run
from pytest_ragretrieval.scoring.metrics import METRICS_VERSION

ALL = {"ndcg@3", "recall@3"}


def test_a_failed_retriever_writes_nothing(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    plan = plan_update(cfg, None, fingerprint(cfg), {"one": Run(error=RetrieverError("x"))}, {"one": ALL})
    assert plan.record is None and plan.lines == ["rag: baseline not written: retriever 'one' failed; fix it and run again"]


def test_unselected_retrievers_keep_their_recorded_entries(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    recorded = baseline(cfg, {"one": ran(cfg, "one", GOOD), "two": ran(cfg, "two", GOOD)}, fingerprint(cfg))
    lost = {"q1": ["a", "x", "y"], "q2": ["c"], "q3": []}
    plan = plan_update(cfg, recorded, fingerprint(cfg), {"two": ran(cfg, "two", lost)}, {"two": ALL})
    assert plan.record is not None and recorded.record is not None
    entries = file_document(plan.record)["retrievers"]
    assert isinstance(entries, dict) and entries["one"] == recorded.document["retrievers"]["one"]
    assert plan.record.retrievers["one"] == recorded.record.retrievers["one"]
    assert plan.record.retrievers["two"].metrics["recall@3"] == 0.75
    assert "  two recall@3: 1.0000 -> 0.7500" in plan.lines


def test_a_yardstick_change_needs_every_retriever_and_fails_the_update(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    recorded = baseline(cfg, {"one": ran(cfg, "one", GOOD)}, fingerprint(cfg))
    yardstick = {"k": 4, "metrics_version": METRICS_VERSION, "grading_version": 1}
    plan = plan_update(cfg, recorded, fingerprint(cfg, yardstick=yardstick), {"one": ran(cfg, "one", GOOD)},
                       {"one": ALL})
    assert plan.record is None and plan.failed
    assert plan.lines[0].startswith("rag: baseline not written: the yardstick (k 3 -> 4) changed, so every retriever "
                                    "must be re-recorded but 'two', 'fused' were not selected")


def test_a_shared_input_change_records_every_retriever_together(tmp_path: Path) -> None:
    """The chunks changed: the baseline's one corpus record must describe every entry, so -k cannot record
    one retriever alone; a refused value keeps the whole baseline as it was (and the update fails)."""
    cfg = config(tmp_path)
    names = ("one", "two", "fused")
    recorded = baseline(cfg, {name: ran(cfg, name, GOOD) for name in names}, fingerprint(cfg))
    now = fingerprint(cfg, chunks={"sha256": "c2" * 32, "count": 1, "digests": {"a": "1a1a1a1a1a1a"}})
    runs = {name: ran(cfg, name, GOOD) for name in names}
    every = dict.fromkeys(names, ALL)
    refused = plan_update(cfg, recorded, now, runs, every, refused=["two"])
    assert refused.record is None and refused.failed and refused.lines == [
        "rag: baseline not written: values of 'two' would lower the bar",
        f"rag: {cfg.baseline} is left as it was, byte for byte",
    ]
    alone = plan_update(cfg, recorded, now, runs, {"one": ALL})
    assert alone.record is None and alone.failed and "the chunks changed, so every retriever must be re-recorded" in alone.lines[0]
    written = plan_update(cfg, recorded, now, runs, every)
    assert written.record is not None and not written.failed
    assert written.record.fingerprint["chunks"] == now["chunks"]
    assert "rag: the chunks changed: every retriever re-recorded" in written.lines


def test_a_refusal_writes_nothing_of_any_retriever(tmp_path: Path) -> None:
    """A refused update writes nothing, whatever else it would record: re-run with -k to record the others."""
    cfg = config(tmp_path)
    recorded = baseline(cfg, {"one": ran(cfg, "one", GOOD), "two": ran(cfg, "two", GOOD)}, fingerprint(cfg))
    lost = {"q1": ["a", "x", "y"], "q2": ["c"], "q3": []}
    plan = plan_update(cfg, recorded, fingerprint(cfg), {"one": ran(cfg, "one", lost), "two": ran(cfg, "two", lost)},
                       {"one": ALL, "two": ALL}, refused=["one"])
    assert plan.record is None and plan.failed
    assert plan.lines[0] == "rag: baseline not written: values of 'one' would lower the bar"


def test_a_skipped_retriever_is_recorded_as_unavailable(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    runs = {"one": ran(cfg, "one", GOOD), "two": Run(skipped="no model"), "fused": ran(cfg, "fused", GOOD)}
    plan = plan_update(cfg, None, fingerprint(cfg), runs, {"one": ALL, "two": ALL, "fused": ALL})
    assert plan.record is not None and plan.record.unavailable == {"two": "no model"}
    assert set(plan.record.retrievers) == {"one", "fused"}
    assert "rag: two recorded as unavailable: no model" in plan.lines


def test_an_update_rewrites_a_kept_entry_in_the_current_format(tmp_path: Path) -> None:
    """The baseline is the record's projection: a kept entry is written as the types read it (an older file's
    `1` as `1.0`, a key they do not know left out), the fingerprint as it was (its integers stay integers)."""
    cfg = config(tmp_path)
    entries = {name: retriever_entry(result) for name in ("one", "two")
               if (result := ran(cfg, name, GOOD).result) is not None}
    entries["one"] = {**entries["one"], "metrics": {"ndcg@3": 1, "recall@3": 1}, "note": "hand-written"}
    old = parse(cfg.baseline, dumps(document(cfg.k, fingerprint(cfg), entries)))
    lost = {"q1": ["a", "x", "y"], "q2": ["c"], "q3": []}
    plan = plan_update(cfg, old, fingerprint(cfg), {"two": ran(cfg, "two", lost)}, {"two": ALL})
    assert plan.record is not None
    text = encode(plan.record)
    written = json.loads(text)
    kept = {key: value for key, value in entries["one"].items() if key != "note"}
    assert written["retrievers"]["one"] == kept and '"hand-written"' not in text
    assert [type(value) for value in written["retrievers"]["one"]["metrics"].values()] == [float, float]
    assert written["fingerprint"]["chunks"] == fingerprint(cfg)["chunks"] and type(written["fingerprint"]["chunks"]["count"]) is int
