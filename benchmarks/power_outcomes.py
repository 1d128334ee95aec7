"""The power study's clusters and three outcomes: how often a harmless change fails (false red) or is left
inconclusive, at the eval-set sizes teams have (15-20, 40-100, a few hundred questions), clusters on and off.

Data: CMRC 2018 dev (as benchmarks/power.py: 848 passages, 3,219 questions, each question's gold its
passage), ranked by bm25 over jieba tokens with the plugin's own `BM25Retriever`, scored at k = 5 with
power.py's six metrics: a family of 6 metric items. A team's eval set is written document by document, so
an eval set of n questions is drawn as power.py's are, but by passage: passages in random order, up to
PER_DOCUMENT questions of each, until n. Each question's cluster is its passage, documents mode's default
(bar/clusters.py): 15 questions fall in 4 clusters, 40 in 10, 300 in 75.

Harmless changes (power.py's swaps: places j and j + 1 of a ranking traded, j uniform in 1..5):
- "questions s": each question with chance s, independently (power.py's "harmless, tiny").
- "documents s": each passage with chance s, and then every question of it: an edit of one document moves
  its questions together, the case clusters are for.

Rules: tolerance t, margin t (the default), with no test or the gate's max-T randomization test at alpha
0.05 (`stats.maxt`), clusters off (each question its own) or on (whole passages flipped, and where the
clusters allow no p below alpha, 2^-G >= alpha, the item judged by the tolerance alone, as the gate does).
Per trial the gate's three outcomes: it fails (some item's mean drop exceeds t and, with the test, its
adjusted p is below alpha, or its clusters cannot reach alpha), else it is inconclusive (some item's one-sided
95% lower bound, `scoring/margin.py`'s `lower_bound` under the same clustering, below -t), else it passes
as non-inferior or unchanged. A false red is a fail; the inconclusive rate is of all trials. Seeds are fixed.

Usage: python benchmarks/power_outcomes.py CMRC_DEV_JSON [--trials 1000] [--sizes 15,20,40,100,300] [--work DIR]
"""
from __future__ import annotations

import argparse
import importlib.util
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pytest_ragretrieval.bar.clusters import floor
from pytest_ragretrieval.core.values import DIGITS, EPSILON
from pytest_ragretrieval.evalset.records import Chunk, Question
from pytest_ragretrieval.scoring import stats
from pytest_ragretrieval.scoring.margin import lower_bound

HERE = Path(__file__).resolve().parent
PER_DOCUMENT = 4
"""Questions a team writes per document, at most: CMRC has 3.8 a passage."""
SIZES = (15, 20, 40, 100, 300)
TOLERANCES = (0.01, 0.02, 0.05)
SCENARIOS = (("questions", 0.04), ("questions", 0.08), ("documents", 0.08))
ALPHA = 0.05
SEED = 20261208


def _power() -> object:
    spec = importlib.util.spec_from_file_location("power_benchmark", HERE / "power.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


power = _power()


@dataclass(frozen=True)
class Rule:
    tolerance: float
    test: bool
    clusters: bool

    @property
    def label(self) -> str:
        return f"t {self.tolerance:g}{' + max-T' if self.test else ''}"


RULES = tuple(Rule(t, test, on) for on in (False, True) for test in (False, True) for t in TOLERANCES)


@dataclass(frozen=True)
class Data:
    """bm25's per-question values (metrics, questions), the values with places j, j + 1 swapped
    (k, metrics, questions), and each question's passage as an integer."""

    base: np.ndarray
    swapped: np.ndarray
    document: np.ndarray


def bm25_rankings(chunks: Sequence[Chunk], questions: Sequence[Question], work: Path) -> list[list[str]]:
    """bm25's top 10 for every question, as power.py ranks its sparse source."""
    from pytest_ragretrieval.cache.store import Cache
    from pytest_ragretrieval.config.settings import cores
    from pytest_ragretrieval.retrievers.bm25 import BM25Retriever
    from pytest_ragretrieval.retrievers.corpus_tokens import cached_tokens, tokenizer_id
    from pytest_ragretrieval.retrievers.tokens import tokenizer

    cache = Cache(work)
    ordered = sorted(chunks, key=lambda chunk: chunk.id)
    namespace = cache.namespace("tokens", tokenizer_id("jieba"), dtype="<i4")

    def tokens(texts: Sequence[str]) -> tuple[list[str], list[np.ndarray]]:
        return cached_tokens(texts, "jieba", namespace, cores())

    bm25 = BM25Retriever(ordered, tokenizer("jieba"), 1.5, 0.75, 0.25, 0.0, tokens=tokens([c.text for c in ordered]),
                         cached=tokens)
    queries = [question.query for question in questions]
    return [list(ranking) for ranking, _ in bm25.search_many(queries, power.DEPTH, lambda done: None)]


def data_of(rankings: Sequence[Sequence[str]], questions: Sequence[Question]) -> Data:
    base = np.array([power.scored(r, q) for r, q in zip(rankings, questions, strict=True)]).T
    swapped = np.array([[power.scored(power.swap(r, j), q) for r, q in zip(rankings, questions, strict=True)]
                        for j in range(power.K)]).transpose(0, 2, 1)
    names: dict[str, int] = {}
    document = np.array([names.setdefault(next(iter(q.relevance)), len(names)) for q in questions])
    return Data(base, swapped, document)


def drawn(data: Data, n: int, rng: np.random.Generator) -> np.ndarray:
    """An eval set of n questions written by passage: up to PER_DOCUMENT of each, passages in random order."""
    picked: list[int] = []
    for doc in rng.permutation(int(data.document.max()) + 1):
        own = np.flatnonzero(data.document == doc)
        picked += rng.permutation(own)[:PER_DOCUMENT].tolist()
        if len(picked) >= n:
            break
    return np.array(picked[:n])


def trial(data: Data, kind: str, share: float, n: int, rng: np.random.Generator) -> tuple[list[bool], list[bool], int]:
    """One harmless change on one eval set: per rule, whether it fails and whether it is inconclusive; and
    how many clusters the eval set falls in."""
    picked = drawn(data, n, rng)
    before = data.base[:, picked]
    after = before.copy()
    if kind == "questions":
        moved = rng.random(n) < share
    else:
        edited = rng.random(int(data.document.max()) + 1) < share
        moved = edited[data.document[picked]]
    places = rng.integers(0, power.K, n)
    after[:, moved] = data.swapped[places[moved], :, picked[moved]].T
    drops = np.round(before.mean(axis=1), DIGITS) - np.round(after.mean(axis=1), DIGITS)
    differences = list(after - before)
    keys = stats.labels([str(doc) for doc in data.document[picked]])
    reachable = keys is None or floor(int(keys.max()) + 1) < ALPHA
    bounds, p = {}, {}
    for on in (False, True):
        clusters = keys if on else None
        bounds[on] = [lower_bound(d, ALPHA, clusters) if d.any() else 0.0 for d in differences]
        if (drops > min(TOLERANCES) + EPSILON).any():
            p[on] = [1.0 if v is None else v for v in stats.maxt(differences, "randomization", alpha=ALPHA,
                                                                  clusters=clusters)]
    fails, open_ = [], []
    for rule in RULES:
        fell = drops > rule.tolerance + EPSILON
        if rule.test and (reachable or not rule.clusters):
            fell &= np.asarray(p.get(rule.clusters, np.ones(len(drops)))) < ALPHA
        fails.append(bool(fell.any()))
        low = bounds[rule.clusters]
        open_.append(not fails[-1] and any(b is None or b < -rule.tolerance - EPSILON for b in low))
    return fails, open_, len(np.unique(data.document[picked]))


def cell(data: Data, kind: str, share: float, n: int, trials: int, seed: Sequence[int]
         ) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Per rule the false red and inconclusive %, the mean clusters, and the % of eval sets whose clusters
    cannot reach alpha (2^-G >= alpha: their items judged by the tolerance alone)."""
    rng = np.random.default_rng([SEED, *seed])
    fails, open_ = np.zeros(len(RULES)), np.zeros(len(RULES))
    groups = floored = 0
    for _ in range(trials):
        failed, inconclusive, count = trial(data, kind, share, n, rng)
        fails += failed
        open_ += inconclusive
        groups += count
        floored += floor(count) >= ALPHA
    return 100 * fails / trials, 100 * open_ / trials, groups / trials, 100 * floored / trials


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cmrc", type=Path, help="cmrc2018_dev.json (ymcui/cmrc2018, squad-style-data)")
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--sizes", type=lambda text: tuple(int(x) for x in text.split(",")), default=SIZES)
    parser.add_argument("--work", type=Path, default=HERE / ".work" / "power")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    chunks, questions = power.cmrc(args.cmrc)
    data = data_of(bm25_rankings(chunks, questions, args.work), questions)
    print(f"{platform.python_version()} on {platform.machine()}; CMRC 2018 dev, bm25, 6 metric items at k 5; "
          f"{args.trials} trials a cell; eval sets of up to {PER_DOCUMENT} questions a passage\n")
    head = ["n", "clusters", "change", *(rule.label for rule in RULES[: len(RULES) // 2])]
    rows = []
    worst: dict[tuple[int, int], float] = {}
    for index, (kind, share) in enumerate(SCENARIOS):
        for n in args.sizes:
            red, open_, groups, floored = cell(data, kind, share, n, args.trials, (index, n))
            for on in (False, True):
                shown = [f"{red[i]:.1f} / {open_[i]:.1f}" for i, rule in enumerate(RULES) if rule.clusters == on]
                said = f"on ({groups:.1f}; {floored:.0f}% < 5 clusters)" if on else "off"
                rows.append([str(n), said, f"{kind} {100 * share:g}%", *shown])
            for i in range(len(RULES)):
                worst[(n, i)] = max(worst.get((n, i), 0.0), red[i])
    print("False red / inconclusive, % of harmless changes, per rule (margin = tolerance); clusters on: the mean "
          "clusters, and the % of eval sets in fewer than 5 (2^-G >= 0.05: judged by the tolerance alone):\n")
    print(f"| {' | '.join(head)} |\n|{' --- |' * len(head)}")
    for row in rows:
        print(f"| {' | '.join(row)} |")
    print(f"\nWorst false red over the changes, clusters on:\n\n| n | {' | '.join(r.label for r in RULES if r.clusters)} |")
    print(f"|{' --- |' * (1 + len(RULES) // 2)}")
    for n in args.sizes:
        print(f"| {n} | {' | '.join(f'{worst[(n, i)]:.1f}' for i, r in enumerate(RULES) if r.clusters)} |")
    print(f"\nTook {time.perf_counter() - started:.0f} s.")


if __name__ == "__main__":
    main()
