"""Span metrics in the gate's scoring: listed in `metrics`, scored over the top k's chunk spans against the
question's gold spans, only in documents mode, only where a question has gold spans."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from pytest_ragretrieval.baseline.fingerprint import evalset_digest, question_record
from pytest_ragretrieval.config.settings import load_config
from pytest_ragretrieval.core.errors import ConfigError
from pytest_ragretrieval.core.values import DIGITS
from pytest_ragretrieval.evalset.records import Chunk, Question, Span
from pytest_ragretrieval.scoring.evaluate import chunk_spans, places, score
from pytest_ragretrieval.scoring.metrics import METRICS, MetricSpec, metric_order
from pytest_ragretrieval.scoring.spans import answer_hit, char_iou, char_precision, char_recall

DOC = "0123456789" * 10
CHUNKS = (  # a: 0-40, b: 40-80, c: 80-100 in doc d; e: 0-10 in doc other; f: a chunks-file chunk, no span
    Chunk("a", DOC[0:40], "d", start=0, end=40), Chunk("b", DOC[40:80], "d", start=40, end=80),
    Chunk("c", DOC[80:100], "d", start=80, end=100), Chunk("e", "x" * 10, "other", start=0, end=10),
    Chunk("f", "loose"),
)
GOLD = (Span("d", 30, 50, 2), Span("d", 85, 95))
QUESTIONS = (
    Question("spans", "q", {"a": 1, "b": 2}, ("t",), spans=GOLD),
    Question("ids", "q", {"a": 1}, ("t",)),  # gold as chunk ids only: no span values
    Question("none", "q", {}),  # a no-answer question: no span values
)
SPECS = (MetricSpec("recall", 2), MetricSpec("char_recall", 2), MetricSpec("char_precision", 2),
         MetricSpec("char_iou", 2), MetricSpec("answer_hit", 2), MetricSpec("answer_hit", 3))
RANKINGS = {"spans": ["b", "e", "c"], "ids": ["a"], "none": ["c"]}


def test_span_metrics_score_the_top_k_spans_with_the_span_functions() -> None:
    """char_recall@2 of ranking [b, e, c] is the span functions' value over the spans of b and e (c lies
    past the cutoff); answer_hit@3 takes c in too, and still misses 30-40."""
    result = score("r", QUESTIONS, RANKINGS, SPECS, spans=chunk_spans(CHUNKS))
    top = [Span("d", 40, 80), Span("other", 0, 10)]
    values = dict(result.questions[0].values)
    assert values == {
        "recall@2": 0.5, "char_recall@2": round(char_recall(top, GOLD), DIGITS),
        "char_precision@2": round(char_precision(top, GOLD), DIGITS), "char_iou@2": round(char_iou(top, GOLD), DIGITS),
        "answer_hit@2": 0.0, "answer_hit@3": answer_hit([*top, Span("d", 80, 100)], GOLD),
    }
    assert values["char_recall@2"] == round(10 / 30, DIGITS) and values["char_precision@2"] == 10 / 50
    assert values["char_iou@2"] == round(10 / (50 + 20), DIGITS)


def test_questions_without_gold_spans_have_no_span_values_and_no_share_in_the_means() -> None:
    result = score("r", QUESTIONS, RANKINGS, SPECS, spans=chunk_spans(CHUNKS))
    assert result.questions[1].values == {"recall@2": 1.0}
    assert result.questions[2].values == {}
    assert result.metrics["char_recall@2"] == result.questions[0].values["char_recall@2"]
    assert result.metrics["recall@2"] == 0.75
    assert result.tags["t"]["char_iou@2"] == result.questions[0].values["char_iou@2"]


def test_a_retrieved_chunk_covering_every_gold_span_is_an_answer_hit() -> None:
    whole = Chunk("all", DOC, "d", start=0, end=100)
    result = score("r", QUESTIONS[:1], {"spans": ["all"]}, SPECS, spans=chunk_spans((whole,)))
    values = result.questions[0].values
    assert values["answer_hit@2"] == 1.0 and values["char_recall@2"] == 1.0 and values["char_precision@2"] == 0.3


def test_span_metrics_need_the_chunk_spans() -> None:
    with pytest.raises(ValueError, match="no chunk spans"):
        score("r", QUESTIONS, RANKINGS, SPECS)
    assert places(CHUNKS, SPECS[:1]) is None  # no span metric listed: nothing is built
    assert places(CHUNKS, SPECS) == {"a": Span("d", 0, 40), "b": Span("d", 40, 80), "c": Span("d", 80, 100),
                                     "e": Span("other", 0, 10)}


def test_the_span_metrics_are_registered_as_span_metrics_after_the_ranking_ones() -> None:
    names = ("char_recall", "char_precision", "char_iou", "answer_hit")
    assert all(METRICS[name].spans and not METRICS[name].default for name in names)
    assert not any(METRICS[name].spans for name in ("precision", "recall", "ndcg", "abstention", "judged"))
    assert sorted(["char_iou@5", "abstention", "recall@5", "map@5"], key=metric_order) == \
        ["recall@5", "map@5", "char_iou@5", "abstention"]
    with pytest.raises(TypeError, match="scores spans"):
        METRICS["char_recall"](["a"], {"a": 1}, 1)
    with pytest.raises(TypeError, match="scores rankings"):
        METRICS["recall"].over_spans([], GOLD)


def test_a_moved_gold_span_changes_the_question_gold_digest() -> None:
    """Gold spans were in no digest: a span moved within the chunks it labels left the question "the same",
    and its span values were compared with (and verified against) those of the old span."""
    moved = replace(QUESTIONS[0], spans=(Span("d", 31, 50, 2), GOLD[1]))
    assert question_record(moved)["gold"] != question_record(QUESTIONS[0])["gold"]
    assert evalset_digest([moved]) != evalset_digest([QUESTIONS[0]])
    plain = QUESTIONS[1]  # a question without spans keeps the digest it had
    assert question_record(plain)["gold"] == question_record(replace(plain, spans=()))["gold"]


CONFIG = """
[tool.ragretrieval]
chunks = "fixtures/chunks.jsonl"
evalset = "fixtures/evalset.jsonl"
metrics = ["recall", "char_recall@3"]

[tool.ragretrieval.retrievers.bm25]
type = "bm25"
"""


def test_a_span_metric_without_documents_is_one_line_naming_metrics_and_documents(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(CONFIG, encoding="utf-8")
    with pytest.raises(ConfigError) as error:
        load_config(None, tmp_path)
    message = str(error.value)
    assert "\n" not in message
    assert message.endswith(
        "key 'metrics': char_recall scores the characters retrieved against gold spans, which need documents; set "
        "documents = \"PATH\" and a [tool.ragretrieval.chunker], or remove char_recall from metrics")


def test_span_metrics_load_in_documents_mode(tmp_path: Path) -> None:
    text = CONFIG.replace('chunks = "fixtures/chunks.jsonl"', 'documents = "kb"').replace(
        '"char_recall@3"', '"char_recall", "char_iou", "answer_hit"') + '[tool.ragretrieval.chunker]\ntype = "sentences"\n'
    (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
    config = load_config(None, tmp_path)
    assert [spec.label for spec in config.metrics] == ["recall@5", "char_recall@5", "char_iou@5", "answer_hit@5"]
