"""The command line as pytest sees it before this plugin is loaded.

pytest picks its rootdir before it loads plugins, so it cannot know that `--rag-json` takes a
value: in `--rag-json /abs/results.json` (a space, not `=`) it takes an existing path for a test
path, and a rootdir above both that path and the project moves the whole run (its ini file, node
ids, and the gate's pyproject.toml). plugin.py has pytest choose again, with this plugin's options
known, and the run stops with one line when the answer differs.
"""
from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from ..report import formats
from ..shards.assignment import parse_shard

ALLOW_REGRESSION_ALONE = (
    "--rag-allow-regression only applies to --rag-update-baseline (it lets an update record values below the "
    "baseline's); add --rag-update-baseline, or drop it"
)
"""Without --rag-update-baseline the flag would change nothing: said, rather than ignored."""


def add_shard_option(group: Any) -> None:
    """`--rag-shard I/N` in the gate's option group (pytest's `OptionGroup`): see shards.py."""
    group.addoption("--rag-shard", action="store", dest="rag_shard", default=None, metavar="I/N", type=parse_shard,
                    help="run shard I of N of the questions, write a partial record for `ragretrieval merge`")


def option_problem(option: Any) -> str | None:
    """Why the gate's flags (pytest's parsed options) cannot run together, as one line, or None."""
    if option.rag_allow_regression and not option.rag_update_baseline:
        return ALLOW_REGRESSION_ALONE
    if option.rag_shard is None:
        return None
    if option.rag_update_baseline:
        return ("--rag-shard records a partial run and judges nothing, so it records no baseline; run the shards "
                "with --rag-eval, then `ragretrieval merge PART... --update-baseline`")
    if not option.rag_eval:
        return "--rag-shard only applies to --rag-eval; add --rag-eval, or drop it"
    if option.rag_json is None:
        return ("--rag-shard needs --rag-json PATH: the shard's partial record is written there for "
                "`ragretrieval merge`; add --rag-json shard-I.json")
    return None


def value_flags() -> tuple[str, ...]:
    """This plugin's options that take a value: what pytest's first look at the arguments does not know."""
    reports = (fmt.flag for fmt in formats.FORMATS.usable().values())
    return ("--rag-config", "--rag-json", *reports, "--rag-db", "--rag-db-url", "--rag-cache", "--rag-shard")


def spaced_paths(args: Sequence[str], flags: Iterable[str]) -> list[tuple[str, str]]:
    """(flag, value) for each of `flags` written with its value as the next argument, where that
    value names an existing path: what pytest's first look at the arguments takes for a test path."""
    wanted = set(flags)
    return [
        (flag, value) for flag, value in zip(args, args[1:], strict=False)
        if flag in wanted and not value.startswith("-") and os.path.exists(value)
    ]


def rootdir_problem(
    args: Sequence[str], known: Callable[[], Any], determine_setup: Callable[..., Any], invocation_dir: Path,
    chosen: Path,
) -> str | None:
    """The one line when an option's value moved pytest's rootdir, else None.

    `known` parses the arguments with this plugin's options; `determine_setup` is pytest's own
    choice of rootdir. A pytest whose choice cannot be asked this way (its signature changed)
    gets no check rather than a false one.
    """
    spaced = spaced_paths(args, value_flags())
    if not spaced:
        return None
    parsed = known()
    given = {"inifile": parsed.inifilename, "override_ini": parsed.override_ini, "args": parsed.file_or_dir,
             "rootdir_cmd_arg": parsed.rootdir or None, "invocation_dir": invocation_dir}
    accepted = inspect.signature(determine_setup).parameters
    try:
        expected = determine_setup(**{name: value for name, value in given.items() if name in accepted})[0]
    except Exception:  # pytest's own UsageError (a missing --rootdir): pytest reports it itself
        return None
    if Path(expected) == Path(chosen):
        return None
    flag, value = spaced[0]
    return (
        f"{flag} {value}: pytest took this existing path for a test path when it chose its rootdir ({chosen} "
        f"instead of {expected}); write {flag}={value}, with '='"
    )
