"""Week 3 (tests/unit/data/week3) under the configuration the README recommends for 40-100 questions:
`tolerance = 0.02` with `significance = "randomization"` (max-T; docs/verdicts.md, "Clusters and the three
outcomes, by eval-set size"). The retune that Holm let through fails: four hybrid metrics, each of which
fell by more than 0.02, regress under max-T, and the other two, not significant, are inconclusive (a drop
of the margin not ruled out), never non-inferior; the two retrievers that did not change pass, and so
does a week with no change at all."""
from __future__ import annotations

from pathlib import Path

from stages import baseline, fingerprint
from test_week3 import METRICS, NAMES, WEEK3, questions, runs

from pytest_ragretrieval.config.settings import Config, load_config
from pytest_ragretrieval.gate.items import ItemKey
from pytest_ragretrieval.gate.judge import Judge
from pytest_ragretrieval.record.types import Finding

FELL = {  # hybrid's means over the 45 questions, before and after the retune (the fixture's make.py)
    "precision@5": (0.3156, 0.2889, "-0.0267"), "recall@5": (0.7741, 0.7000, "-0.0741"),
    "f1@5": (0.4370, 0.3987, "-0.0384"), "ndcg@5": (0.5336, 0.4719, "-0.0617"),
    "hit_rate@5": (0.9111, 0.8444, "-0.0667"), "mrr@5": (0.5252, 0.4656, "-0.0596"),
}


def recommended(folder: Path, hybrid: str = "") -> Config:
    text = "\n".join([
        f'chunks = "{WEEK3 / "chunks.jsonl"}"', f'evalset = "{WEEK3 / "evalset.jsonl"}"', "k = 5",
        f"metrics = {METRICS}", "tolerance = 0.02", 'significance = "randomization"',
        "[retrievers.bm25]", 'type = "bm25"', "[retrievers.vector]", 'type = "vector"',
        "[retrievers.hybrid]", 'type = "hybrid"', 'sources = ["bm25", "vector"]', hybrid,
    ])
    (folder / "rag.toml").write_text(text + "\n", encoding="utf-8")
    return load_config(str(folder / "rag.toml"), folder)


def judged(folder: Path, when: str) -> Judge:
    before = recommended(folder)
    found = questions(before)
    recorded = baseline(before, runs(before, found, "before"), fingerprint(before, found))
    after = recommended(folder, "rrf_k = 5\nweights = [0.3, 1.0]") if when == "after" else before
    return Judge(after, found, recorded, fingerprint(after, found), runs(after, found, when))


def test_the_retune_fails_every_hybrid_metric_under_the_recommended_config(tmp_path: Path) -> None:
    judge = judged(tmp_path, "after")
    assert judge.config.significance == "randomization" and judge.config.adjustment == "maxt"
    for label, (then, now, delta) in FELL.items():
        outcome = judge.outcome(ItemKey("hybrid", "metric", label))
        assert outcome.finding == (Finding.INCONCLUSIVE if label in ("hit_rate@5", "mrr@5") else Finding.REGRESSION)
        assert outcome.summary.startswith(
            f"{label} of 'hybrid' fell from {then:.4f} to {now:.4f} ({delta}, tolerance 0.0200) after changes of "
            "hybrid.rrf_k; hybrid.weights")
    for name in NAMES[:2]:
        assert all(judge.outcome(ItemKey(name, "metric", spec.label)).passed for spec in judge.config.metrics)


def test_a_week_without_change_passes_under_the_recommended_config(tmp_path: Path) -> None:
    judge = judged(tmp_path, "before")
    assert all(judge.outcome(ItemKey(name, "metric", spec.label)).passed
               for name in NAMES for spec in judge.config.metrics)
