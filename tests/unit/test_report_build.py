"""The reports' view of the gate's record from explicit inputs: statuses, comparisons, rerankers, failures in
node-id order."""
from __future__ import annotations

from pathlib import Path

from stages import GOOD, QUESTIONS, WORSE, baseline, config, fingerprint, ran

from pytest_ragretrieval.core.errors import RetrieverError
from pytest_ragretrieval.gate.checks import Outcome
from pytest_ragretrieval.gate.items import ItemKey
from pytest_ragretrieval.gate.judge import Judge
from pytest_ragretrieval.gate.record import run_record
from pytest_ragretrieval.gate.report import described
from pytest_ragretrieval.record.codec import decode, encode
from pytest_ragretrieval.record.report import ReportInput
from pytest_ragretrieval.report.view import view
from pytest_ragretrieval.scoring.evaluate import Run


def build_report(judge: Judge, failures: dict[ItemKey, Outcome], embedder: str = "e", database: str = "d") -> ReportInput:
    record = run_record(judge.config, judge.fingerprint, judge.runs, judge, failures)
    return view(record, QUESTIONS, (), described(judge.config, judge.runs, embedder, database))


def test_views_carry_each_run_and_its_baseline(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    recorded = baseline(cfg, {"one": ran(cfg, "one", GOOD)}, fingerprint(cfg))
    runs = {"one": ran(cfg, "one", WORSE), "two": Run(skipped="no model"), "fused": Run(error=RetrieverError("boom"))}
    judge = Judge(cfg, QUESTIONS, recorded, fingerprint(cfg), runs)
    failures = {ItemKey("one", "metric", "recall@3"): Outcome(False, "b"), ItemKey("one", "metric", "ndcg@3"): Outcome(False, "a")}
    data = build_report(judge, failures, "embedder x", "database y")
    assert [(v.name, v.status, v.reason) for v in data.retrievers] == [
        ("one", "ran", ""), ("two", "unavailable", "no model"), ("fused", "error", "boom"),
    ]
    one = data.retrievers[0]
    assert one.comparisons["ndcg@3"].baseline == 1.0 and one.comparisons["ndcg@3"].value < 1.0
    assert one.baseline_rankings["q1"] == ("a", "b", "x") and one.rankings["q1"] == ("x", "b", "a")
    assert data.comparable and data.metrics == ("ndcg@3", "recall@3")
    assert data.definitions["ndcg@3"].startswith("DCG@k / ideal DCG@k")
    assert [f.nodeid for f in data.failures] == ["rag::one::ndcg@3", "rag::one::recall@3"]
    assert (data.embedder, data.database, data.rerankers) == ("embedder x", "database y", ())


def test_without_a_comparable_baseline_nothing_is_compared(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    runs = {"one": ran(cfg, "one", GOOD)}
    data = build_report(Judge(cfg, QUESTIONS, None, fingerprint(cfg), runs), {})
    assert not data.comparable and data.retrievers[0].comparisons == {} and data.retrievers[0].baseline_values == {}
    assert data.notes and data.notes[0].startswith("the eval set has 2 answerable questions")


def test_rerankers_come_from_the_types_details(tmp_path: Path) -> None:
    cfg = config(tmp_path, "[retrievers.reranked]", 'type = "rerank"', 'source = "fused"', 'model = "acme/ce"')
    data = build_report(Judge(cfg, QUESTIONS, None, fingerprint(cfg), {}), {})
    assert data.rerankers == ("acme/ce",)


def test_a_reranker_that_could_not_run_is_marked_unavailable_in_the_configuration(tmp_path: Path) -> None:
    cfg = config(tmp_path, "[retrievers.reranked]", 'type = "rerank"', 'source = "fused"', 'model = "acme/ce"')
    runs = {"reranked": Run(skipped="cross-encoder 'acme/ce' could not be loaded")}
    data = build_report(Judge(cfg, QUESTIONS, None, fingerprint(cfg), runs), {})
    assert data.rerankers == data.unavailable_rerankers == ("acme/ce",)
    assert [(v.name, v.status) for v in data.retrievers] == [("reranked", "unavailable")]


def test_a_results_file_is_the_same_view_as_the_live_run(tmp_path: Path) -> None:
    """One builder: the record `--rag-json` writes, read back, gives the reports what the live run gave
    them, but the eval set and the descriptions, which the file does not hold."""
    cfg = config(tmp_path, 'significance = "randomization"', 'compare = [["one", "two"]]')
    recorded = baseline(cfg, {"one": ran(cfg, "one", GOOD), "two": ran(cfg, "two", GOOD)}, fingerprint(cfg))
    runs = {"one": ran(cfg, "one", WORSE), "two": ran(cfg, "two", GOOD), "fused": Run(error=RetrieverError("boom"))}
    judge = Judge(cfg, QUESTIONS, recorded, fingerprint(cfg), runs)
    key = ItemKey("one", "metric", "ndcg@3")
    record = run_record(cfg, judge.fingerprint, runs, judge, {key: judge.outcome(key)})
    live = view(record)
    assert live.pairs and live.failures and live.since_comparable and live.retrievers[0].baseline_values
    assert view(decode(Path("r.json"), encode(record)).record) == live
