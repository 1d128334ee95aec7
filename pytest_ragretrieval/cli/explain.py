"""`ragretrieval explain QID`: why a question missed, under each retriever (`labels/explain.py` builds it,
this prints it as text or JSON)."""
from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..baseline.format import read
from ..config.settings import Config, load_config
from ..core.errors import did_you_mean
from ..core.values import QUOTED, quoted
from ..evalset.jsonl import load_chunks, load_evalset
from ..files.paths import display
from ..labels.explain import Explainer, recorded_rankings
from ..labels.results import check_known
from ..record.explain import Explanation, Fusion, Tokens, ordinal
from ..report.terminal import table
from .common import ONE_LINE, Result, UsageError

LISTED = 10
"""Known ids named in an "unknown question" or "unknown retriever" line; the rest are counted."""


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    explain = commands.add_parser(
        "explain", parents=[common], help="explain a question's miss: tokens, shared terms, ranks, fused scores",
        description="For question QID under each retriever (or --retriever NAME): the query's and each gold "
        "chunk's tokens as each bm25 retriever cut them (with and without its user dictionary), the terms they "
        "share, each gold chunk's rank in every ranking the retriever reads and a hybrid's fused scores against "
        "the k-th's. bm25, run files and hybrids of them are computed here; other rankings (vector, rerank, "
        "python, table, sql) are read from RESULTS (default: the baseline). No database or model is started.",
    )
    explain.add_argument("question", metavar="QID")
    explain.add_argument("--retriever", metavar="NAME", default=None, help="one retriever (default: every one)")
    explain.add_argument("--results", metavar="RESULTS.json", default=None,
                         help="a --rag-json results file (or a baseline) for the rankings not computed here "
                         "(default: the config's baseline, when it exists)")
    explain.add_argument("--json", action="store_true", help="print the explanations as JSON")


def run(args: argparse.Namespace) -> Result:
    config = load_config(args.config, Path.cwd())
    return run_explain(config, args.question, args.retriever, args.results, args.json)


def known_ids(what: str, given: str, known: Sequence[str], where: str) -> UsageError:
    """One line naming the unknown id and the known ones, at most LISTED of them."""
    listed = ", ".join(known[:LISTED]) + (f" and {len(known) - LISTED} more" if len(known) > LISTED else "")
    near = did_you_mean(given, known) if len(given) <= QUOTED else ""
    return UsageError(f"unknown {what} {quoted(given)}{near}; {where} holds {listed}")


def run_explain(config: Config, qid: str, retriever: str | None, results: str | None, as_json: bool) -> Result:
    chunks = load_chunks(config.chunks_file("ragretrieval explain"))
    questions = load_evalset(config.evalset, chunks)
    by_id = {question.id: question for question in questions}
    if qid not in by_id:
        raise known_ids("question", qid, [q.id for q in questions], display(config.evalset))
    names = [spec.name for spec in config.retrievers]
    if retriever is not None and retriever not in names:
        raise known_ids("retriever", retriever, names, f"{config.where} [retrievers]")
    path = Path(results) if results is not None else config.baseline if config.baseline.is_file() else None
    recorded = None
    if path is not None:
        found = read(path)
        check_known(found, by_id, {chunk.id: chunk for chunk in chunks}, config)
        recorded = recorded_rankings(display(path), found.retrievers)
    explainer = Explainer(config, chunks, questions, recorded)
    explained = [explainer.explain(by_id[qid], name) for name in ([retriever] if retriever else names)]
    if as_json:
        return Result(out=[json.dumps([document(e) for e in explained], ensure_ascii=False, indent=2)])
    lines: list[str] = []
    for number, explanation in enumerate(explained):
        lines += ([""] if number else []) + text_lines(explanation)
    return Result(out=lines)


def document(explanation: Explanation) -> dict[str, Any]:
    """The explanation as JSON values, with the gold chunks it missed within k."""
    missed = explanation.missed
    return {**dataclasses.asdict(explanation), "missed": None if missed is None else list(missed)}


def text_lines(explanation: Explanation) -> list[str]:
    """The explanation as the terminal shows it: ranks, the fusion, then each bm25 retriever's tokens."""
    e = explanation
    lines = [f"{e.question} {e.query.translate(ONE_LINE)} — {e.retriever} ({e.type}), k={e.k}"]
    if not e.gold:
        lines.append("no gold chunk: a no-answer question (nothing to miss)")
    else:
        gold = ", ".join(f"{cid} (grade {grade})" for cid, grade in e.gold)
        missed = "not known" if e.missed is None else ", ".join(e.missed) or "none"
        lines.append(f"gold: {gold}; missed within the top {e.k}: {missed}")
        lines += rank_lines(e)
    if e.fusion is not None:
        lines += fusion_lines(e, e.fusion)
    for tokens in e.tokens:
        lines += token_lines(tokens)
    lines += [f"note: {note}" for note in e.notes]
    return lines


def rank_lines(e: Explanation) -> list[str]:
    chunks = [cid for cid, _ in e.gold]
    rows = []
    for ranks in e.ranks:
        rows.append([ranks.retriever, ranks.type, *(ranks.shown(cid) for cid in chunks), ranks.known])
    lines = ["ranks (-: not ranked at all; >N: not in the N recorded; ?: no ranking known):",
             *("  " + line for line in table(["retriever", "type", *chunks, "ranking"], rows))]
    for ranks in e.ranks:
        if ranks.scores or ranks.kth:
            scores = ", ".join(f"{cid} {ranks.scores[cid]:.4f}" for cid in chunks if cid in ranks.scores) or "none"
            kth = f"; {ordinal(e.k)} {ranks.kth[0]} {ranks.kth[1]:.4f}" if ranks.kth else ""
            lines.append(f"{ranks.retriever} scores: {scores}{kth}")
    return lines


def fusion_lines(e: Explanation, fusion: Fusion) -> list[str]:
    scores = ", ".join(f"{cid} {score:.6f}" for cid, score in fusion.scores.items()) or "no gold chunk"
    kth = f"; {ordinal(e.k)} {fusion.kth[0]} {fusion.kth[1]:.6f}" if fusion.kth else f"; fewer than {e.k} ranked"
    lines = [f"fused scores ({fusion.rule}): {scores}{kth}"]
    if fusion.lower_bounds:
        lines.append(f"  lower bounds: {', '.join(fusion.lower_bounds)} known to fewer than {fusion.depth} ranks; "
                     "a rank below what is known counts 0")
    return lines


def joined(tokens: Sequence[str]) -> str:
    return "/".join(tokens) if tokens else "(none)"


def token_lines(tokens: Tokens) -> list[str]:
    lines = [f"{tokens.retriever} tokens ({tokens.tokenizer}):", f"  query: {joined(tokens.query)}"]
    for gold in tokens.gold:
        lines += [f"  {gold.chunk}: {joined(gold.tokens)}",
                  f"    shared: {' '.join(gold.shared) if gold.shared else 'none'}"]
    if tokens.plain_query is None:
        return lines
    changed = tokens.plain_query != tokens.query or any(g.plain != g.tokens for g in tokens.gold)
    if not changed:
        return [*lines, "  without the user dictionary: the same tokens"]
    same = tokens.plain_query == tokens.query
    lines.append(f"  without the user dictionary: query {'the same' if same else joined(tokens.plain_query)}")
    for gold in tokens.gold:
        if gold.plain != gold.tokens and gold.plain is not None:
            lines.append(f"    {gold.chunk}: {joined(gold.plain)}")
        if gold.plain_shared != gold.shared:
            lines.append(f"    {gold.chunk} shared: {' '.join(gold.plain_shared or ()) or 'none'}")
    if tokens.plain_ranks is not None:
        ranks = ", ".join(f"{cid} {'-' if rank is None else rank}" for cid, rank in tokens.plain_ranks.items())
        lines.append(f"    ranks without it: {ranks}")
    return lines

