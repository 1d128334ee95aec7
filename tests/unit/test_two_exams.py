"""Two exams never weaken the test (issue 48, item 5): under the base's exam each item's p depends only on the
base's exam and today's rankings, so label edits on top of a worse retriever (gold moved, added or removed,
an answerable question made no-answer, a no-answer one given gold) leave every adjusted p under the base's
exam as the same pull request's without them, and no failing item passes. On 577255f one no-answer question
given gold made the two exams' members differ in their questions, max-T gave way to Holm over both exams, and
the worse retriever's failures passed."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from stages import baseline, fingerprint

from pytest_ragretrieval.baseline.exams import BASE, TODAY
from pytest_ragretrieval.config.settings import Config, load_config
from pytest_ragretrieval.evalset.records import Question
from pytest_ragretrieval.gate.items import ItemKey
from pytest_ragretrieval.gate.judge import Judge
from pytest_ragretrieval.scoring.evaluate import Run, score

METRICS = ("recall", "ndcg", "mrr", "hit_rate", "precision", "f1")
LABELS = tuple(f"{name}@3" for name in METRICS)
ANSWERABLE = 20
QUESTIONS = tuple(
    [Question(f"q{i:02d}", f"query {i}", {f"c{i:02d}a": 2, f"c{i:02d}b": 1}) for i in range(ANSWERABLE)]
    + [Question(f"n{i}", f"nothing {i}", {}) for i in range(3)])
GOOD = {q.id: sorted(q.relevance, key=lambda c: -q.relevance[c]) for q in QUESTIONS}
WORSE = 7
"""The worse retriever ranks noise first on the first 7 questions: exact p 1/128 for each metric."""


def config(tmp_path: Path) -> Config:
    text = "\n".join(['chunks = "c.jsonl"', 'evalset = "e.jsonl"', "k = 3", f"metrics = {list(METRICS)!r}",
                      'significance = "randomization"', "tolerance = 0.02", "[retrievers.one]", 'type = "bm25"'])
    (tmp_path / "rag.toml").write_text(text.replace("'", '"') + "\n", encoding="utf-8")
    return load_config(str(tmp_path / "rag.toml"), tmp_path)


def worse(count: int) -> dict[str, list[str]]:
    return {qid: ["z", "y"] if index < count else ranking for index, (qid, ranking) in enumerate(GOOD.items())}


def judged(cfg: Config, questions: Sequence[Question], rankings: Mapping[str, Sequence[str]]) -> Judge:
    """The gate's judge of a pull request that asks `questions` and ranks `rankings`, against the base
    recorded with the good rankings under QUESTIONS."""
    recorded = baseline(cfg, {"one": Run(result=score("one", QUESTIONS, GOOD, cfg.metrics))},
                        fingerprint(cfg, QUESTIONS))
    run = Run(result=score("one", questions, rankings, cfg.metrics))
    return Judge(cfg, questions, recorded, fingerprint(cfg, questions), {"one": run},
                 selected=[ItemKey("one", "metric", label) for label in LABELS])


def under_base(judge: Judge) -> dict[str, tuple[float | None, bool]]:
    """Each item's adjusted p under the base's exam, and whether the item passed."""
    found = {}
    for label in LABELS:
        comparison = judge.comparison("one", label, BASE) or judge.comparison("one", label, TODAY)
        assert comparison is not None
        found[label] = (comparison.p_value, judge.outcome(ItemKey("one", "metric", label)).passed)
    return found


EDITS = st.sampled_from(["none", "add", "move", "no-answer"])


def edited(edits: Sequence[str], gold: Sequence[bool]) -> tuple[Question, ...]:
    """QUESTIONS with each answerable question's labels edited as `edits` says (gold added, moved onto
    noise, or removed: no-answer) and each no-answer question given gold where `gold` says."""
    found = []
    for question, edit in zip(QUESTIONS[:ANSWERABLE], edits, strict=True):
        relevance = {"add": {**question.relevance, "z": 1}, "move": {"z": 1}, "no-answer": {}}.get(edit)
        found.append(question if relevance is None else Question(question.id, question.query, relevance))
    for question, given_gold in zip(QUESTIONS[ANSWERABLE:], gold, strict=True):
        found.append(Question(question.id, question.query, {"y": 1}) if given_gold else question)
    return tuple(found)


def test_a_no_answer_question_given_gold_keeps_max_t_and_the_failures(tmp_path: Path) -> None:
    """The issue's case: one no-answer question given gold beside the worse retriever."""
    cfg = config(tmp_path)
    plain = judged(cfg, QUESTIONS, worse(WORSE))
    expected = under_base(plain)
    assert all(not passed for _, passed in expected.values()) and plain.adjustment() == "maxt"
    found = judged(cfg, edited(["none"] * ANSWERABLE, [True, False, False]), worse(WORSE))
    assert found.side("one", BASE) is not None  # the exams differ: both are sat
    assert under_base(found) == expected
    assert found.adjustment() == "maxt"


def test_an_answerable_question_made_no_answer_keeps_the_failures(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    expected = under_base(judged(cfg, QUESTIONS, worse(WORSE)))
    edits = ["no-answer"] + ["none"] * (ANSWERABLE - 1)
    assert under_base(judged(cfg, edited(edits, [False] * 3), worse(WORSE))) == expected


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(EDITS, min_size=ANSWERABLE, max_size=ANSWERABLE), st.lists(st.booleans(), min_size=3, max_size=3),
       st.integers(min_value=4, max_value=9))
def test_label_edits_change_no_p_under_the_base_exam(tmp_path_factory: object, edits: list[str], gold: list[bool],
                                                     count: int) -> None:
    """Generated label edits on top of a worse retriever: the same adjusted p under the base's exam as
    without them, and no failing item passes (today's exam may add a failure, never remove one)."""
    folder = Path(str(tmp_path_factory.mktemp("exams")))  # type: ignore[attr-defined]
    cfg = config(folder)
    expected = under_base(judged(cfg, QUESTIONS, worse(count)))
    found = under_base(judged(cfg, edited(edits, gold), worse(count)))
    assert {label: p for label, (p, _) in found.items()} == {label: p for label, (p, _) in expected.items()}
    assert not any(passed and not expected[label][1] for label, (_, passed) in found.items())
