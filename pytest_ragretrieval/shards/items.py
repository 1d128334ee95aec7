"""The items of one shard (`--rag-shard I/N`): they say what was measured and judge nothing.

A shard holds a share of the questions, so its means are not the run's: every verdict is
`ragretrieval merge`'s, over all the shards. An item passes unless its retriever failed (an error
fails it, as in any run; a retriever that cannot run here is skipped); a question item of another
shard's question is skipped.
"""
from __future__ import annotations

from ..core.values import fmt
from ..gate.checks import Outcome
from ..gate.items import ItemKey, Skip
from ..scoring.evaluate import Run, latency_summary
from .assignment import Shard, shard_of

LATER = "judged by `ragretrieval merge` over all shards"


def shard_outcome(key: ItemKey, run: Run, shard: Shard) -> Outcome:
    """What one item of shard `shard` reports; raises Skip as a run does."""
    if run.skipped is not None:
        raise Skip(run.skipped)
    if run.error is not None:
        return Outcome(False, str(run.error))
    assert run.result is not None
    where = f"shard {shard}, {len(run.result.questions)} of the questions"
    if key.kind == "latency":
        summary = latency_summary(run.result)
        return Outcome(True, f"latency of {key.retriever!r}: p50 {summary['p50']:g} ms, p95 {summary['p95']:g} ms "
                       f"on {where}; {LATER}")
    if key.kind == "question":
        found = run.result.question(key.name)
        if found is None:
            raise Skip(f"question {key.name} is in shard {shard_of(key.name, shard.count)}/{shard.count}, not {shard}")
        shown = ", ".join(f"{label} {fmt(value)}" for label, value in found.values.items())
        return Outcome(True, f"question {key.name} of {key.retriever!r}: {shown}; {LATER}")
    if key.kind == "segment":
        segment, label = key.segment
        return Outcome(True, f"segment {segment}: {label} of {key.retriever!r} on {where}; {LATER}")
    value = run.result.metrics.get(key.name)
    return Outcome(True, f"{key.name} of {key.retriever!r}: {fmt(value)} on {where}; {LATER}")

