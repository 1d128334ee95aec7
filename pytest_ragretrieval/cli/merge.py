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

from ..baseline.format import load as load_baseline
from ..baseline.verify import verify
from ..config.outputs import check_outputs
from ..config.settings import load_config
from ..core.env import in_github_actions
from ..evalset.corpus import documents_corpus, recorded_digest
from ..evalset.jsonl import load_chunks, load_evalset
from ..evalset.split import gate_questions
from ..files.paths import ChangedSince, Snapshot, changed_since, display, snapshot, write_atomic, write_problem
from ..gate.evaluation import evaluate
from ..gate.items import item_keys
from ..gate.rechunk import prepared
from ..gate.report import described
from ..glue.trust import kept_exam
from ..labels.explain import missed, recorded_rankings
from ..record.codec import encode
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
    if config.documents is not None and config.chunker is not None:
        chunks, questions = documents_corpus(config.documents, config.chunker, config.root, config.evalset,
                                             config.chunkings,
                                             recorded=recorded_digest(baseline.fingerprint if baseline else None),
                                             cache=config.cache_dir)
    else:
        chunks = load_chunks(config.chunks_file(f"{PROG} merge"))
        questions = load_evalset(config.evalset, chunks)
    questions = gate_questions(questions, config.split, config.min_questions, config.where)  # a shard ran no tune one
    if baseline is not None:
        verify(baseline, config.k, chunks, questions)
    measured = set(baseline.retrievers) if baseline is not None else set()
    merged = merge([read_partial(part) for part in parts], config, chunks, questions, measured)
    keys = {key.nodeid: key for key in item_keys(config, questions)}
    unknown = next((nodeid for nodeid in merged.selected if nodeid not in keys), None)
    if unknown is not None:
        raise PartialError(f"{display(parts[0])}: item {unknown} is not an item of {config.where}; merge in the "
                           "checkout the shards ran in")
    selected = [keys[nodeid] for nodeid in merged.selected]
    evaluation = evaluate(config, questions, baseline, merged.fingerprint, merged.runs, selected,
                          update=args.update_baseline, allow_regression=args.allow_regression,
                          places=places(chunks, config.shown), kept=kept_exam(config.baseline, baseline))
    result = Result()
    for key, verdict in evaluation.verdicts.items():
        result.out.append(f"{verdict.status.name} {key.nodeid}: {verdict.lines[0]}")
        result.out += [f"    {line}" for line in verdict.lines[1:]]
    record = evaluation.record
    result.out += summary_lines(view(record), args.tags)
    result.out += evaluation.warnings
    written = Written(result)
    if args.json_path is not None:
        written(Path(args.json_path), encode(record))
    if args.report or in_github_actions():
        explained = missed(config, chunks, questions, recorded_rankings("this run", record.retrievers)
                           ) if any(name == "html" for name, _ in args.report) else None
        _reports(view(record, questions, chunks, described(config, merged.runs, merged.described["embedder"],
                                                           merged.described["database"]), explained),
                 {name: Path(path) for name, path in args.report}, written, result)
    plan = evaluation.update
    if plan is not None:
        result.out += plan.lines
        if plan.record is not None:
            written(config.baseline, encode(plan.record), baseline_read)
        written.failed = written.failed or plan.failed
    result.out += evaluation.failed
    failed = any(verdict.status == Status.FAILED for verdict in evaluation.verdicts.values())
    result.code = FAILED if failed or evaluation.failed or written.failed else OK
    return result


class Written:
    """Writes the requested files: `wrote PATH`, or one error line that fails the command."""

    def __init__(self, result: Result) -> None:
        self.result = result
        self.failed = False

    def __call__(self, path: Path, text: str, since: Snapshot | None = None) -> None:
        try:
            write_atomic(path, text, since=since)
        except ChangedSince:
            self.result.err.append(f"ragretrieval: error: {changed_since(path, f'`{PROG} merge`')}")
            self.failed = True
        except OSError as exc:
            self.result.err.append(f"ragretrieval: error: could not write {display(path)}: {write_problem(path, exc)}")
            self.failed = True
        else:
            self.result.out.append(f"wrote {display(path)}")


def _reports(data: Any, targets: dict[str, Path], written: Written, result: Result) -> None:
    from ..report.formats import write_reports

    write_reports(targets, data, written)
    if in_github_actions():
        from ..report.github import append_summary, error_annotations

        warning = append_summary(data)
        result.out += [warning] if warning else []
        result.out += error_annotations(data)
