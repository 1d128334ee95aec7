"""Conformance: our metrics reproduce what trec_eval itself printed for its own test files.

The data in tests/data/trec_eval/ is trec_eval v10.0's `test/` folder, unchanged (see NOTICE.md).
Each output file is parsed, every measure we implement is recomputed from the judgments and
the run, and the result must print the same as trec_eval printed it (4 decimals).
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import pytest

from pytest_ragretrieval.scoring.metrics import (
    average_precision,
    hit_rate,
    mrr,
    ndcg,
    precision,
    recall,
)

DATA = Path(__file__).parent / "data" / "trec_eval"

Metric = Callable[[Sequence[str], Mapping[str, int], int], float]

# Output file -> (judgments it was computed from, relevance level of its binary measures).
# out.test.aql was produced with `-l2`: only grade >= 2 counts as relevant there.
OUTPUTS: dict[str, tuple[str, int]] = {
    "out.test": ("qrels.test", 1),
    "out.test.a": ("qrels.test", 1),
    "out.test.aq": ("qrels.test", 1),
    "out.test.aql": ("qrels.rel_level", 2),
}

# The measures the per-query files must contain, so a parser slip cannot silently skip them.
REQUIRED = {
    *(
        f"{family}_{k}"
        for family in ("P", "recall", "ndcg_cut", "map_cut")
        for k in (5, 10, 15, 20, 30, 100)
    ),
    "map",
    "recip_rank",
    "success_1",
    "success_5",
    "success_10",
}

# trec_eval measure family -> (our function, whether it is a binary measure).
_FAMILIES: dict[str, tuple[Metric, bool]] = {
    "P": (precision, True),
    "recall": (recall, True),
    "ndcg_cut": (ndcg, False),
    "map_cut": (average_precision, True),
    "success": (hit_rate, True),
}

# Measures without a cutoff score the whole run; 1000 exceeds every run and relevant set here.
_UNCUT: dict[str, tuple[Metric, bool]] = {
    "map": (average_precision, True),
    "recip_rank": (mrr, True),
    "ndcg": (ndcg, False),
}
_WHOLE_RUN = 1000


class Measure(NamedTuple):
    """How to recompute one trec_eval measure with our functions."""

    metric: Metric
    k: int
    binary: bool


def measure_for(name: str) -> Measure | None:
    """Map a trec_eval measure name to our function and cutoff; None if we do not implement it."""
    if name in _UNCUT:
        metric, binary = _UNCUT[name]
        return Measure(metric, _WHOLE_RUN, binary)
    family, _, cutoff = name.rpartition("_")
    if family in _FAMILIES and cutoff.isdigit():
        metric, binary = _FAMILIES[family]
        return Measure(metric, int(cutoff), binary)
    return None


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """`qid iter docno grade` lines -> {qid: {docno: grade}}."""
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for line in path.read_text().splitlines():
        if line.strip():
            qid, _, docno, grade = line.split()
            qrels[qid][docno] = int(grade)
    return dict(qrels)


def read_run(path: Path) -> dict[str, list[str]]:
    """`qid Q0 docno rank score runid` lines -> {qid: docnos in trec_eval's order}.

    trec_eval ignores the rank column: it sorts by score, highest first, and breaks ties by
    docno in descending string order.
    """
    scored: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for line in path.read_text().splitlines():
        if line.strip():
            qid, _, docno, _, score, _ = line.split()
            scored[qid].append((float(score), docno))
    # reverse=True on (score, docno): score descending, then docno descending.
    return {qid: [d for _, d in sorted(pairs, reverse=True)] for qid, pairs in scored.items()}


def read_output(path: Path) -> dict[str, dict[str, str]]:
    """`measure<TAB>qid-or-all<TAB>value` lines -> {measure: {qid: printed value}}."""
    printed: dict[str, dict[str, str]] = defaultdict(dict)
    for line in path.read_text().splitlines():
        if line.strip():
            name, qid, value = (field.strip() for field in line.split("\t"))
            printed[name][qid] = value
    return dict(printed)


def binary(relevance: Mapping[str, int], level: int) -> dict[str, int]:
    """Grades at or above `level` become 1 and the rest 0, as trec_eval's `-l` does."""
    return {docno: int(grade >= level) for docno, grade in relevance.items()}


RUN = read_run(DATA / "results.test")
PRINTED = {name: read_output(DATA / name) for name in OUTPUTS}
QRELS = {name: read_qrels(DATA / name) for name in {qrels for qrels, _ in OUTPUTS.values()}}

CASES = [
    pytest.param(output, name, id=f"{output}-{name}")
    for output, measures in PRINTED.items()
    for name in measures
    if measure_for(name) is not None
]


def score(output: str, name: str, qid: str) -> float:
    """Our value of measure `name` for one query, or its mean (`all`) over the shared queries."""
    qrels_name, level = OUTPUTS[output]
    qrels = QRELS[qrels_name]
    measure = measure_for(name)
    assert measure is not None
    qids = sorted(set(qrels) & set(RUN)) if qid == "all" else [qid]
    values = []
    for q in qids:
        relevance = binary(qrels[q], level) if measure.binary else qrels[q]
        values.append(measure.metric(RUN[q], relevance, measure.k))
    return sum(values) / len(values)


@pytest.mark.parametrize(("output", "name"), CASES)
def test_matches_trec_eval(output: str, name: str) -> None:
    """Every query trec_eval printed for this measure, and `all`, prints the same from us."""
    ours = {qid: f"{score(output, name, qid):.4f}" for qid in PRINTED[output][name]}
    assert ours == PRINTED[output][name]


@pytest.mark.parametrize("output", ["out.test.aq", "out.test.aql"])
def test_per_query_files_cover_the_required_measures(output: str) -> None:
    """The parametrisation above really includes each required measure, per query and `all`."""
    printed = PRINTED[output]
    missing = REQUIRED - {name for name in printed if measure_for(name) is not None}
    assert not missing
    for name in REQUIRED:
        assert set(printed[name]) == {"301", "302", "303", "all"}, name


@pytest.mark.parametrize("output", list(OUTPUTS))
def test_all_averages_over_the_queries_in_qrels_and_run(output: str) -> None:
    """`all` is a mean over the queries judged and run; trec_eval's num_q counts them."""
    qrels_name, _ = OUTPUTS[output]
    shared = set(QRELS[qrels_name]) & set(RUN)
    assert PRINTED[output]["num_q"]["all"] == str(len(shared))
    assert int(PRINTED[output]["num_ret"]["all"]) == sum(len(RUN[q]) for q in shared)


def test_run_order_matches_trec_eval() -> None:
    """Our reading of the run (score descending, ties by docno descending) is trec_eval's.

    `relstring_20` in out.test.aql spells the grades of the first 20 documents trec_eval ranked:
    a digit for a grade >= 0, '.' for a negative grade, '-' for a document with no judgment.
    """
    qrels = QRELS["qrels.rel_level"]

    def symbol(docno: str, relevance: Mapping[str, int]) -> str:
        if docno not in relevance:
            return "-"
        return str(relevance[docno]) if relevance[docno] >= 0 else "."

    printed = PRINTED["out.test.aql"]["relstring_20"]
    ours = {qid: "".join(symbol(d, qrels[qid]) for d in RUN[qid][:20]) for qid in printed}
    assert ours == {qid: value.strip("'") for qid, value in printed.items()}
