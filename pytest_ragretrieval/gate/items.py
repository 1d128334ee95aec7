"""The gate's items: which exist for a config and eval set, and how their node ids read."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # a pytest-xdist worker imports this module for ItemKey alone: it loads no config
    from ..config.settings import Config
    from ..evalset.records import Question


ItemKind = Literal["metric", "question", "latency", "segment"]
"""A metric's item, a question's (`fail_on = ["question"]`), the latency item (`max_latency_ms`), or a metric's
item over one segment value (`segments`: name `KEY:VALUE::LABEL`)."""


@dataclass(frozen=True, order=True)
class ItemKey:
    """One collected item: `rag::<retriever>::<name>`, where name is a metric label, `question::<id>` or
    `segment::<key>:<value>::<label>`."""

    retriever: str
    kind: ItemKind
    name: str

    @property
    def nodeid_name(self) -> str:
        if self.kind == "metric":
            return self.name
        if self.kind == "latency":
            return "latency"
        return f"{self.kind}::{self.name}"

    @property
    def segment(self) -> tuple[str, str]:
        """A segment item's (segment name `KEY:VALUE`, metric label)."""
        name, _, label = self.name.rpartition("::")
        return name, label

    @property
    def nodeid(self) -> str:
        return f"rag::{self.retriever}::{self.nodeid_name}"


class Skip(Exception):
    """Raised for an item whose retriever cannot run here: pytest reports it skipped, not failed."""


def item_keys(config: Config, questions: Sequence[Question], base: Sequence[Question] = ()) -> list[ItemKey]:
    """Per retriever: one item per metric, one per segment value (today's or the base's exam, `base`) and
    metric, one per answerable question with fail_on "question", and a latency item when `max_latency_ms`
    is set."""
    from ..evalset.segments import members

    keys: list[ItemKey] = []
    segments = list(members(config.segments, questions, base)) if config.segments else []
    for spec in config.retrievers:
        keys.extend(ItemKey(spec.name, "metric", metric.label) for metric in (*config.metrics, *config.across))
        keys.extend(ItemKey(spec.name, "segment", f"{segment.name}::{metric.label}")
                    for segment in segments for metric in config.metrics)
        if "question" in config.fail_on:
            keys.extend(ItemKey(spec.name, "question", q.id) for q in questions if q.answerable)
        if spec.max_latency_ms is not None:
            keys.append(ItemKey(spec.name, "latency", "p95"))
    return keys
