"""Clusters (issue 50 item 2): questions that move together are flipped and resampled together.

The exact tests are enumerated here apart from the code under test: every sign pattern of the clusters,
each question taking its cluster's sign, the sums taken over the questions."""
from __future__ import annotations

import importlib.util
import math
import sys
from itertools import product
from pathlib import Path
from types import ModuleType

import numpy as np
from stages import document, fingerprint, retriever_entry

from pytest_ragretrieval.bar.clusters import Clustering, judged_under, unreachable
from pytest_ragretrieval.baseline.exams import KeptExam
from pytest_ragretrieval.baseline.format import Baseline, dumps, parse
from pytest_ragretrieval.config.settings import Config, load_config
from pytest_ragretrieval.evalset.records import Question, Span
from pytest_ragretrieval.gate.items import ItemKey
from pytest_ragretrieval.gate.judge import Judge
from pytest_ragretrieval.gate.report import header_lines
from pytest_ragretrieval.scoring.evaluate import QuestionResult, RetrieverResult, Run
from pytest_ragretrieval.scoring.stats import (
    RESAMPLES,
    bootstrap_p,
    labels,
    maxt,
    paired_test,
    randomization_p,
)

LABELS = ("ndcg@3", "recall@3")
KEYS = [ItemKey("one", "metric", label) for label in LABELS]


def patterns(clusters: list[int]) -> np.ndarray:
    """Every sign pattern of the clusters, spread to the questions: one row per pattern."""
    count = max(clusters) + 1
    return np.array([[signs[c] for c in clusters] for signs in product([1, -1], repeat=count)], dtype=float)


def cluster_p(data: np.ndarray, clusters: list[int]) -> float:
    """The exact one-sided p of flipping whole clusters: the share of patterns whose sum is at most the observed."""
    sums = patterns(clusters) @ data
    return float(np.mean(sums <= data.sum() + 1e-9))


def step_down(items: list[np.ndarray], clusters: list[int]) -> list[float]:
    """The exact step-down minP (Westfall-Young) over cluster sign patterns, applied to every item at once."""
    flips = patterns(clusters)
    sums = np.column_stack([flips @ item for item in items])
    p = np.column_stack([[np.mean(sums[:, j] <= s + 1e-9) for s in sums[:, j]] for j in range(len(items))])
    own = [float(np.mean(sums[:, j] <= item.sum() + 1e-9)) for j, item in enumerate(items)]
    order = sorted(range(len(items)), key=lambda j: own[j])
    adjusted = [0.0] * len(items)
    running = 0.0
    for position, j in enumerate(order):
        running = max(running, float(np.mean(p[:, order[position:]].min(axis=1) <= own[j])))
        adjusted[j] = running
    return adjusted


CLUSTERS = [0, 0, 0, 1, 1, 2, 2, 2, 2, 3, 4, 4, 5, 5, 5, 6, 7, 7]
"""18 questions in 8 clusters of uneven size."""
DROP = np.array([-2, -1, 0, -3, 1, -1, -1, 0, -2, 1, -2, -2, 0, 1, -1, -3, 2, -2], dtype=float) / 8
OTHER = np.array([-1, 0, 0, -1, 0, 0, -1, 1, -1, 0, -1, 0, 0, 0, -1, -2, 1, -1], dtype=float) / 8


def test_the_sign_flip_test_flips_whole_clusters_exactly() -> None:
    clusters = labels([f"c{c}" for c in CLUSTERS])
    assert clusters is not None and clusters.tolist() == CLUSTERS
    found = randomization_p(DROP, clusters=clusters)
    assert found == cluster_p(DROP, CLUSTERS)
    assert found > randomization_p(DROP)  # per question smaller: the clusters are the units that vary
    two = randomization_p(DROP, "two-sided", clusters=clusters)
    assert math.isclose(two, min(1.0, 2 * min(found, cluster_p(-DROP, CLUSTERS))))
    # eight clusters allow no p below 2^-8, however large the drop
    assert randomization_p(-np.ones(18), clusters=clusters) == 2 ** -8


def test_past_the_enumeration_whole_clusters_are_flipped_at_random() -> None:
    """With the enumeration capped at 2^3, the 8 clusters are flipped at random: within 3 standard errors."""
    clusters = labels([f"c{c}" for c in CLUSTERS])
    exact = cluster_p(DROP, CLUSTERS)
    drawn = randomization_p(DROP, limit=2 ** 3, clusters=clusters)
    assert abs(drawn - exact) < 3 * math.sqrt(exact * (1 - exact) / RESAMPLES)


def test_every_question_its_own_cluster_is_the_test_without_clusters() -> None:
    """No cluster shared: `labels` gives None, and every test runs as it always did (the same p and interval)."""
    assert labels([f"q{i}" for i in range(18)]) is None
    before, after = [0.5] * 18, (0.5 + DROP).tolist()
    alone = paired_test(before, after, "randomization", clusters=labels([f"q{i}" for i in range(18)]))
    assert alone == paired_test(before, after, "randomization")


def test_the_bootstrap_draws_whole_clusters() -> None:
    """Clusters of equal size whose questions move alike: drawing clusters is drawing their means."""
    means = np.array([-0.3, -0.1, 0.05, -0.2, -0.15, 0.1])
    data = np.repeat(means, 3)
    clusters = labels([f"c{i // 3}" for i in range(18)])
    assert math.isclose(bootstrap_p(data, clusters=clusters), bootstrap_p(means), abs_tol=1e-9)
    assert bootstrap_p(data, clusters=clusters) > bootstrap_p(data)
    test = paired_test([0.5] * 18, (0.5 + data).tolist(), "bootstrap", clusters=clusters)
    means_test = paired_test([0.5] * 6, (0.5 + means).tolist(), "bootstrap")
    assert test is not None and means_test is not None and test.ci95 == means_test.ci95


def test_max_t_flips_whole_clusters_for_every_item_at_once() -> None:
    clusters = labels([f"c{c}" for c in CLUSTERS])
    found = maxt([DROP, OTHER, DROP / 2], "randomization", clusters=clusters)
    expected = step_down([DROP, OTHER, DROP / 2], CLUSTERS)
    assert found == [round(p, 6) for p in expected]
    assert found[0] == randomization_p(DROP, clusters=clusters)  # DROP / 2 ties with it: one p, not two
    # an item whose clusters' sums are all 0 leaves the family, as an item that never moved
    balanced = np.array([1, -1] + [0] * 16, dtype=float)
    assert maxt([balanced, DROP], "randomization", clusters=clusters)[0] is None
    # the bootstrap draws clusters for the family as for one item: one member, or two the same up to scale,
    # keep the single-item test's p
    single = round(bootstrap_p(OTHER, clusters=clusters), 6)
    assert maxt([OTHER], "bootstrap", clusters=clusters) == [single]
    assert maxt([OTHER, 2 * OTHER], "bootstrap", clusters=clusters) == [single, single]
    assert single != round(bootstrap_p(OTHER), 6)


def test_a_question_s_cluster_is_named_else_its_gold_s_document_else_its_own() -> None:
    spans = (Span("b.md", 0, 5, 1), Span("a.md", 9, 20, 1), Span("c.md", 0, 3, 2))
    questions = [Question("q1", "x", {}, spans=spans), Question("q2", "y", {}, spans=spans[:2]),
                 Question("q3", "z", {}, spans=spans, cluster="template-1"), Question("q4", "w", {"a": 1})]
    clustering = Clustering.of(questions, "today's exam")
    assert [clustering.key(q.id) for q in questions] == [
        "document\x00c.md", "document\x00a.md", "cluster\x00template-1", "question\x00q4"]
    assert clustering.described(["q1", "q2", "q3", "q4"]) == (
        "4 clusters (questions 1 named by `cluster`, 2 by the document holding their gold, 1 alone)")
    assert not clustering.clustered(["q1", "q2", "q3", "q4"])
    renamed = Clustering.of([Question("q1", "x", {}, cluster="one"), Question("q2", "y", {}, cluster="one")], "b")
    merged = Clustering.of([Question("q1", "x", {}, cluster="z"), Question("q2", "y", {}, cluster="z")], "a")
    assert renamed.same(merged, ["q1", "q2"]) and not renamed.same(clustering, ["q1", "q2"])


def config(tmp_path: Path, *lines: str) -> Config:
    text = "\n".join(['chunks = "c.jsonl"', 'evalset = "e.jsonl"', "k = 3", 'metrics = ["ndcg", "recall"]',
                      'significance = "randomization"', "tolerance = 0.02", *lines, "[retrievers.one]", 'type = "bm25"'])
    (tmp_path / "rag.toml").write_text(text + "\n", encoding="utf-8")
    return load_config(str(tmp_path / "rag.toml"), tmp_path)


def result(values: dict[str, list[float]], ids: list[str]) -> RetrieverResult:
    means = {label: round(math.fsum(found) / len(found), 6) for label, found in values.items()}
    rows = tuple(QuestionResult(qid, ("a",), {label: values[label][i] for label in values}) for i, qid in enumerate(ids))
    return RetrieverResult("one", means, {}, rows, 0, 0)


def asked(clusters: list[str]) -> tuple[Question, ...]:
    return tuple(Question(f"q{i:02d}", f"query {i}", {"a": 1}, cluster=name) for i, name in enumerate(clusters))


def recorded(cfg: Config, base: tuple[Question, ...], values: dict[str, list[float]]) -> Baseline:
    """A baseline recorded under `base` (its clusters kept in its exam), `values` its bar."""
    ids = [q.id for q in base]
    entry = retriever_entry(result(values, ids), {label: dict(zip(ids, found, strict=True))
                                                  for label, found in values.items()})
    return parse(cfg.baseline, dumps(document(cfg.k, fingerprint(cfg, base), {"one": entry})))


def verdicts(cfg: Config, base: tuple[Question, ...], today: tuple[Question, ...], bar: dict[str, list[float]],
             now: dict[str, list[float]], revision: tuple[Question, ...] | None = None
             ) -> dict[str, tuple[bool, float | None, str]]:
    """Per metric: passed, p, the verdict's line, judged against a baseline recorded under `base`'s clusters;
    in a pull request's CI (`revision`), the base's exam read from the base revision's baseline, as
    `glue/trust.py` hands it over."""
    ids = [q.id for q in today]
    kept = None if revision is None else KeptExam(fingerprint(cfg, revision), "the base revision's exam")
    judge = Judge(cfg, today, recorded(cfg, base, bar), fingerprint(cfg, today),
                  {"one": Run(result=result(now, ids))}, selected=KEYS, kept=kept)
    found = {}
    for key in KEYS:
        comparison = judge.comparison("one", key.name)
        outcome = judge.outcome(key)
        found[key.name] = (outcome.passed, None if comparison is None else comparison.p_value, outcome.summary)
    return found


EIGHT = [f"doc{i // 4}" for i in range(32)]
"""32 questions, 4 from each of 8 documents."""


def values(drops: dict[int, float], base: float = 0.75) -> list[float]:
    """A metric's per-question values: `base`, less `drops[i]` on question i."""
    return [base - drops.get(i, 0.0) for i in range(32)]


def test_merging_every_cluster_into_one_fails_the_same_items(tmp_path: Path) -> None:
    """A pull request that names one cluster for every question: its own clustering can reach no p, so it
    judges by the tolerance alone, and the base's clusters judge as before: ndcg, which fell in 7 of the 8
    documents (p 2^-7), fails as without the edit; recall, within the tolerance, passes as before."""
    cfg = config(tmp_path)
    bar = {"ndcg@3": values({}), "recall@3": values({})}
    now = {"ndcg@3": values(dict.fromkeys(range(28), 0.25)), "recall@3": values({0: 0.25, 9: -0.25, 30: 0.25})}
    kept = verdicts(cfg, asked(EIGHT), asked(EIGHT), bar, now)
    merged = verdicts(cfg, asked(EIGHT), asked(["all"] * 32), bar, now)
    assert {label: found[0] for label, found in kept.items()} == {"ndcg@3": False, "recall@3": True}
    assert {label: found[0] for label, found in merged.items()} == {"ndcg@3": False, "recall@3": True}
    assert kept["ndcg@3"][1] == round(2 ** -7, 6)
    assert "judged by the tolerance alone" in merged["ndcg@3"][2]
    assert "its 1 cluster (today's exam) allows no p below 2^-1 = 0.5000" in merged["ndcg@3"][2]


def test_an_edit_of_the_clusters_cannot_pass_what_the_base_s_clusters_fail(tmp_path: Path) -> None:
    """ndcg fell by 0.25 in each of 5 of the 8 base documents (one question -0.5, another +0.25), p 2^-5 =
    0.031: it fails. A pull request naming every question its own cluster (p 0.22 question by question)
    still fails under the base's; approved (the baseline recorded under the new clusters), the same values
    pass; in CI the base revision's clusters judge, whatever the pull request's baseline file keeps."""
    cfg = config(tmp_path)
    bar = {"ndcg@3": values({}), "recall@3": values({})}
    now = {"ndcg@3": values({**{4 * d: 0.5 for d in range(5)}, **{4 * d + 1: -0.25 for d in range(5)}}),
           "recall@3": values({})}
    alone = [f"question-{i}" for i in range(32)]
    assert verdicts(cfg, asked(EIGHT), asked(EIGHT), bar, now)["ndcg@3"][:2] == (False, 2 ** -5)
    edited = verdicts(cfg, asked(EIGHT), asked(alone), bar, now)["ndcg@3"]
    assert edited[:2] == (False, 2 ** -5)
    approved = verdicts(cfg, asked(alone), asked(alone), bar, now)["ndcg@3"]
    assert approved[:2] == (True, 0.216797)
    rerecorded = verdicts(cfg, asked(alone), asked(alone), bar, now, revision=asked(EIGHT))["ndcg@3"]
    assert rerecorded[:2] == (False, 2 ** -5)


def test_four_documents_judge_by_the_tolerance_alone_and_the_header_says_so(tmp_path: Path) -> None:
    """12 questions whose gold lies in 4 documents: no p can fall below 2^-4 = 0.0625, so the header says
    no item can reach alpha and a drop beyond the tolerance fails, where per question (p 1/2) it passed."""
    cfg = config(tmp_path)
    questions = tuple(Question(f"q{i:02d}", f"query {i}", {"a": 1}, spans=(Span(f"d{i % 4}.md", 0, 9, 1),))
                      for i in range(12))
    lines = header_lines(cfg, (), questions, None, False)
    assert ("rag: clusters: the 12 answerable questions fall in 4 clusters (the documents holding their gold); "
            "tests flip and resample whole clusters, so no p falls below 2^-4 = 0.0625, not below alpha 0.05: no "
            'item can reach it, so a drop beyond the tolerance fails by the tolerance alone (as significance = "none")'
            ) in lines
    bar = {"ndcg@3": [0.75] * 12, "recall@3": [0.75] * 12}
    now = {"ndcg@3": [0.0] + [0.75] * 11, "recall@3": [0.75] * 12}
    ndcg = verdicts(cfg, questions, questions, bar, now)["ndcg@3"]
    assert ndcg[0] is False and ndcg[1] is None
    assert ("its 4 clusters (today's exam) allow no p below 2^-4 = 0.0625, not below alpha 0.05: judged by the "
            "tolerance alone") in ndcg[2]
    alone = tuple(Question(q.id, q.query, {"a": 1}) for q in questions)
    assert verdicts(cfg, alone, alone, bar, now)["ndcg@3"][:2] == (True, 0.5)
    assert not [line for line in header_lines(cfg, (), alone, None, False) if line.startswith("rag: clusters")]


def test_a_drop_in_few_of_many_clusters_is_tested_as_a_drop_in_few_questions_is(tmp_path: Path) -> None:
    """The floor counts the clusters an item was compared on, not those it moved in: ndcg fell in 3 of 8
    documents, p 1/8, and passes as not significant, as a drop on 3 questions does question by question."""
    cfg = config(tmp_path)
    bar = {"ndcg@3": values({}), "recall@3": values({})}
    now = {"ndcg@3": values({0: 0.5, 4: 0.5, 8: 0.5}), "recall@3": values({})}
    found = verdicts(cfg, asked(EIGHT), asked(EIGHT), bar, now)["ndcg@3"]
    assert found[:2] == (True, 0.125) and "not significant" in found[2]


def test_without_clusters_the_judge_s_p_values_are_unchanged(tmp_path: Path) -> None:
    """Questions without `cluster` or gold spans: one clustering, every question its own, the p the paired
    test gives without clusters."""
    cfg = config(tmp_path)
    plain = tuple(Question(f"q{i:02d}", f"query {i}", {"a": 1}) for i in range(32))
    bar = {"ndcg@3": values({}), "recall@3": values({})}
    now = {"ndcg@3": values(dict.fromkeys(range(0, 32, 3), 0.25)), "recall@3": values({1: 0.5, 2: -0.25})}
    found = verdicts(cfg, plain, plain, bar, now)
    for label in LABELS:
        test, p = paired_test(bar[label], now[label], "randomization"), found[label][1]
        assert test is not None and p is not None
        assert p >= test.p_value  # adjusted over the family of two, never below its own
    ndcg = paired_test(bar["ndcg@3"], now["ndcg@3"], "randomization")
    assert ndcg is not None and found["ndcg@3"][1] == ndcg.p_value
    assert judged_under(plain, {q.id: q for q in plain})[0].clustered([q.id for q in plain]) is False
    assert unreachable(Clustering.of(plain, "today's exam"), [q.id for q in plain[:3]], 0.05) == ""


def _null_study() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "clusters_null.py"
    spec = importlib.util.spec_from_file_location("clusters_null_benchmark", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_null_study_s_questions_move_by_document_and_clusters_hold_alpha() -> None:
    """benchmarks/clusters_null.py, reduced: an untouched document's questions never move, and over 60
    harmless pull requests the gate with clusters fails within 2 standard errors of alpha, and less often
    than without them (the published study runs 1,000: docs/verdicts.md)."""
    study = _null_study()
    items = study.pull_request(np.random.default_rng(3), 12, 10, 0.5)
    moved = {index // 10 for item in items for index in np.flatnonzero(item)}
    assert 0 < len(moved) < 12
    found = study.simulate(60, 12, 10, 0.8, 0)
    assert found.items_on <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / 180)
    assert found.family_on <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / 60)
    assert found.items_off > found.items_on and found.family_off > found.family_on
    gate, exact = study.power(200, 8, 10, 0.8, 0.15, 0)
    assert gate == exact > 0  # a planted drop: the gate's cluster test is the exact enumeration written there


def test_a_base_that_keeps_no_labels_judges_question_by_question_too(tmp_path: Path) -> None:
    """Issue 48, item 5 (tests/plugin/test_differential.py, cases 202 and 453): a format-3 base keeps no
    labels, so no clusters; it was recorded question by question. ndcg fell on 5 questions in 4 of 12
    documents: by today's documents p is 2^-4 = 0.0625 and it passed, so a label edit taking a sixth dropped
    question out of the comparison hid a failure. Judged under the base's clustering too (each question its
    own, p 2^-5) it fails, as it did before clusters."""
    cfg = config(tmp_path)
    today = tuple(Question(f"q{i:02d}", f"query {i}", {"a": 1}, spans=(Span(f"d{i // 2}.md", 0, 9, 1),))
                  for i in range(24))
    bar = {"ndcg@3": [0.75] * 24, "recall@3": [0.75] * 24}
    now = {"ndcg@3": [0.0 if i in (0, 2, 4, 6, 7) else 0.75 for i in range(24)], "recall@3": [0.75] * 24}
    ids = [q.id for q in today]
    fp = fingerprint(cfg, today)
    fp["questions"] = {key: fp["questions"][key] for key in ("count", "digests", "sha256")}
    entry = retriever_entry(result(bar, ids), {label: dict(zip(ids, found, strict=True)) for label, found in bar.items()})
    base = parse(cfg.baseline, dumps({**document(cfg.k, fp, {"one": entry}), "format_version": 3}))
    judge = Judge(cfg, today, base, fingerprint(cfg, today), {"one": Run(result=result(now, ids))}, selected=KEYS)
    assert judge.base_exam(None) is None
    assert [c.count(ids) for c in judge.clusterings] == [12, 24]
    ndcg = judge.outcome(KEYS[0])
    assert not ndcg.passed and "p = 0.0312" in ndcg.summary, ndcg.summary
    alone = Judge(cfg, today, recorded(cfg, today, bar), fingerprint(cfg, today), {"one": Run(result=result(now, ids))},
                  selected=KEYS)
    assert len(alone.clusterings) == 1 and alone.outcome(KEYS[0]).passed  # a base keeping the same clusters
