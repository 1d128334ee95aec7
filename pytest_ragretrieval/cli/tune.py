"""`ragretrieval tune NAME`: a sweep of one retriever's search space on the `tune` questions, never the gate's.

Every setting of `[retrievers.NAME.tune]` (the grid, or `--budget` of it drawn with `--seed`) is run beside the
configured retriever (runner/sweep.py) and scored on the tune questions; the best one's gain there, its gain
on the gate's questions (which picked nothing), the optimism between them and a p-value that knows a maximum
was taken (scoring/sweep.py) are printed, and its settings as a config snippet (`--out`). The baseline is
never written: the gate judges the new settings on its own questions, as any change.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..config.settings import DB_MODES, Config, load_config
from ..core.errors import ConfigError
from ..core.progress import CallbackOutput, PlainOutput, Progress
from ..core.timing import Phases
from ..core.values import fmt, p_value, signed
from ..database.settings import DbMode
from ..evalset.jsonl import load_chunks, load_evalset
from ..evalset.records import Question
from ..evalset.split import MIN_TUNE, check_sizes, folds, leak_line, leaks, sides
from ..files.paths import display, write_atomic
from ..report.terminal import table
from ..retrievers import RetrieverSpec
from ..retrievers.corpus_tokens import query_tokens
from ..review.sweep import Sweep, sweep_document
from ..runner.resources import database_mode, database_url
from ..runner.runs import Runner
from ..runner.sweep import Setting, cost, space, swept, values, with_settings
from ..scoring.metrics import primary
from ..scoring.sweep import DRAWS, Outcome, judged
from .common import PROG, Result, UsageError, checked_output, positive


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    tune = commands.add_parser(
        "tune", parents=[common], help="sweep a retriever's search space on the tune questions; print the optimism",
        description="Run every setting of [retrievers.NAME.tune] (each parameter = [values]) on the tune "
        "questions ([split] or \"side\": \"tune\"), reusing the cached rankings of NAME's sources, and print each "
        "setting's value there; for the best: its gain on the tune questions, its gain on the gate's (which "
        "picked nothing), the optimism (the difference) and a selection-aware p (the whole sweep's sign-flip "
        "null). Its settings are printed as a config snippet (or written with --out); the baseline never is.",
    )
    tune.add_argument("retriever", metavar="NAME", help="the retriever whose [retrievers.NAME.tune] is swept")
    tune.add_argument("--metric", default=None, metavar="LABEL",
                      help="the metric the settings are ranked by (default: the primary listed metric)")
    tune.add_argument("--budget", type=positive, default=None, metavar="N",
                      help="try N settings drawn at random (with --seed) when the grid holds more")
    tune.add_argument("--seed", type=int, default=0, metavar="N", help="the draw of --budget and of the p-value")
    tune.add_argument("--draws", type=positive, default=DRAWS, metavar="N",
                      help=f"sign-flip draws of the selection-aware p (default: {DRAWS})")
    tune.add_argument("--folds", type=positive, default=None, metavar="K",
                      help="for few tune questions: pick on K-1 folds of them and measure on the one held out, "
                      "K times (the gate's questions are still never tuned on)")
    tune.add_argument("--db", choices=DB_MODES, default=None,
                      help="the database mode, as the gate's --rag-db (the cached rankings are reused under the same)")
    tune.add_argument("--out", default=None, metavar="FILE", help="write the winning settings' snippet here")
    tune.add_argument("--record", default=None, metavar="FILE",
                      help="write the sweep's record here (JSON): commit it with the pull request that applies the "
                      "settings, and the action's comment names the sweep's optimism (it never changes a verdict)")


def run(args: argparse.Namespace) -> Result:
    config = load_config(args.config, Path.cwd())
    spec = _swept(config, args.retriever)
    where = _where(config, spec.name)
    inputs = {"the baseline": config.baseline, "the eval set": config.evalset}
    out = checked_output("--out", args.out, inputs, getattr(args, "config", None))
    record = checked_output("--record", args.record, inputs, getattr(args, "config", None))
    if config.chunkings:
        raise UsageError(f"{config.where} key 'chunkings': {PROG} tune sweeps one chunking; run it with a config "
                         "without [chunkings]")
    settings = space(spec, where, args.budget, args.seed)
    label = _label(config, args.metric)
    chunks = load_chunks(config.chunks_file(f"{PROG} tune"))
    questions = load_evalset(config.evalset, chunks)
    side_of = sides(questions, config.split)
    tune = [q for q in questions if side_of[q.id] == "tune" and q.answerable]
    gate = [q for q in questions if side_of[q.id] == "gate" and q.answerable]
    if not tune:
        raise ConfigError(f"{config.where}: no tune questions ([split] or \"side\": \"tune\" on a line); a sweep "
                          "never tunes on the gate's questions")
    if args.folds is None:
        check_sizes(len(gate), len(tune), 1, config.where)
    elif len(tune) < 2 * args.folds:
        raise UsageError(f"--folds {args.folds}: {len(tune)} answerable tune questions cannot fill {args.folds} "
                         "folds of two; lower --folds or add tune questions")
    found = leaks(questions, side_of, query_tokens(config.cache_dir, config.tokenizer, config.workers,
                                                  [q.query for q in questions], "readonly"))
    err = [line for line in [leak_line(found)] if line]
    runs = _runs(config, spec, settings, chunks, questions, where, args.db)
    names = [spec.name, *(setting.name for setting in settings)]
    on_tune = {name: values(runs[name], label, tune) for name in names}
    on_gate = {name: values(runs[name], label, gate) for name in names}
    lines = [f"{PROG} tune: {spec.name} ({cost(spec)}), {len(settings)} settings on {len(tune)} tune questions, "
             f"ranked by {label}; the gate's {len(gate)} questions picked nothing"]
    lines += _table(spec, settings, label, on_tune)
    outcome = judged([on_tune[n] for n in names[1:]], on_tune[spec.name],
                     [on_gate[n] for n in names[1:]], on_gate[spec.name], draws=args.draws, seed=args.seed)
    best = settings[outcome.best]
    lines += _verdict(best, outcome, label, args.draws)
    if args.folds is not None:
        lines.append(_folds(names, runs, label, tune, args.folds, args.seed, args.draws))
    snippet = _snippet(config, spec, best.changes)
    if record is not None:
        sweep = Sweep(spec.name, label, len(settings), len(tune), len(gate), best.name, _changes(best),
                      outcome.tune_gain, outcome.gate_gain, outcome.p, outcome.naive_p)
        write_atomic(record, json.dumps(sweep_document(sweep), ensure_ascii=False, indent=2) + "\n")
        lines.append(f"the sweep's record, which the pull-request comment names: wrote {display(record)}")
    if out is not None:
        write_atomic(out, "".join(line + "\n" for line in snippet))
        lines.append(f"the best setting as a config snippet (never the baseline): wrote {display(out)}")
    else:
        lines += ["the best setting as a config snippet (never the baseline):", *snippet]
    return Result(out=lines, err=err)


def _swept(config: Config, name: str) -> RetrieverSpec:
    names = [spec.name for spec in config.retrievers]
    if name not in names:
        raise UsageError(f"{name!r} is not a configured retriever; configured: {', '.join(names)}")
    return config.retriever(name)


def _where(config: Config, name: str) -> str:
    dotted = config.where.partition(" [")[2].rstrip("]")
    return f"{config.where.partition(' [')[0]} [{dotted + '.' if dotted else ''}retrievers.{name}]"


def _label(config: Config, metric: str | None) -> str:
    labels = [spec.label for spec in config.metrics]
    if metric is None:
        return primary(labels)
    if metric not in labels:
        raise UsageError(f"--metric {metric}: not a listed metric; listed: {', '.join(labels)}")
    return metric


def _runs(config: Config, spec: RetrieverSpec, settings: Sequence[Setting], chunks: Any,
          questions: Sequence[Question], where: str, db: DbMode | None) -> dict[str, Any]:
    """Every setting's run, beside the configured retriever's, over the whole eval set (the gate's cache
    key): the tune questions pick, the gate's only measure. Nothing is cached (readonly)."""
    swept_config = with_settings(config, spec, settings, where)
    quiet = PlainOutput()
    phases = Phases()
    terminal = CallbackOutput(lambda text: print(text, file=sys.stderr), lambda text: None, False)
    runner = Runner(swept_config, chunks, questions, db_mode=database_mode(db, config.db, None),
                    dsn=database_url(None), cache_mode="readonly", phases=phases, out=quiet)
    names = [spec.name, *(setting.name for setting in settings)]
    try:
        runner.plan(names)
        with Progress(terminal, f"tune {spec.name}", len(names)) as bar:
            return swept(names, runner.run, bar.advance)
    finally:
        runner.finish()
        runner.close()
        terminal.line(_phases(phases, spec.name))



def _phases(phases: Phases, name: str) -> str:
    """The runner's phases, the settings' own builds and runs summed into one: a database start or an
    embedding shows here."""
    own = [phase for phase in phases.seconds if phase.partition(" ")[2].startswith(f"{name}~")]
    rest = [f"{phase} {seconds:.2f}s" for phase, seconds in phases.seconds.items() if phase not in own]
    settings = sum(phases.seconds[phase] for phase in own)
    total = sum(phases.seconds.values())
    return f"rag: time: {', '.join([*rest, f'the settings {settings:.2f}s'])}; total {total:.2f}s"


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False).replace(",", ", ").replace(",  ", ", ")


def _table(spec: RetrieverSpec, settings: Sequence[Setting], label: str,
           on_tune: Mapping[str, Sequence[float]]) -> list[str]:
    keys = list(spec.tune)
    rows = [(spec.name, [_shown(spec.table.get(key, "default")) for key in keys])]
    rows += [(setting.name, [_shown(setting.changes[key]) for key in keys]) for setting in settings]
    means = {name: math.fsum(on_tune[name]) / len(on_tune[name]) for name, _ in rows}
    ordered = sorted(rows, key=lambda row: -means[row[0]])  # stable: equal values keep the order tried
    return table(["setting", *keys, f"{label} (tune)"],
                 [[name + (" (as configured)" if name == spec.name else ""), *cells, fmt(means[name])]
                  for name, cells in ordered])


def _changes(best: Setting) -> str:
    return ", ".join(f"{key} = {_shown(value)}" for key, value in best.changes.items())


def _verdict(best: Setting, outcome: Outcome, label: str, draws: int) -> list[str]:
    changes = _changes(best)
    gate = ("no gate questions" if outcome.gate_gain is None
            else f"gain on the gate's questions {signed(outcome.gate_gain)}")
    optimism = "" if outcome.optimism is None else f"; optimism {signed(outcome.optimism)} (tune gain - gate gain)"
    return [f"best: {best.name} ({changes}): {label} gain on the tune questions {signed(outcome.tune_gain)}, "
            f"selection-aware p = {p_value(outcome.p)} over the whole sweep ({draws} sign flips; as if it were the "
            f"only setting tried: p = {p_value(outcome.naive_p)}); {gate}{optimism}"]


def _folds(names: Sequence[str], runs: Mapping[str, Any], label: str, tune: Sequence[Question], count: int,
           seed: int, draws: int) -> str:
    """K repeated splits of the tune questions: the best picked on K-1 folds, measured on the one held out."""
    picked_gain: list[float] = []
    held_gain: list[float] = []
    for picked, held in folds(tune, count, seed):
        found = judged([values(runs[n], label, picked) for n in names[1:]], values(runs[names[0]], label, picked),
                       [values(runs[n], label, held) for n in names[1:]], values(runs[names[0]], label, held),
                       draws=min(draws, 999), seed=seed)
        assert found.gate_gain is not None
        picked_gain.append(found.tune_gain)
        held_gain.append(found.gate_gain)
    tuned, kept = math.fsum(picked_gain) / count, math.fsum(held_gain) / count
    return (f"{count} folds of the tune questions: mean gain where picked {signed(tuned)}, on the fold held out "
            f"{signed(kept)}, optimism {signed(tuned - kept)}" + (f" (fewer than {MIN_TUNE} tune questions: "
                                                                   "a rough estimate)" if len(tune) < MIN_TUNE else ""))


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def _snippet(config: Config, spec: RetrieverSpec, changes: Mapping[str, Any]) -> list[str]:
    dotted = config.where.partition(" [")[2].rstrip("]")
    header = f"[{dotted + '.' if dotted else ''}retrievers.{spec.name}]"
    lines = [header]
    for key, value in changes.items():
        was = f"  # was {_toml(spec.table[key])}" if key in spec.table else "  # was the default"
        lines.append(f"{key} = {_toml(value)}{was}")
    return lines
