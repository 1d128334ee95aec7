"""The bar (docs/verdicts.md, "The bar"): what a run is judged against, and how an update moves it.

Hand-made per-question values on two answerable questions (q1, q2), both metrics alike, so every
mean below is worked out in the test's own numbers."""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from stages import QUESTIONS, document, fingerprint, retriever_entry

from pytest_ragretrieval.baseline.bar import kept_bar, replacement
from pytest_ragretrieval.baseline.format import Baseline, dumps, parse, read
from pytest_ragretrieval.baseline.update import UpdatePlan
from pytest_ragretrieval.config.settings import Config, load_config
from pytest_ragretrieval.evalset.records import Question
from pytest_ragretrieval.gate.items import ItemKey
from pytest_ragretrieval.gate.judge import Judge
from pytest_ragretrieval.gate.record import baseline_update
from pytest_ragretrieval.record.codec import encode
from pytest_ragretrieval.review.changes import ValueChange, classify
from pytest_ragretrieval.scoring.evaluate import QuestionResult, RetrieverResult, Run

LABELS = ("ndcg@3", "recall@3")
KEYS = [ItemKey("one", "metric", label) for label in LABELS]
FORMAT_2 = Path(__file__).parents[1] / "data" / "baseline-format-2.json"


def config(tmp_path: Path, *lines: str) -> Config:
    """One bm25 retriever, `one`, with ndcg and recall at 3."""
    text = "\n".join(['chunks = "c.jsonl"', 'evalset = "e.jsonl"', "k = 3", 'metrics = ["ndcg", "recall"]', *lines,
                      "[retrievers.one]", 'type = "bm25"'])
    (tmp_path / "rag.toml").write_text(text + "\n", encoding="utf-8")
    return load_config(str(tmp_path / "rag.toml"), tmp_path)


def run(values: Mapping[str, float]) -> Run:
    """Retriever `one` scoring each question `values[id]` on both metrics."""
    questions = tuple(QuestionResult(qid, ("a",), dict.fromkeys(LABELS, value)) for qid, value in values.items())
    average = round(sum(values.values()) / len(values), 6)
    return Run(result=RetrieverResult("one", dict.fromkeys(LABELS, average), {}, questions, 1, 1))


def first(cfg: Config, values: Mapping[str, float], questions: Sequence[Question] = QUESTIONS) -> Baseline:
    result = run(values).result
    assert result is not None
    doc = document(cfg.k, fingerprint(cfg, questions), {"one": retriever_entry(result)})
    return parse(cfg.baseline, dumps(doc))


def update(cfg: Config, old: Baseline, values: Mapping[str, float], *, allow: bool = False,
           questions: Sequence[Question] = QUESTIONS) -> tuple[Baseline | None, UpdatePlan, Judge]:
    """`pytest --rag-update-baseline -k one`, without pytest: the judge, the plan, the file read back."""
    fp = fingerprint(cfg, questions)
    runs = {"one": run(values)}
    judge = Judge(cfg, questions, old, fp, runs, update=True, allow_regression=allow, selected=KEYS)
    plan = baseline_update(cfg, old, fp, runs, KEYS, judge)
    return (parse(cfg.baseline, encode(plan.record)) if plan.record else None), plan, judge


def gate(cfg: Config, old: Baseline, values: Mapping[str, float], questions: Sequence[Question] = QUESTIONS) -> bool:
    """Whether `pytest --rag-eval -k one` passes."""
    judge = Judge(cfg, questions, old, fingerprint(cfg, questions), {"one": run(values)}, selected=KEYS)
    return all(judge.outcome(key).passed for key in KEYS)


def test_accepted_drops_do_not_accumulate(tmp_path: Path) -> None:
    """significance none, tolerance 0.02: three updates each 0.008 lower pass, pass, and fail at the
    third (0.024 below the bar approved at 0.9), although each is only 0.008 below the last recorded."""
    cfg = config(tmp_path, "tolerance = 0.02")
    old = first(cfg, {"q1": 0.9, "q2": 0.9})
    one, plan, _ = update(cfg, old, {"q1": 0.892, "q2": 0.892})
    assert one is not None and not plan.failed
    assert one.retrievers["one"].metrics["ndcg@3"] == 0.892
    assert one.retrievers["one"].bar_values("ndcg@3") == {"q1": 0.9, "q2": 0.9}
    two, plan, _ = update(cfg, one, {"q1": 0.884, "q2": 0.884})
    assert two is not None and not plan.failed
    assert two.retrievers["one"].bar_view().metrics["ndcg@3"] == 0.9
    assert not gate(cfg, two, {"q1": 0.876, "q2": 0.876})
    three, plan, judge = update(cfg, two, {"q1": 0.876, "q2": 0.876})
    assert three is None and plan.failed
    assert plan.lines[0] == (
        "rag: refused to record ndcg@3 of 'one': 0.8760 is below the bar's 0.9000 (-0.0240, tolerance 0.0200); "
        "fix it and re-run, or pass --rag-allow-regression to record it, which lowers the bar: the pull request "
        "then needs the approval label (rag-baseline-approved unless the action's `label` input names another)")
    assert plan.lines[-1] == f"rag: {cfg.baseline} is left as it was, byte for byte"
    assert not judge.outcome(KEYS[0]).passed


def test_the_flag_lowers_the_bar_to_the_values_recorded(tmp_path: Path) -> None:
    cfg = config(tmp_path, "tolerance = 0.02")
    old = first(cfg, {"q1": 0.9, "q2": 0.9})
    new, plan, judge = update(cfg, old, {"q1": 0.5, "q2": 0.7}, allow=True)
    assert new is not None and "bar" not in new.document["retrievers"]["one"]
    assert new.retrievers["one"].bar_view().metrics["ndcg@3"] == 0.6
    outcome = judge.outcome(KEYS[0])
    assert outcome.passed and outcome.summary == (
        "ndcg@3 of 'one': 0.6000 to be recorded; it lowers the bar (0.6000 is below the bar's 0.9000 (-0.3000, "
        "tolerance 0.0200)), as --rag-allow-regression allows")


@pytest.mark.parametrize("values, bar", [
    ({"q1": 0.95, "q2": 0.95}, {"q1": 0.95, "q2": 0.95}),  # rose by 0.05 > 0.02: the bar follows
    ({"q1": 0.91, "q2": 0.91}, {"q1": 0.9, "q2": 0.9}),    # rose by 0.01: passes, raises nothing
    ({"q1": 1.0, "q2": 0.8}, {"q1": 0.9, "q2": 0.9}),      # the same mean, moved around: kept
    ({"q1": 0.88, "q2": 0.9}, {"q1": 0.9, "q2": 0.9}),     # fell by 0.01: passes, lowers nothing
])
def test_a_passing_update_keeps_the_bar_unless_it_rose_by_more_than_the_tolerance(
        tmp_path: Path, values: dict[str, float], bar: dict[str, float]) -> None:
    cfg = config(tmp_path, "tolerance = 0.02")
    new, plan, _ = update(cfg, first(cfg, {"q1": 0.9, "q2": 0.9}), values)
    assert new is not None and not plan.failed
    assert new.retrievers["one"].bar_values("ndcg@3") == bar
    held = {qid: value for qid, value in bar.items() if value != values[qid]}
    assert new.document["retrievers"]["one"].get("bar", {}).get("ndcg@3", {}) == held


def test_an_update_with_nothing_new_writes_nothing(tmp_path: Path) -> None:
    """A kept bar is written again as it was: recording the same values twice is byte-identical."""
    cfg = config(tmp_path, "tolerance = 0.02")
    once, _, _ = update(cfg, first(cfg, {"q1": 0.9, "q2": 0.9}), {"q1": 0.89, "q2": 0.89})
    assert once is not None
    again, plan, _ = update(cfg, once, {"q1": 0.89, "q2": 0.89})
    assert again is None and not plan.failed and plan.lines[-1].endswith("is already up to date")


ADDED = (*QUESTIONS, Question("q4", "新问题", {"a": 1}))
EDITED = (replace(QUESTIONS[0], query=QUESTIONS[0].query + "？"), *QUESTIONS[1:])
REMOVED = QUESTIONS[1:]


def test_an_added_question_joins_the_bar_and_needs_no_flag(tmp_path: Path) -> None:
    """The issue's week 2: drops the gate accepted, then questions added: recorded without the flag."""
    cfg = config(tmp_path, "tolerance = 0.02")
    old, _, _ = update(cfg, first(cfg, {"q1": 0.9, "q2": 0.9}), {"q1": 0.89, "q2": 0.89})
    assert old is not None
    new, plan, _ = update(cfg, old, {"q1": 0.89, "q2": 0.89, "q4": 0.2}, questions=ADDED)
    assert new is not None and not plan.failed
    assert new.retrievers["one"].bar_values("ndcg@3") == {"q1": 0.9, "q2": 0.9, "q4": 0.2}


def test_edited_questions_recorded_lower_are_a_lowering(tmp_path: Path) -> None:
    """Edit a query and record lower values: the edited question's bar value leaves, a lower one replaces it."""
    cfg = config(tmp_path)
    old = first(cfg, {"q1": 0.9, "q2": 0.5})
    gone, plan, _ = update(cfg, old, {"q1": 0.4, "q2": 0.5}, questions=EDITED)
    assert gone is None and plan.failed
    assert plan.lines[0].startswith(
        "rag: refused to record ndcg@3 of 'one': the 1 edited question (q1): bar 0.9000, their new values 0.4000, "
        "below the bar; fix it and re-run, or pass --rag-allow-regression")
    allowed, plan, _ = update(cfg, old, {"q1": 0.4, "q2": 0.5}, questions=EDITED, allow=True)
    assert allowed is not None and allowed.retrievers["one"].bar_values("ndcg@3") == {"q1": 0.4, "q2": 0.5}
    better, plan, _ = update(cfg, old, {"q1": 0.9, "q2": 0.5}, questions=EDITED)
    assert better is not None and not plan.failed


@pytest.mark.parametrize("bar, refused", [({"q1": 0.9, "q2": 0.5}, True), ({"q1": 0.4, "q2": 0.5}, False)])
def test_a_removed_question_lowers_the_bar_when_it_was_better_than_the_rest(
        tmp_path: Path, bar: dict[str, float], refused: bool) -> None:
    cfg = config(tmp_path)
    new, plan, _ = update(cfg, first(cfg, bar), {"q2": 0.5}, questions=REMOVED)
    assert (new is None) is refused
    if refused:
        assert "the 1 removed question (q1): bar 0.9000, the bar of the questions kept 0.5000, below the bar" in (
            plan.lines[0])


@pytest.mark.parametrize("old, new, comparable, found", [
    ({"a": 1.0, "b": 0.5}, {"a": 1.0, "b": 0.5}, {"a", "b"}, None),
    ({"a": 1.0, "b": 0.5}, {"a": 0.5, "b": 0.5}, {"b"}, ("edited", ("a",), 1.0, 0.5)),
    ({"a": 1.0, "b": 0.5}, {"a": 1.0, "b": 0.5}, {"b"}, None),  # edited, the same value: no lowering
    ({"a": 1.0, "b": 0.5, "c": 0.5}, {"a": 0.8, "b": 0.8, "c": 0.5}, {"c"}, None),  # edited means 0.75 -> 0.8
    ({"a": 1.0, "b": 0.5}, {"b": 0.5, "c": 0.9}, {"b"}, ("removed", ("a",), 1.0, 0.9)),
    ({"a": 1.0, "b": 0.5}, {"b": 0.5, "c": 1.0}, {"b"}, None),  # the added question scores as well
    ({"a": 1.0, "b": 0.5}, {"b": 0.5}, {"b"}, ("removed", ("a",), 1.0, 0.5)),
    ({"a": 0.2, "b": 0.5}, {"b": 0.5}, {"b"}, None),  # no better than the kept one
    ({"a": 0.2}, {}, set(), ("removed", ("a",), 0.2, 0.0)),  # nothing left
    ({"a": 0.0}, {}, set(), None),
])
def test_replacement_by_hand(old: dict[str, float], new: dict[str, float], comparable: set[str],
                             found: tuple[str, tuple[str, ...], float, float] | None) -> None:
    got = replacement(old, new, comparable)
    assert (None if got is None else (got.kind, got.left, got.before, got.after)) == found


def test_kept_bar_holds_only_what_differs() -> None:
    assert kept_bar({"a": 1.0, "b": 0.5, "c": 0.7}, {"a": 0.9, "b": 0.5, "d": 0.1}, {"a", "b", "c"}) == {"a": 1.0}
    assert kept_bar({"a": 1.0}, {"a": 0.9}, set()) == {}  # an edited question takes its new value


def test_a_format_2_baseline_reads_with_its_bar_equal_to_its_recorded_values() -> None:
    old = read(FORMAT_2)
    assert old.format_version == 2 and old.retrievers
    for entry in old.retrievers.values():
        assert entry.bar == {} and entry.bar_view() is entry
        for label in entry.metrics:
            assert entry.bar_values(label) == {qid: q.metrics[label] for qid, q in entry.questions.items()
                                               if label in q.metrics}


def test_the_bar_is_judged_and_shown_by_the_judge(tmp_path: Path) -> None:
    """Judge.recorded is the file's recorded entry; Judge.bar, what the items are judged against."""
    cfg = config(tmp_path, "tolerance = 0.02")
    old, _, _ = update(cfg, first(cfg, {"q1": 0.9, "q2": 0.9}), {"q1": 0.89, "q2": 0.89})
    assert old is not None
    judge = Judge(cfg, QUESTIONS, old, fingerprint(cfg), {"one": run({"q1": 0.89, "q2": 0.89})}, selected=KEYS)
    recorded, bar = judge.recorded("one"), judge.bar("one")
    assert recorded is not None and bar is not None
    assert recorded.metrics["ndcg@3"] == 0.89 and bar.metrics["ndcg@3"] == 0.9
    comparison = judge.comparison("one", "ndcg@3")
    assert comparison is not None and comparison.baseline == 0.9 and comparison.delta == -0.01
    text = json.dumps(old.document["retrievers"]["one"]["bar"], sort_keys=True)
    assert text == '{"ndcg@3": {"q1": 0.9, "q2": 0.9}, "recall@3": {"q1": 0.9, "q2": 0.9}}'


def test_the_pull_request_check_compares_bars_not_recorded_values(tmp_path: Path) -> None:
    """Recorded values the gate accepted below the bar lower nothing; the flag's lowering is one lowered value
    (the bar's means, 0.9 -> 0.6), and edited questions recorded lower are one too."""
    cfg = config(tmp_path, "tolerance = 0.02")
    base = first(cfg, {"q1": 0.9, "q2": 0.9})
    accepted, _, _ = update(cfg, base, {"q1": 0.89, "q2": 0.89})
    assert accepted is not None and not classify(base, accepted).lowers_the_bar
    lowered, _, _ = update(cfg, accepted, {"q1": 0.5, "q2": 0.7}, allow=True)
    assert lowered is not None
    assert classify(accepted, lowered).lowered == tuple(ValueChange("one", label, 0.9, 0.6) for label in ("recall@3", "ndcg@3"))
    grown, _, _ = update(cfg, accepted, {"q1": 0.89, "q2": 0.89, "q4": 0.1}, questions=ADDED)
    assert grown is not None and not classify(accepted, grown).lowers_the_bar
    edited, _, _ = update(cfg, base, {"q1": 0.4, "q2": 0.9}, questions=EDITED, allow=True)
    assert edited is not None
    assert classify(base, edited).lowered == tuple(ValueChange(
        "one", label, 0.9, 0.4, scope="the 1 edited question (q1): bar 0.9000, their new values 0.4000")
        for label in ("recall@3", "ndcg@3"))
