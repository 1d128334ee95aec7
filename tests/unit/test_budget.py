"""Span metrics at a budget of characters (`char_recall@2000c`, issue 43 item 3): the label, its place in
the metric order, the top k's chunks taken in rank order while they fit (values computed by hand at the
budget's edges), the config's one-line errors, and the metric key rule: a budget key is read from
format-4 files only."""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from stages import document, retriever_entry

from pytest_ragretrieval.baseline.format import dumps, parse
from pytest_ragretrieval.config.settings import load_config
from pytest_ragretrieval.core.errors import BaselineError, ConfigError
from pytest_ragretrieval.evalset.records import Chunk, Question, Span
from pytest_ragretrieval.files.jsontext import budget, cutoff, metric_key_problem
from pytest_ragretrieval.record.schema import schema
from pytest_ragretrieval.scoring.evaluate import chunk_spans, score
from pytest_ragretrieval.scoring.metrics import MetricSpec, definition, metric_order

DOC = "x" * 420
CHUNKS = (  # lengths 100, 50, 250, 20: a and b fill 150 characters, a to c 400, all four 420
    Chunk("a", DOC[0:100], "d", start=0, end=100), Chunk("b", DOC[100:150], "d", start=100, end=150),
    Chunk("c", DOC[150:400], "d", start=150, end=400), Chunk("e", DOC[400:420], "d", start=400, end=420),
)
GOLD = (Span("d", 120, 160),)
"""40 gold characters: 30 in b (120-150), 10 in c (150-160)."""
QUESTION = Question("q", "query", {"b": 1}, spans=GOLD)
NAMES = ("char_recall", "char_precision", "char_iou", "answer_hit")


def values_at(chars: int, ranking: list[str], k: int = 4) -> list[float]:
    """The four span metrics of `ranking` at a budget of `chars`, over its top k."""
    specs = [MetricSpec(name, k, chars) for name in NAMES]
    found = score("r", [QUESTION], {"q": ranking}, specs, spans=chunk_spans(CHUNKS)).questions[0].values
    return [found[f"{name}@{chars}c"] for name in NAMES]


@pytest.mark.parametrize(("chars", "expected"), [
    # a + b fill the budget exactly: both taken; c would make 400 and stops the filling, e (20) after it is not taken
    (150, [30 / 40, 30 / 150, round(30 / (150 + 10), 6), 0.0]),
    # 20 characters more: c still stops the filling, and e, which would fit, is not taken after it
    (170, [30 / 40, 30 / 150, round(30 / (150 + 10), 6), 0.0]),
    # one character less: b no longer fits and stops the filling at a, which holds no gold character
    (149, [0.0, 0.0, 0.0, 0.0]),
    # every chunk fits exactly: all 420 characters, the whole answer
    (420, [1.0, round(40 / 420, 6), round(40 / 420, 6), 1.0]),
    # a budget smaller than the first chunk takes nothing: 0 on every metric
    (99, [0.0, 0.0, 0.0, 0.0]),
])
def test_the_budget_takes_the_top_chunks_while_they_fit_whole(chars: int, expected: list[float]) -> None:
    assert values_at(chars, ["a", "b", "c", "e"]) == expected


def test_an_empty_ranking_scores_zero_at_any_budget() -> None:
    assert values_at(2000, []) == [0.0, 0.0, 0.0, 0.0]


def test_a_chunk_that_does_not_fit_is_not_skipped_for_a_shorter_one() -> None:
    """c (250) does not fit in 200 characters; e (20), ranked after it, would, and is not taken."""
    assert values_at(200, ["c", "e", "b"]) == [0.0, 0.0, 0.0, 0.0]
    assert values_at(270, ["c", "e", "b"]) == [10 / 40, round(10 / 270, 6), round(10 / (270 + 30), 6), 0.0]


def test_the_budget_reads_the_top_k_only() -> None:
    """A budget never reaches past k: the top 2 (a, b) are 150 characters, and 10,000 takes only them."""
    assert values_at(10_000, ["a", "b", "c", "e"], k=2) == values_at(150, ["a", "b", "c", "e"])


def test_a_budget_label_names_its_characters_and_reads_back() -> None:
    spec = MetricSpec.parse("char_recall@2000c", 5)
    assert spec == MetricSpec("char_recall", 5, 2000) and spec.label == "char_recall@2000c"
    assert MetricSpec.parse(spec.label, 5) == spec
    assert spec.definition == definition("char_recall@2000c")
    assert spec.definition.startswith(MetricSpec.parse("char_recall", 5).definition)
    assert "fit whole in 2000 characters" in spec.definition
    assert (cutoff("char_recall@2000c"), budget("char_recall@2000c")) == (None, 2000)
    assert (cutoff("char_recall@20"), budget("char_recall@20")) == (20, None)


def test_budgets_sort_after_their_metric_s_cutoffs_by_size() -> None:
    labels = ["char_iou@600c", "char_recall@2000c", "char_recall@600c", "char_recall@10", "recall@5", "char_recall@5",
              "abstention"]
    assert sorted(labels, key=metric_order) == [
        "recall@5", "char_recall@5", "char_recall@10", "char_recall@600c", "char_recall@2000c", "char_iou@600c",
        "abstention"]


@pytest.mark.parametrize(("written", "message"), [
    ("recall@2000c", "metric 'recall@2000c': a budget of characters (@<n>c) is for the span metrics (char_recall, "
     "char_precision, char_iou, answer_hit), and recall counts chunks: write recall@<k> for the top k, or a span "
     "metric at the budget (char_recall@2000c)"),
    ("ndcg@600c", "and ndcg counts chunks: write ndcg@<k> for the top k, or a span metric at the budget "
     "(char_recall@600c)"),
    ("abstention@600c", "metric 'abstention@600c': abstention takes no cutoff"),
    ("char_recall@0600c", "unknown metric 'char_recall@0600c': char_recall takes a cutoff of 1 to 9 ASCII digits, "
     "the first not 0 (char_recall@5), or such digits then 'c' for a budget of characters (char_recall@2000c)"),
    ("char_recall@600C", "unknown metric 'char_recall@600C': char_recall takes a cutoff"),
])
def test_a_budget_a_metric_cannot_take_is_one_config_line_naming_the_key_and_the_fix(
        tmp_path: Path, written: str, message: str) -> None:
    error = config_error(tmp_path, f'metrics = ["char_recall", "{written}"]')
    assert "\n" not in error and "key 'metrics': " in error and message in error, error


def test_the_metrics_page_quotes_the_line_a_chunk_metric_at_a_budget_gets(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "metrics.md").read_text(encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # the config's path shown as the user runs pytest: from its folder
    (quoted,) = [line.strip() for line in page.splitlines() if "ERROR:" in line and "recall@2000c" in line]
    assert quoted == "ERROR: " + config_error(tmp_path, 'metrics = ["recall@2000c"]')


def test_a_budget_in_tolerance_is_read_and_a_chunk_metric_s_is_refused(tmp_path: Path) -> None:
    config = documents_config(tmp_path, 'metrics = ["char_recall@600c"]\ntolerance = {"char_recall@600c" = 0.05}')
    (spec,) = config.metrics
    assert config.tolerance.for_metric(spec) == 0.05 and config.depth == config.k == 5
    error = config_error(tmp_path, 'tolerance = {"recall@600c" = 0.05}')
    assert "key 'tolerance.recall@600c': metric 'recall@600c': a budget of characters" in error


def test_a_budget_without_documents_is_the_span_metrics_one_line(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.ragretrieval]\nchunks = "c.jsonl"\nevalset = "e.jsonl"\nmetrics = ["recall", "char_iou@600c"]\n'
        '[tool.ragretrieval.retrievers.bm25]\ntype = "bm25"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_config(None, tmp_path)
    assert str(raised.value).endswith(
        "key 'metrics': char_iou@600c scores the characters retrieved against gold spans, which need documents; set "
        "documents = \"PATH\" and a [tool.ragretrieval.chunker], or remove char_iou@600c from metrics")


def documents_config(tmp_path: Path, lines: str) -> Any:
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.ragretrieval]\ndocuments = "kb"\nevalset = "e.jsonl"\n{lines}\n[tool.ragretrieval.chunker]\n'
        'type = "sentences"\n[tool.ragretrieval.retrievers.bm25]\ntype = "bm25"\n', encoding="utf-8")
    return load_config(None, tmp_path)


def config_error(tmp_path: Path, lines: str) -> str:
    with pytest.raises(ConfigError) as raised:
        documents_config(tmp_path, lines)
    return str(raised.value)


# the metric key rule: format 4 holds budget keys, formats 1 to 3 do not


def test_the_key_rule_reads_a_budget_only_where_the_format_holds_one() -> None:
    assert metric_key_problem("char_recall@2000c") is None
    old = metric_key_problem("char_recall@2000c", budgets=False)
    assert old is not None and old.endswith(
        "'char_recall@2000c' is not a metric key: a lower-case name, then optionally '@' and a cutoff of 1 to 9 "
        "ASCII digits, the first not 0 (ndcg@5); a budget of characters (char_recall@2000c) is a key of "
        "format_version 4 on")
    for key in ("char_recall@02000c", "char_recall@2000cc", "char_recall@c", "char_recall@2000C", "char_recall@0c",
                "char_recall@1234567890c"):
        assert metric_key_problem(key) is not None and metric_key_problem(key, budgets=False) is not None, key
        assert cutoff(key) is None and budget(key) is None


QUESTIONS = (Question("q1", "a", {"c1": 1}), Question("q2", "b", {"c2": 1}))


def budget_doc(version: int, where: str) -> dict[str, Any]:
    """A small baseline of `version` whose entry holds `char_recall@600c` at `where`."""
    result = score("bm25", QUESTIONS, {"q1": ["c2", "c1"], "q2": ["c2"]}, [MetricSpec("ndcg", 2)])
    doc = document(2, {"yardstick": {"k": 2}, "retrievers": {"bm25": {"type": "bm25"}}},
                   {"bm25": retriever_entry(result)})
    doc["format_version"] = version
    entry = doc["retrievers"]["bm25"]
    target = {"metrics": entry["metrics"], "tags": entry["tags"].setdefault("t", {}),
              "question": entry["questions"]["q1"]["metrics"]}[where]
    target["char_recall@600c"] = 0.5
    return doc


@pytest.mark.parametrize("where", ["metrics", "tags", "question"])
def test_a_format_3_file_holding_a_budget_key_is_one_line_and_format_4_reads_it(where: str) -> None:
    with pytest.raises(BaselineError) as raised:
        parse(Path("b.json"), dumps(budget_doc(3, where)))
    message = str(raised.value)
    assert "\n" not in message and message.startswith("b.json: retrievers.bm25.")
    assert "key 'char_recall@600c' is not a metric key" in message
    assert "a budget of characters (char_recall@2000c) is a key of format_version 4 on; fix it" in message
    assert parse(Path("b.json"), dumps(budget_doc(4, where))).retrievers["bm25"].questions["q1"].ranking == ("c2", "c1")


def test_the_schema_says_the_same() -> None:
    validator = jsonschema.Draft202012Validator(schema("baseline"))
    for where in ("metrics", "tags", "question"):
        assert validator.is_valid(budget_doc(4, where)) and not validator.is_valid(budget_doc(3, where)), where
    out_of_range = budget_doc(4, "metrics")
    out_of_range["retrievers"]["bm25"]["metrics"]["char_recall@600c"] = 1.5
    assert not validator.is_valid(out_of_range)
    bar = copy.deepcopy(budget_doc(3, "question"))
    bar["format_version"] = 4
    bar["retrievers"]["bm25"]["bar"] = {"char_recall@600c": {"q1": 0.25}}
    assert validator.is_valid(bar) and parse(Path("b.json"), dumps(bar)).retrievers["bm25"].bar
    bar["format_version"] = 3
    assert not validator.is_valid(bar)
    with pytest.raises(BaselineError, match="retrievers.bm25.questions.q1.metrics key 'char_recall@600c'"):
        parse(Path("b.json"), json.dumps(bar))


def test_a_budget_key_asks_for_no_deeper_ranking() -> None:
    """A budget reads the top k: `char_recall@600c` allows no ranking deeper than k, as `char_recall@600` would."""
    doc = budget_doc(4, "metrics")
    doc["retrievers"]["bm25"]["questions"]["q1"]["ranking"].append("c3")
    with pytest.raises(BaselineError, match="holds 3 ids, more than the 2 that k and the entry's cutoffs ask for"):
        parse(Path("b.json"), dumps(doc))
