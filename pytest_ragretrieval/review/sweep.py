"""A sweep's record (`ragretrieval tune --record`), as the pull-request comment names it (the Tuning page).

A sweep's best setting is picked on the tune questions, so its gain there flatters it; the gain on the gate's
questions, which picked nothing, is what a reviewer should expect. The pull request that applies the tuned
settings is judged by the gate as any change; its comment names the sweep's optimism when the sweep left a
record, and nothing reads the record but the comment: it never changes a verdict. Pure.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from ..core.values import p_value, signed
from ..files.jsonshape import Node

KIND = "ragretrieval-sweep"
VERSION = 1


@dataclass(frozen=True)
class Sweep:
    """What a sweep found, as `ragretrieval tune` printed it."""

    retriever: str
    metric: str
    settings: int
    """How many settings were tried beside the configured one."""
    tune_questions: int
    gate_questions: int
    best: str
    """The best setting's name (`hybrid~7`)."""
    changes: str
    """Its settings, as the config snippet sets them (`rrf_k = 20, weights = [1, 0.5]`)."""
    tune_gain: float
    gate_gain: float | None
    """None: the eval set has no gate questions that measured it."""
    p: float
    """The selection-aware p of the tune gain."""
    naive_p: float

    @property
    def optimism(self) -> float | None:
        return None if self.gate_gain is None else self.tune_gain - self.gate_gain


def sweep_document(sweep: Sweep) -> dict[str, Any]:
    return {"kind": KIND, "version": VERSION, **asdict(sweep), "optimism": sweep.optimism}


def parse_sweep(doc: Any) -> Sweep:
    """The inverse of `sweep_document`; ShapeProblem naming the JSON path for anything else."""
    node = Node(doc)
    node.exactly("kind", "version", *(field.name for field in fields(Sweep)), "optimism")
    if node["kind"].value != KIND:
        raise node["kind"].problem(f"must be {KIND!r}")
    node["version"].integer(VERSION, VERSION)
    counts = {name: node[name].integer(0, 2**31 - 1) for name in ("settings", "tune_questions", "gate_questions")}
    gate = None if node["gate_gain"].absent else node["gate_gain"].number()
    sweep = Sweep(retriever=node["retriever"].text(), metric=node["metric"].metric_key(), **counts,
                  best=node["best"].text(), changes=node["changes"].text(), tune_gain=node["tune_gain"].number(),
                  gate_gain=gate, p=_probability(node["p"]), naive_p=_probability(node["naive_p"]))
    optimism = None if node["optimism"].absent else node["optimism"].number()
    if (optimism is None) != (sweep.optimism is None) or (
            optimism is not None and sweep.optimism is not None and abs(optimism - sweep.optimism) > 1e-9):
        raise node["optimism"].problem("disagrees with tune_gain - gate_gain")
    return sweep


def _probability(node: Node) -> float:
    value = node.number()
    if not 0.0 <= value <= 1.0:
        raise node.problem(f"must be a p-value from 0 to 1, got {value:g}")
    return value


def sweep_line(sweep: Sweep) -> str:
    """The sweep in one line, in English (the comment escapes it and puts it under its own heading)."""
    gate = ("no gate questions measured it" if sweep.gate_gain is None
            else f"on the gate's {sweep.gate_questions} questions, which picked nothing, {signed(sweep.gate_gain)}")
    optimism = "" if sweep.optimism is None else f"; optimism {signed(sweep.optimism)} (tune gain - gate gain)"
    return (f"ragretrieval tune {sweep.retriever}: {sweep.settings} settings on {sweep.tune_questions} tune "
            f"questions, ranked by {sweep.metric}; best {sweep.best} ({sweep.changes}): {sweep.metric} gain on the "
            f"tune questions {signed(sweep.tune_gain)} (selection-aware p = {p_value(sweep.p)}; as if it were the only "
            f"setting tried: p = {p_value(sweep.naive_p)}), {gate}{optimism}")
