"""`ragretrieval merge PART...`: the partial records of a sharded run, judged once over all questions.

Each shard (`pytest --rag-eval --rag-shard I/N --rag-json PART`) measured its share of the
questions and judged nothing; here the partials are checked and combined (`shards/merge.py`), and
the gate's one evaluation (`gate/evaluation.py`) decides every item as one unsharded run would: the
same verdicts, the same family-wise adjustment, the same `--json` results, reports and baseline
update (with its ratchet).
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..bar.exam import base_questions
from ..baseline.format import load as load_baseline
from ..baseline.verify import verify
from ..config.outputs import check_outputs
from ..config.settings import load_config
from ..evalset.segments import check_values
from ..evalset.split import gate_questions
from ..files.paths import display, snapshot
from ..gate.evaluation import evaluate
from ..gate.items import item_keys
from ..gate.rechunk import prepared
from ..gate.report import described
from ..glue.inputs import load_inputs
from ..glue.outputs import Judgement, Writer, write_judgement
from ..glue.trust import edited, kept_exam
from ..labels.explain import missed, recorded_rankings
from ..labels.relabel import units
from ..record.exam import gate_ids
from ..record.report import ReportInput
from ..record.types import Status
from ..report.terminal import summary_lines
from ..report.view import view
from ..scoring.evaluate import places
from ..shards.merge import merge
from ..shards.partial import PartialError, read_partial
from .common import FAILED, OK, PROG, Result, UsageError, checked_output


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    merge_ = commands.add_parser(
        "merge", parents=[common], help="judge the partial records of a sharded run (--rag-shard) once",
        description="Read the partial records that `pytest --rag-eval --rag-shard I/N --rag-json PART` wrote, one "
        "per shard, check that they are every shard of one run of this repository's configuration, and judge all "
        "questions once, as one unsharded run: each item PASSED, FAILED or SKIPPED with its message, then the "
        "summary. Exit 0 when every item passed, 1 when one failed (or nothing could be judged), 2 on errors.",
    )
    merge_.add_argument("parts", metavar="PART", nargs="+", help="a shard's partial record")
    merge_.add_argument("--json", metavar="PATH", default=None, dest="json_path",
                        help="write the results, as `pytest --rag-json` does, to PATH")
    merge_.add_argument("--report", metavar="FORMAT=PATH", action="append", default=[], type=_target,
                        help="write a report (markdown, html) to PATH, as --rag-report and --rag-html do; repeatable")
    merge_.add_argument("--tags", action="store_true",
                        help="print every row of the per-tag table, as pytest's --rag-tags does")
    merge_.add_argument("--update-baseline", action="store_true",
                        help="record the merged values as the new baseline, as `pytest --rag-update-baseline` does")
    merge_.add_argument("--allow-regression", action="store_true",
                        help="with --update-baseline, record values lower than the baseline's")


def _target(text: str) -> tuple[str, str]:
    from ..report.formats import FORMATS

    name, _, path = text.partition("=")
    if name not in FORMATS or not path:
        raise argparse.ArgumentTypeError(f"expected FORMAT=PATH with FORMAT one of {', '.join(FORMATS)}, got {text!r}")
    return name, path


def run(args: argparse.Namespace) -> Result:
    if args.allow_regression and not args.update_baseline:
        raise UsageError("--allow-regression only applies to --update-baseline; add --update-baseline, or drop it")
    config = load_config(getattr(args, "config", None), Path.cwd())
    parts = [Path(part) for part in args.parts]
    read = {f"the partial record {display(part)}": part for part in parts}
    wanted = {"--json": args.json_path, **{f"--report {name}": path for name, path in args.report}}
    outputs = {option: path for option, value in wanted.items() if (path := checked_output(option, value, read))}
    check_outputs(config, outputs, args.update_baseline)
    baseline_read = snapshot(config.baseline)  # before the read: a write meanwhile is seen
    config, baseline = prepared(config, load_baseline(config.baseline))  # a chunker change, as the session does
    loaded = load_inputs(config, baseline, f"{PROG} merge", config_path=getattr(args, "config", None))
    chunks = loaded.chunks
    kept = kept_exam(config.baseline, baseline)
    base = kept.fingerprint if kept is not None else baseline.fingerprint if baseline is not None else None
    judged = gate_ids(base) if base is not None and not args.update_baseline else frozenset()
    # a shard ran no tune one but those the base's exam judged (evalset/split.py, `held`)
    questions = gate_questions(loaded.questions, config.split, config.min_questions, config.where, judged)
    if baseline is not None:
        verify(baseline, config.k, chunks, questions)
    measured = set(baseline.retrievers) if baseline is not None else set()
    merged = merge([read_partial(part) for part in parts], config, chunks, questions, measured)
    unnamed = check_values(questions, config.segments, config.evalset)
    base_exam = base_questions(baseline.fingerprint, kept) if config.segments and baseline is not None else ()
    keys = {key.nodeid: key for key in item_keys(config, questions, base_exam)}
    unknown = next((nodeid for nodeid in merged.selected if nodeid not in keys), None)
    if unknown is not None:
        raise PartialError(f"{display(parts[0])}: item {unknown} is not an item of {config.where}; merge in the "
                           "checkout the shards ran in")
    selected = [keys[nodeid] for nodeid in merged.selected]
    evaluation = evaluate(config, questions, baseline, merged.fingerprint, merged.runs, selected,
                          update=args.update_baseline, allow_regression=args.allow_regression,
                          places=places(chunks, config.shown), kept=kept, units=units(config, baseline, chunks),
                          edits=edited(config, baseline, kept))
    result = Result()
    for key, verdict in evaluation.verdicts.items():
        result.out.append(f"{verdict.status.name} {key.nodeid}: {verdict.lines[0]}")
        result.out += [f"    {line}" for line in verdict.lines[1:]]
    record = evaluation.record
    result.out += summary_lines(view(record), args.tags)
    result.out += [*evaluation.warnings, *unnamed]
    write = writer(result)
    reports = {name: Path(path) for name, path in args.report}

    def data() -> ReportInput:
        explained = missed(config, chunks, questions, recorded_rankings("this run", record.retrievers)
                           ) if "html" in reports else None
        return view(record, questions, chunks, described(config, merged.runs, merged.described["embedder"],
                                                         merged.described["database"]), explained)

    result.out += write_judgement(Judgement(
        reports, data, None if args.json_path is None else Path(args.json_path), lambda: record, evaluation.update,
        config.baseline, baseline_read), write, said=result.out)
    result.out += evaluation.failed
    failed = any(verdict.status == Status.FAILED for verdict in evaluation.verdicts.values())
    result.code = FAILED if failed or evaluation.failed or write.failed else OK
    return result


def writer(result: Result) -> Writer:
    """The merge's writer: `wrote PATH` among its output, a file it cannot write one error line."""
    return Writer(result.out, result.err, f"`{PROG} merge`", prefix="", error=f"{PROG}: error: ")
