"""A sweep's runs (`ragretrieval tune`): each setting of one retriever's search space run as a retriever of
its own beside the configured one, in one runner, so that what the settings share is computed once.

A setting is the retriever's table with some parameters replaced (`[retrievers.NAME.tune]`), parsed by its
type as any table is, and run under the name `NAME~N`. Its sources are the configured ones: a fusion's
setting reads their rankings from the reuse cache (runner/reuse.py) or the session's store
(runner/store.py), so a fusion-only sweep embeds nothing and starts no database while those are cached.
The settings' runs are never cached: a sweep leaves the cache as it found it.
"""
from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..config.settings import Config
from ..core.errors import ConfigError
from ..evalset.records import Question
from ..retrievers import RetrieverSpec, parse_spec
from ..scoring.evaluate import Run

COSTS = {
    "hybrid": "fusion only: each setting fuses the sources' rankings again, no embedding, no database",
    "rerank": "each setting reranks its source's candidates again, the reranker's scores cached",
    "bm25": "each setting indexes the corpus again, no database",
    "vector": "each setting searches the vectors again: the database starts where the rankings are not cached",
    "table": "each setting queries the team's database again, with its search settings in effect",
    "sql": "each setting queries the team's database again, with its search settings in effect",
}
"""What one setting costs, by the type of the retriever swept (a `python` retriever: its factory's calls)."""


@dataclass(frozen=True)
class Setting:
    name: str
    """The name it runs under: `NAME~N`."""
    changes: Mapping[str, Any]
    """The parameters it sets, in the order the search space lists them."""


def cost(spec: RetrieverSpec) -> str:
    return COSTS.get(spec.type, "each setting builds the retriever and asks every question again")


def space(spec: RetrieverSpec, where: str, budget: int | None = None, seed: int = 0) -> list[Setting]:
    """Every combination of the search space (the grid), or `budget` of them drawn with `seed` when the grid
    is larger; each parsed by the retriever's type, so a bad value is one line naming it."""
    if not spec.tune:
        raise ConfigError(f"{where}: declares no search space; add [{where.rpartition(' ')[2]}.tune] with "
                          "parameter = [values], e.g. rrf_k = [10, 30, 60, 100]")
    keys = list(spec.tune)
    grid = [dict(zip(keys, values, strict=True)) for values in itertools.product(*(spec.tune[k] for k in keys))]
    if budget is not None and budget < len(grid):
        picked = sorted(random.Random(seed).sample(range(len(grid)), budget))
        grid = [grid[i] for i in picked]
    found = [Setting(f"{spec.name}~{number}", changes) for number, changes in enumerate(grid, 1)]
    for setting in found:
        _spec(spec, setting, where)
    return found


def _spec(spec: RetrieverSpec, setting: Setting, where: str) -> RetrieverSpec:
    shown = ", ".join(f"{key} = {value!r}" for key, value in setting.changes.items())
    try:
        return parse_spec(setting.name, {**spec.table, **setting.changes}, f"{where}.tune ({shown})", None)
    except ConfigError as exc:
        raise ConfigError(str(exc)) from None


def with_settings(config: Config, spec: RetrieverSpec, settings: Sequence[Setting], where: str) -> Config:
    """The config with each setting added as a retriever of its own (its latency never judged)."""
    added = tuple(replace(_spec(spec, setting, where), max_latency_ms=None) for setting in settings)
    return replace(config, retrievers=(*config.retrievers, *added))


def values(run: Run, label: str, questions: Sequence[Question]) -> list[float]:
    """A run's `label` on each of `questions`, in their order (0 where a question has none: a failed run
    is refused before this)."""
    assert run.result is not None
    found = {q.id: q.values.get(label, 0.0) for q in run.result.questions}
    return [found.get(q.id, 0.0) for q in questions]


def swept(
    names: Sequence[str], run: Callable[[str], Run], advance: Callable[[], None],
) -> dict[str, Run]:
    """Each of `names` run once, in order, the progress advanced after each; a failed run is one line."""
    found: dict[str, Run] = {}
    for name in names:
        ran = run(name)
        if ran.result is None:
            why = ran.error or ran.skipped
            raise ConfigError(f"retriever {name!r} could not run in the sweep: {why}")
        found[name] = ran
        advance()
    return found
