"""The tune/gate split: which questions the gate judges and which a sweep may tune on (tutorial pitfall 1).

A question's side is its line's `side`, else drawn from `[split]`: tune when sha256(seed, key) read as a
number in [0, 1) is below `fraction`. The draw reads nothing but the seed and the question's key, so adding
a question never moves another; the key is the question's id, or its cluster's (`cluster`), so that
near-copies put in one cluster land on one side. A gate question that is a tune question in other words
(the same query once normalised, or tokens nearly the same) leaks what was tuned on into the exam: `leaks`
names them.
"""
from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from ..core.errors import ConfigError
from .records import Question, Side

MIN_TUNE = 30
"""Fewer tune questions than this, and a sweep's best setting is mostly the noise it was picked on."""
JACCARD = 0.9
"""Token Jaccard similarity at or above which a gate question is named as a near-copy of a tune question."""
SHOWN = 5
"""How many leaks the warning line names before it counts the rest."""


@dataclass(frozen=True)
class Split:
    """`[split]`: the share of the questions drawn to `tune`, and the seed of the draw."""

    fraction: float
    seed: int = 0


def by_cluster(question: Question) -> str:
    """The default key of the draw: the question's `cluster` where its line names one (a cluster's questions
    land on one side), else its id (each question on its own)."""
    return question.id if question.cluster is None else question.cluster


def drawn(split: Split, key: str) -> Side:
    """The side `key` is drawn to: a function of the seed and the key alone."""
    digest = hashlib.sha256(f"{split.seed}\x00{key}".encode()).digest()
    return "tune" if int.from_bytes(digest[:8], "big") / 2 ** 64 < split.fraction else "gate"


def sides(
    questions: Sequence[Question], split: Split | None, cluster: Callable[[Question], str] = by_cluster,
) -> dict[str, Side]:
    """Each question's side: its line's `side`, else drawn by its cluster key; without `[split]`, every
    question is the gate's unless its line says `tune`."""
    return {q.id: q.side if q.side is not None else "gate" if split is None else drawn(split, cluster(q))
            for q in questions}


def gate_questions(questions: Sequence[Question], split: Split | None, min_questions: int,
                   where: str, judged: Collection[str] = ()) -> tuple[Question, ...]:
    """The questions the gate judges, where they enter judging (a sharded run's merge; the session keeps the
    tune ones apart itself): the split's sizes checked; `judged`, the base's gate questions (`held`)."""
    side_of = sides(questions, split)
    gate = tuple(q for q in questions if side_of[q.id] == "gate")
    if len(gate) < len(questions):
        check_sizes(len(gate), len(questions) - len(gate), min_questions, where)
    kept = {q.id for q in held([q for q in questions if side_of[q.id] == "tune"], judged)}
    return tuple(q for q in questions if side_of[q.id] == "gate" or q.id in kept)


def held(tune: Sequence[Question], judged: Collection[str]) -> tuple[Question, ...]:
    """The `tune` questions the base's exam judged (`judged`: its gate questions): moved out of the gate by the
    change under test (a `side` edited, `[split]`'s seed or fraction changed), they are still judged by it, so a
    change cannot hurt questions and move them out of sight in one step; they leave once a baseline recorded
    without them is the base's."""
    return tuple(q for q in tune if q.id in judged)


def folds(
    questions: Sequence[Question], count: int, seed: int = 0, cluster: Callable[[Question], str] = by_cluster,
) -> list[tuple[tuple[Question, ...], tuple[Question, ...]]]:
    """`count` repeated splits for a sweep on a small set: fold i holds out the questions whose key hashes
    to i, and tunes on the rest; (tune, held out) per fold. Never the gate's: each question is tuned on in
    every fold but one."""
    def fold(question: Question) -> int:
        digest = hashlib.sha256(f"{seed}\x00{cluster(question)}".encode()).digest()
        return int.from_bytes(digest[:8], "big") % count

    of = {q.id: fold(q) for q in questions}
    return [(tuple(q for q in questions if of[q.id] != i), tuple(q for q in questions if of[q.id] == i))
            for i in range(count)]


def check_sizes(gate: int, tune: int, min_questions: int, where: str) -> None:
    """A split must leave the gate `min_questions` and a sweep `MIN_TUNE`; one line otherwise."""
    if gate < min_questions:
        raise ConfigError(f"{where} key 'split': leaves {gate} gate questions, fewer than min_questions "
                          f"({min_questions}); lower fraction or add questions")
    if tune < MIN_TUNE:
        raise ConfigError(f"{where} key 'split': leaves {tune} tune questions, fewer than {MIN_TUNE}; raise "
                          "fraction or add questions (fewer are swept on folds, never gated: ragretrieval tune NAME "
                          "--folds 5 with a config of its own)")


def normalised(query: str) -> str:
    """A query as the leak guard compares it: NFKC, casefolded, whitespace collapsed."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", query).casefold()).strip()


def jaccard(left: frozenset[str], right: frozenset[str]) -> float:
    union = left | right
    return len(left & right) / len(union) if union else 1.0


@dataclass(frozen=True)
class Leak:
    gate: str
    tune: str
    why: str
    """"the same query" or "Jaccard 0.93"."""


def leaks(
    questions: Sequence[Question], side_of: dict[str, Side], tokenize: Callable[[str], Sequence[str]],
) -> list[Leak]:
    """Each gate question that repeats a tune question: the same query once `normalised`, or a token
    Jaccard similarity of at least `JACCARD` under `tokenize` (the retrievers' own tokenizer); the first
    tune question it repeats."""
    tune = [q for q in questions if side_of[q.id] == "tune"]
    if not tune:
        return []
    texts = {q.id: normalised(q.query) for q in questions}
    tokens = {q.id: frozenset(tokenize(q.query)) for q in questions}
    by_text: dict[str, str] = {}
    for q in tune:
        by_text.setdefault(texts[q.id], q.id)
    found: list[Leak] = []
    for q in questions:
        if side_of[q.id] != "gate":
            continue
        if texts[q.id] in by_text:
            found.append(Leak(q.id, by_text[texts[q.id]], "the same query"))
            continue
        best = max(((jaccard(tokens[q.id], tokens[t.id]), t.id) for t in tune), key=lambda pair: pair[0])
        if best[0] >= JACCARD:
            found.append(Leak(q.id, best[1], f"Jaccard {best[0]:.2f}"))
    return found


def leak_line(found: Sequence[Leak]) -> str | None:
    """The one warning line naming the leaks, at most `SHOWN` of them."""
    if not found:
        return None
    named = "; ".join(f"{leak.gate} repeats tune question {leak.tune} ({leak.why})" for leak in found[:SHOWN])
    more = f"; and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
    return (f"rag: warning: {len(found)} gate question(s) repeat a tune question, so what was tuned on is "
            f"judged again: {named}{more}; move each to one side (\"side\" on its line) or reword it")
