"""Metric roles live in the registry (scoring/metrics.py): what a metric measures, whether it is gated by
default, how it is shown; no other module compares a metric's name (issue 41, item 5)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_ragretrieval.scoring.metrics import (
    DEFAULT_METRICS,
    METRICS,
    Measures,
    Metric,
    MetricSpec,
    Shown,
    always_shown,
    checked_metric,
    of_retriever,
    primary,
)

PACKAGE = Path(__file__).parents[2] / "pytest_ragretrieval"
REGISTRY = PACKAGE / "scoring" / "metrics.py"


def by_name(names: list[str]) -> list[re.Pattern[str]]:
    """What code that knows a metric by its name looks like: a name compared, tested as a prefix or
    for membership, a label spelt out, a spec or registry entry asked for by name."""
    name = "(?:" + "|".join(map(re.escape, names)) + ")"
    literal = rf"""["']{name}(?:@[^"']*)?["']"""
    return [
        re.compile(rf"(?:==|!=)\s*{literal}"),
        re.compile(rf"{literal}\s*(?:==|!=|(?:not\s+)?in\b)"),
        re.compile(rf"""(?:startswith|endswith|partition|split)\(\s*["']{name}"""),
        re.compile(rf"""["']{name}@"""),
        re.compile(rf"""(?:MetricSpec|METRICS\[|METRICS\.get)\(?\s*["']{name}["']"""),
    ]


def comparisons(source: str) -> list[str]:
    patterns = by_name(list(METRICS.builtins))
    return [line.strip() for line in source.splitlines() if any(pattern.search(line) for pattern in patterns)]


def test_no_module_but_the_registry_compares_a_metric_name() -> None:
    found = {
        f"{path.relative_to(PACKAGE)}: {line}"
        for path in sorted(PACKAGE.rglob("*.py")) if path != REGISTRY
        for line in comparisons(path.read_text(encoding="utf-8"))
    }
    assert found == set(), "route these through the metric's roles in scoring/metrics.py"


@pytest.mark.parametrize("line", [
    'if any(spec.name == "judged" for spec in self.metrics):',
    'return (*self.metrics, MetricSpec("judged", self.k))',
    'if label.startswith("judged@"):',
    'return next((label for label in self.metrics if label.startswith("ndcg@")), self.metrics[0])',
    'DEFAULT = "ndcg@10"',
    "if 'abstention' in names:",
])
def test_the_grep_finds_a_name_compared(line: str) -> None:
    assert comparisons(line) == [line]


@pytest.mark.parametrize("line", [
    'found["judged"] = _digest(rejected, SHORT)',  # a question record's judged chunks, not the metric
    'and recorded.get("judged") == today.get("judged"))',
    'if label.startswith("ann_recall@")',  # a diagnostic, not a metric
])
def test_the_grep_leaves_other_uses_of_the_words(line: str) -> None:
    assert comparisons(line) == []


def test_the_built_in_roles() -> None:
    judged = METRICS["judged"]
    assert (judged.measures, judged.shown, judged.default) == (Measures.LABELS, Shown.ALWAYS, False)
    assert DEFAULT_METRICS == ("precision", "recall", "f1", "ndcg")
    assert [name for name, metric in METRICS.builtins.items() if metric.primary] == ["ndcg"]
    assert always_shown(5) == (MetricSpec("judged", 5),)
    assert not of_retriever("judged@5") and of_retriever("ndcg@5") and of_retriever("abstention")
    assert of_retriever("not_installed@3")  # a baseline's metric from an extension missing here
    assert primary(["recall@5", "ndcg@10", "ndcg@5"]) == "ndcg@10"
    assert primary(["recall@5", "f1@5"]) == "recall@5"


def top(ranking: object, relevance: object, k: int) -> float:
    return 1.0


def test_a_metric_written_before_the_roles_loads_with_the_defaults() -> None:
    old = Metric("top", top, "always 1")
    assert checked_metric("top", old, METRICS.builtins) is old
    assert (old.measures, old.shown, old.default, old.primary) == (Measures.RETRIEVER, Shown.LISTED, False, False)
    labels = Metric("coverage", top, "judged share", measures=Measures.LABELS, shown=Shown.ALWAYS)
    assert checked_metric("coverage", labels, METRICS.builtins) is labels


@pytest.mark.parametrize("metric", [Metric("top", top, "always 1", default=True), Metric("top", top, "always 1", primary=True)])
def test_another_distribution_cannot_make_its_metric_a_default(metric: Metric) -> None:
    with pytest.raises(ValueError, match=r"^is a default or primary metric"):
        checked_metric("top", metric, METRICS.builtins)
