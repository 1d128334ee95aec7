"""The partial records of a sharded run combined into the runs of one unsharded run.

Refused, one line each: partials of different configurations, a shard missing or given twice, a
partial whose questions are not its shard's share of the eval set, partials measured under another
configuration than the repository's. Each retriever's result is then scored again over all
questions from the shards' rankings and latencies (`record.run.scored`, as a run scores), so
every mean, tag and count is the unsharded run's to the bit; the per-question values the shards
recorded are checked against it. Diagnostics (an index's recall, a reranker's pool recall) are
aggregates a shard computed over its own questions: they are kept per shard (`ann_recall@10 shard
2/3`), not recombined.
"""
from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..baseline.fingerprint import fingerprint
from ..config.settings import Config
from ..core.errors import RetrieverError
from ..evalset.corpus import chunking_share
from ..evalset.records import Chunk, Question, Span
from ..files.paths import display
from ..record.run import RetrieverRun, scored
from ..scoring.evaluate import Run, places
from .assignment import Shard
from .partial import Partial, PartialError


@dataclass(frozen=True)
class Merged:
    """What judging all questions needs, as the unsharded session would hold it."""

    fingerprint: Mapping[str, Any] = field(hash=False)
    runs: Mapping[str, Run] = field(hash=False)
    selected: tuple[str, ...]
    described: Mapping[str, str] = field(hash=False)


def first_difference(a: Any, b: Any, where: str) -> str | None:
    """The JSON path of the first place two decoded values differ, or None when they are equal."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            found = first_difference(a.get(key), b.get(key), f"{where}.{key}")
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return next((f for i, (x, y) in enumerate(zip(a, b, strict=True))
                     if (f := first_difference(x, y, f"{where}[{i}]")) is not None), None)
    return None if a == b else where


def _whole(partials: Sequence[Partial]) -> None:
    """One configuration, every shard of one count once."""
    first = partials[0]
    for other in partials[1:]:
        if other.configuration != first.configuration:
            where = (first_difference(first.fingerprint, other.fingerprint, "fingerprint")
                     or next(key for key in ("metrics", "depth", "selected")
                             if getattr(first, key) != getattr(other, key)))
            raise PartialError(
                f"{display(other.path)}: another configuration than {display(first.path)}'s ({where} differs): "
                "merge the shards of one run, all run from one commit with the same options"
            )
    count = first.shard.count
    seen: dict[Shard, Partial] = {}
    for partial in partials:
        if partial.shard.count != count:
            raise PartialError(f"{display(partial.path)}: shard {partial.shard} of a run in {partial.shard.count} "
                               f"shards, {display(first.path)} is shard {first.shard}; merge the shards of one run")
        if partial.shard in seen:
            raise PartialError(f"{display(partial.path)} and {display(seen[partial.shard].path)} are both shard "
                               f"{partial.shard}; pass each shard once")
        seen[partial.shard] = partial
    missing = [str(Shard(i, count)) for i in range(1, count + 1) if Shard(i, count) not in seen]
    if missing:
        raise PartialError(f"shard {', '.join(missing)} missing: got {', '.join(str(s) for s in sorted(seen))}; "
                           f"pass all {count} partial records of the run")


def _share(partial: Partial, questions: Sequence[Question], config: Config) -> None:
    """The partial ran its shard's questions of this eval set, no more and no fewer."""
    ran = set(partial.questions)
    ids = {question.id for question in questions}
    foreign = [qid for qid in partial.questions if qid not in ids or not partial.shard.holds(qid)]
    if foreign:
        whose = "not in " + display(config.evalset) if foreign[0] not in ids else "of another shard"
        raise PartialError(f"{display(partial.path)}: question {foreign[0]!r} is {whose}; merge the shards in the "
                           "checkout they ran in")
    lacking = [q.id for q in questions if partial.shard.holds(q.id) and q.id not in ran]
    if lacking:
        raise PartialError(f"{display(partial.path)}: shard {partial.shard} lacks question {lacking[0]!r} of "
                           f"{display(config.evalset)}; merge the shards in the checkout they ran in")


def _repository(partial: Partial, config: Config, chunks: Sequence[Chunk], questions: Sequence[Question]) -> None:
    """The partial was measured under the repository's configuration, eval set and corpus."""
    ours = {"k": config.k, "depth": config.depth, "metrics": tuple(spec.label for spec in config.metrics)}
    theirs = {"k": partial.k, "depth": partial.depth, "metrics": partial.metrics}
    where = next((key for key in ours if ours[key] != theirs[key]), None)
    if where is None and set(partial.setup) == _described(partial, config):
        ours_found = json.loads(json.dumps(fingerprint(config, chunks, questions, partial.setup)))  # tuples as lists
        where = first_difference(ours_found, partial.fingerprint, "fingerprint")
    elif where is None:
        where = "setup"
    if where is not None:
        raise PartialError(f"{display(partial.path)}: measured under another configuration than {config.where} "
                           f"({where} differs); merge in the checkout the shards ran in")


def _described(partial: Partial, config: Config) -> set[str] | None:
    """The retrievers whose set-up a partial must hold: those it ran and their sources (None: it names
    a retriever the config lacks)."""
    names = {*partial.runs, *partial.unavailable, *partial.errors}
    known = {spec.name for spec in config.retrievers}
    return set(config.reading(names)) if names <= known else None


def merge(
    partials: Sequence[Partial], config: Config, chunks: Sequence[Chunk], questions: Sequence[Question],
    measured: Collection[str] = (),
) -> Merged:
    """The unsharded run the partials add up to, or PartialError naming the first problem. `measured`: the
    retrievers the baseline holds values of, which ran in this configuration; one that every shard calls
    unavailable is a failure, not a skip (`unavailable` is not part of the configuration's digest)."""
    ordered = sorted(partials, key=lambda p: p.shard)
    _whole(ordered)
    for partial in ordered:
        _share(partial, questions, config)
    _repository(ordered[0], config, chunks, questions)
    names = {name for p in ordered for name in (*p.runs, *p.unavailable, *p.errors)}
    spans = places(chunks, config.shown)
    runs = {spec.name: _run(spec.name, ordered, chunking_share(spec.chunking, chunks, questions)[1] if config.chunkings
                            else questions, config, spec.name in measured, spans)
            for spec in config.retrievers if spec.name in names}
    return Merged(ordered[0].fingerprint, runs, ordered[0].selected, ordered[0].described)


def _run(name: str, partials: Sequence[Partial], questions: Sequence[Question], config: Config,
         measured: bool, spans: Mapping[str, Span] | None) -> Run:
    failed = next((p for p in partials if name in p.errors), None)
    if failed is not None:
        return Run(error=RetrieverError(failed.errors[name]))
    skipped = [p for p in partials if name in p.unavailable]
    if len(skipped) == len(partials) and measured:
        return Run(error=RetrieverError(
            f"retriever {name!r} could not run on any of the {len(partials)} shards ({skipped[0].unavailable[name]}), "
            "but the baseline holds its values: a merge does not skip a retriever the baseline measured; run the "
            "shards where it runs"))
    if len(skipped) == len(partials):
        return Run(skipped=skipped[0].unavailable[name])
    if skipped:
        return Run(error=RetrieverError(
            f"retriever {name!r} could not run on shard {skipped[0].shard} ({skipped[0].unavailable[name]}) but ran "
            "on others; run every shard where it runs"))
    absent = next((p for p in partials if name not in p.runs), None)
    if absent is not None:
        raise PartialError(f"{display(absent.path)}: retriever {name!r} did not run there but did on other shards; "
                           "merge the shards of one run")
    shard_runs = [(p, p.runs[name]) for p in partials]
    whole = RetrieverRun(
        depth=partials[0].depth, under=partials[0].configuration,
        rankings={qid: ranking for _, run in shard_runs for qid, ranking in run.rankings.items()},
        latency_ms={qid: took for _, run in shard_runs for qid, took in run.latency_ms.items()},
        diagnostics={f"{key} shard {p.shard}": value
                     for p, run in shard_runs for key, value in run.diagnostics.items()},
        notes=tuple(dict.fromkeys(note for _, run in shard_runs for note in run.notes)),
        loads_ms={f"{what} shard {p.shard}": took for p, run in shard_runs for what, took in run.loads_ms.items()},
    )
    merged = scored(name, whole, questions, config.shown, spans)
    assert merged.result is not None
    for partial, run in shard_runs:
        _agrees(partial, name, run, {q.id: q.values for q in merged.result.questions})
    return merged


def _agrees(partial: Partial, name: str, run: RetrieverRun, values: Mapping[str, Mapping[str, float]]) -> None:
    for qid, recorded in run.values.items():
        if dict(recorded) != dict(values[qid]):
            raise PartialError(f"{display(partial.path)}: retrievers.{name}.questions.{qid}.metrics disagree with "
                               "its ranking scored again; the file was edited or another metric version wrote it")
