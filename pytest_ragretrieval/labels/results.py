"""A results file (or the baseline) checked against today's fixtures before its rankings are read for
labels (`ragretrieval suspects`, `ragretrieval pool`): rankings of another eval set or corpus label nothing."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..baseline.format import Baseline
from ..config.outputs import inputs
from ..config.settings import Config
from ..core.errors import BaselineError
from ..evalset.records import Chunk, Question
from ..files.paths import absolute, display, output_problem

FRESH = "rag-results.json"
"""Where advice writes fresh results when the file read cannot be written over (the baseline)."""


def check_known(
    results: Baseline, questions: Mapping[str, Question], chunks: Mapping[str, Chunk], config: Config,
    *, skip_removed: bool = False,
) -> list[str]:
    """Results must match today's fixtures by id; otherwise they describe another eval set or corpus.
    With `skip_removed`, a question the eval set no longer holds is passed over, as the gate passes
    over a removed question, and returned (sorted) instead of refused."""
    rerun = fresh_results(results.path, config)
    removed: set[str] = set()
    for name, recorded in sorted(results.retrievers.items()):
        for qid, entry in sorted(recorded.questions.items()):
            if qid not in questions and skip_removed:
                removed.add(qid)
                continue
            if qid not in questions:
                raise BaselineError(
                    f"{display(results.path)}: question {qid!r} is not in {display(config.evalset)}; "
                    f"the eval set changed since the results were written; {rerun}"
                )
            for cid in entry.ranking:
                if cid not in chunks:
                    raise BaselineError(
                        f"{display(results.path)}: chunk {cid!r} (retriever {name!r}, question {qid!r}) is not in "
                        f"{display(config.chunks_file('ragretrieval suspects'))}; the corpus changed since the "
                        f"results were written; {rerun}"
                    )
    return sorted(removed)


def fresh_results(path: Path, config: Config) -> str:
    """How to get results that match today's files. Advice never names an input of the run as an output:
    `--rag-json baselines/retrieval.json` would overwrite the baseline (the gate refuses it)."""
    if output_problem(path, inputs(config)) is None:
        return f"rerun `pytest --rag-eval --rag-json {display(path)}`"
    again = "record the baseline again with `pytest --rag-update-baseline`, or " \
        if absolute(path) == absolute(config.baseline) else ""
    return f"{again}write fresh results elsewhere (`pytest --rag-eval --rag-json {FRESH}`) and pass those"
