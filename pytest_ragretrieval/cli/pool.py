"""`ragretrieval pool`: the unjudged chunks in the top k, as a labelling queue, and the labels folded back.

The pool is the baseline's recorded and approved rankings and each results file (`--results`, written
by `pytest --rag-eval --rag-json`), so a retuned retriever's queue comes from its results file;
`--judge` has an LLM propose the grades, `--apply` folds the graded lines into the eval set. The
logic is `labels.pool` (and `labels.judge`); this module reads the command line and prints.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..config.settings import load_config
from ..evalset.jsonl import load_chunks, load_evalset
from ..files.paths import display, write_atomic
from ..labels.pool import apply_labels, pool
from .common import PROG, Result, UsageError, checked_output, positive

JUDGE_PREFIX = "openai:"


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    pool = commands.add_parser(
        "pool", parents=[common], help="the unjudged top-k chunks as a labelling queue; --apply folds labels in",
        description="Write, per question, the chunks that the baseline's rankings (recorded and approved) or a "
        "results file rank in the top k and the eval set does not judge (depth-k pooling), one JSON line each "
        "with \"grade\": null to fill in. With --apply FILE, fold the lines whose grade is an integer into the "
        "eval set (grade >= 1 into 'relevant', 0 into 'not_relevant'). With --judge openai:MODEL, an LLM proposes "
        "the grades (UMBRELA's 0-3 scale); its lines are applied only with --accept-machine-labels.",
    )
    pool.add_argument("--results", action="append", default=[], metavar="FILE",
                      help="a results file (pytest --rag-eval --rag-json FILE) whose rankings join the pool; "
                      "repeat for several")
    pool.add_argument("--k", type=positive, default=None, metavar="N", help="pool depth (default: the config's k)")
    pool.add_argument("--out", default=None, metavar="FILE", help="write the queue here (default: standard output)")
    pool.add_argument("--apply", default=None, metavar="FILE", help="fold the labelled lines of FILE into the eval set")
    pool.add_argument("--accept-machine-labels", action="store_true",
                      help="with --apply: also take the lines an LLM judge graded (they carry \"judge\")")
    pool.add_argument("--judge", default=None, metavar="openai:MODEL",
                      help="grade the queue with an LLM at OPENAI_BASE_URL (key: OPENAI_API_KEY)")
    pool.add_argument("--base-url", default=None, metavar="URL",
                      help="the judge's OpenAI-compatible server (default: OPENAI_BASE_URL, else api.openai.com)")
    pool.add_argument("--judge-budget", type=positive, default=600, metavar="SECONDS",
                      help="the most seconds the judge may take in all (default: 600)")


def run(args: argparse.Namespace) -> Result:
    config = load_config(args.config, Path.cwd())
    if args.apply is not None:
        if args.judge is not None or args.results or args.out is not None:
            raise UsageError("--apply takes no --judge, --results or --out: it only folds FILE into the eval set")
        labelled = Path(args.apply)
        if labelled.resolve() == config.evalset.resolve():
            raise UsageError(f"--apply {display(labelled)}: that is the eval set itself; pass the labelled pool file")
        chunks_file = config.chunks_file(f"{PROG} pool --apply")
        return Result(out=apply_labels(config, chunks_file, labelled, args.accept_machine_labels))
    if args.accept_machine_labels:
        raise UsageError("--accept-machine-labels goes with --apply FILE")
    model = None
    if args.judge is not None:
        model = args.judge.removeprefix(JUDGE_PREFIX)
        if not args.judge.startswith(JUDGE_PREFIX) or not model.strip():
            raise UsageError(f"--judge {args.judge}: expected openai:MODEL (any OpenAI-compatible chat server)")
    chunks_path = config.chunks_file(f"{PROG} pool")
    inputs = {"the eval set": config.evalset, "the corpus": chunks_path, "the baseline": config.baseline,
              **{f"--results {name}": Path(name) for name in args.results}}
    out = checked_output("--out", args.out, inputs, getattr(args, "config", None))
    chunks = load_chunks(chunks_path)
    questions = load_evalset(config.evalset, chunks)
    found = pool(config, chunks, questions, [Path(name) for name in args.results], args.k or config.k)
    entries = found.entries
    lines = [entry.line() for entry in entries]
    notes: list[str] = list(found.skipped)
    if model is not None:
        from ..labels.judge import judge_entries

        graded = judge_entries(config, model, args.base_url, [entry.record() for entry in entries], args.judge_budget)
        lines = [line for line, _ in graded]
        notes += [f"judged {len(graded)} chunk{'s' if len(graded) != 1 else ''} with {args.judge} "
                 f"({sum(1 for _, cached in graded if cached)} from the cache); apply with "
                 "`ragretrieval pool --apply FILE --accept-machine-labels` after review"]
    text = "".join(line + "\n" for line in lines)
    summary = f"{len(entries)} unjudged chunk{'s' if len(entries) != 1 else ''} for " \
              f"{len({entry.question.id for entry in entries})} questions in the top {args.k or config.k}"
    if out is None:
        return Result(out=lines, err=[summary, *notes])
    write_atomic(out, text)
    return Result(out=[f"{summary}: wrote {display(out)}", *notes])
