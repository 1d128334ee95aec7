"""Where a run will write, checked against what it reads before anything runs.

An output that is an input (`--rag-json baselines/retrieval.json`), sits under a file, or lies in
a folder that cannot be written is one line and no run: the verdict of a long run must not be
lost to a path that was wrong from the start, and no output may overwrite what the gate reads.
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..core.errors import ConfigError, OptionError
from ..files.paths import absolute, display, file_above, output_problem
from .settings import Config


def inputs(config: Config) -> dict[str, Path]:
    """Every file the run reads, by the name messages give it: the chunks, the eval set (its
    `relevant_text` snippets are matched in the chunks), the config, the baseline, and each file a
    retriever type declares (`inputs(params, root)`: a user dictionary, a run file)."""
    found = {
        "the chunks file": config.chunks,
        "the documents": config.documents,
        "the eval set": config.evalset,
        "the config file": config.source,
        "the baseline": config.baseline,
    }
    for spec in config.retrievers:
        declared = getattr(spec.module, "inputs", None)
        if declared is not None:
            for key, path in declared(spec.params, config.root).items():
                found[f"retriever {spec.name!r}'s {key}"] = path
    return {what: path for what, path in found.items() if path is not None}


def check_outputs(config: Config, outputs: Mapping[str, Path], update: bool) -> None:
    """Raise one line for the first output (by option) that cannot be written safely."""
    read = inputs(config)
    claimed: dict[Path, str] = {}
    for option, path in outputs.items():
        problem = output_problem(path, read)
        if problem is None and absolute(path) in claimed:
            problem = f"is also given to {claimed[absolute(path)]}; give each file its own path"
        if problem is not None:
            raise OptionError(f"{option} {display(path)}: {problem}")
        claimed[absolute(path)] = option
    if update:
        others = {what: path for what, path in read.items() if what != "the baseline"}
        problem = output_problem(config.baseline, others)
        if problem is not None:
            raise ConfigError(f"{config.where} key 'baseline': {display(config.baseline)}: {problem}")
    blocking = file_above(config.cache_dir / "entry")
    if blocking is not None:
        raise ConfigError(f"{config.where} key 'cache': {display(blocking)} is a file; give a folder")
