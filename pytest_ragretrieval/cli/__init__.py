"""`ragretrieval`: the labelling, review and pull-request helpers that sit beside the pytest gate.

`find` is the tutorial's `find_ids`, `suspects` hunts for missing gold labels (pitfall 2), `pool`
turns the unjudged top k into a labelling queue and folds the labels back, and
`diff` compares two results files, checking first that they are comparable (pitfalls 3-4), or
says whether a pull request's baseline lowers the bar (`--fail-on-lower`). `pr-check` decides
the pull request's baseline check (label, fork) and `comment` prints its sticky comment.
`merge` judges the partial records of a sharded run once; `schema` prints the JSON Schema of the
results or the baseline; `explain` says why a question missed (tokens, shared terms, ranks, fused scores);
`tune` sweeps a retriever's search space on the tune questions and says how much the best one flatters itself.
No model or database is loaded (`explain` alone ranks, with bm25 and run files; `pool --judge` alone loads
numpy, for its cache, and calls the LLM it names), but by `tune`, which runs retrievers as the gate does.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..core.errors import ConfigError, RagError, describe_exception
from ..files.paths import display
from . import comment, diff, explain, find, merge, pool, pr_check, relabel, schema, suspects, tune
from .common import BUG, FAILED, OK, PROG, USAGE, Command, Parser, Result, UsageError

COMMANDS: dict[str, Command] = {
    "find": find, "suspects": suspects, "pool": pool, "relabel": relabel, "diff": diff, "pr-check": pr_check,
    "comment": comment, "merge": merge, "schema": schema, "explain": explain, "tune": tune,
}
"""The registry: a command is one module with `register(commands, common)` and `run(args)`, and one line here."""


EPILOG = """\
exit status:
  0  success (find: a chunk matched; suspects: listed, even when none;
     pool: the queue written, or the labels applied;
     diff: comparable and no metric dropped, or with --fail-on-lower: the bar
     was not lowered; pr-check: the baseline check passed; comment: printed;
     merge: every item passed; schema: printed; explain: explained;
     tune: swept)
  1  find: no chunk matched; diff: a retriever's metric dropped (over the
     questions both files share), or the yardsticks differ so the numbers are
     not comparable; with
     --fail-on-lower: a value lowered, an entry removed or a setting loosened;
     pr-check: the bar was lowered without the approval label; merge: an item
     failed, there is no baseline to judge against, or a file was not written;
     relabel --apply: a proposal is ambiguous (without --accept-ambiguous) or a
     label is found nowhere, so nothing was written
  2  usage error, or a bad config, fixture line, results, partial or event file
  3  an unexpected error: a bug of ragretrieval (please report the line)

every command reads [tool.ragretrieval] of ./pyproject.toml, or the TOML file
given with --config (keys at top level, as with pytest --rag-config).
"""


def build_parser() -> Parser:
    common = Parser(add_help=False)
    common.add_argument(
        "--config", metavar="PATH", default=argparse.SUPPRESS,
        help="TOML file with the settings at top level (default: [tool.ragretrieval] of ./pyproject.toml)",
    )
    parser = Parser(
        prog=PROG, description="Labelling, review and pull-request helpers for pytest-ragretrieval.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", metavar="PATH", default=None, help=argparse.SUPPRESS)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    for module in COMMANDS.values():
        module.register(commands, common)
    return parser


def dispatch(args: argparse.Namespace) -> Result:
    return COMMANDS[args.command].run(args)


def emit(result: Result) -> int:
    for line in result.out:
        print(line)
    for line in result.err:
        print(line, file=sys.stderr)
    sys.stdout.flush()
    return result.code


def main(argv: list[str] | None = None) -> int:
    """Run one command; every error is one `ragretrieval: error: ...` line and exit status 2."""
    try:
        return emit(dispatch(build_parser().parse_args(argv)))
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else OK
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return FAILED
    except ConfigError as exc:
        message = str(exc).replace("--rag-config PATH", "--config PATH")
    except (UsageError, RagError) as exc:
        message = str(exc)
    except OSError as exc:
        message = f"{display(Path(exc.filename))}: {exc.strerror}" if exc.filename else str(exc)
    except Exception as exc:
        print(f"{PROG}: internal error: {' '.join(describe_exception(exc).split())}; please report it", file=sys.stderr)
        return BUG
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return USAGE
