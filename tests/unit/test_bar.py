"""The bar (docs/verdicts.md, "The bar"): the approved rankings, what a run is judged against, and how an
update moves them.

Hand-made rankings over questions that each have one relevant chunk (`g01`, ...) placed at a chosen rank
within k = 3: rank 1 scores ndcg@3 1 and recall@3 1, rank 2 ndcg@3 0.630930 (1/log2 3) and recall 1,
absent 0 and 0. Every mean below follows from those numbers."""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from stages import document, fingerprint, retriever_entry

from pytest_ragretrieval.bar.rule import kept_bar, replacement
from pytest_ragretrieval.baseline.format import Baseline, dumps, parse, read
from pytest_ragretrieval.baseline.update import UpdatePlan
from pytest_ragretrieval.config.settings import Config, load_config
from pytest_ragretrieval.evalset.records import Question
from pytest_ragretrieval.gate.items import ItemKey
from pytest_ragretrieval.gate.judge import Judge
from pytest_ragretrieval.gate.record import baseline_update
from pytest_ragretrieval.record.codec import encode
from pytest_ragretrieval.scoring.evaluate import Run, score

LABELS = ("ndcg@3", "recall@3")
KEYS = [ItemKey("one", "metric", label) for label in LABELS]
FORMAT_2 = Path(__file__).parents[1] / "data" / "baseline-format-2.json"
RANK_2 = 0.63093
"""ndcg@3 of one relevant chunk at rank 2 (1/log2 3, at the stored 6 digits: 0.630930)."""


def questions(count: int) -> tuple[Question, ...]:
    """`count` questions q001, ..., each with one relevant chunk g001, ..."""
    return tuple(Question(f"q{n:03d}", f"问题 {n}", {f"g{n:03d}": 1}) for n in range(1, count + 1))


def config(tmp_path: Path, *lines: str) -> Config:
    """One bm25 retriever, `one`, with ndcg and recall at 3."""
    text = "\n".join(['chunks = "c.jsonl"', 'evalset = "e.jsonl"', "k = 3", 'metrics = ["ndcg", "recall"]', *lines,
                      "[retrievers.one]", 'type = "bm25"'])
    (tmp_path / "rag.toml").write_text(text + "\n", encoding="utf-8")
    return load_config(str(tmp_path / "rag.toml"), tmp_path)


def rankings(asked: Sequence[Question], ranks: Mapping[str, int] | None = None) -> dict[str, list[str]]:
    """Each question's relevant chunk at its rank in `ranks` (default 1; 0: not retrieved), filler around it."""
    found = {}
    for question in asked:
        rank = (ranks or {}).get(question.id, 1)
        gold = next(iter(question.relevance)) if question.relevance else "none"
        filler = [f"x{n}-{question.id}" for n in range(3)]
        found[question.id] = filler if rank == 0 else [*filler[: rank - 1], gold, *filler[rank - 1: 2]]
    return found


def run(cfg: Config, asked: Sequence[Question], ranks: Mapping[str, int] | None = None) -> Run:
    return Run(result=score("one", asked, rankings(asked, ranks), cfg.metrics))


def first(cfg: Config, asked: Sequence[Question], ranks: Mapping[str, int] | None = None) -> Baseline:
    result = run(cfg, asked, ranks).result
    assert result is not None
    return parse(cfg.baseline, dumps(document(cfg.k, fingerprint(cfg, asked), {"one": retriever_entry(result)})))


def update(cfg: Config, old: Baseline, asked: Sequence[Question], ranks: Mapping[str, int] | None = None, *,
           allow: bool = False) -> tuple[Baseline | None, UpdatePlan, Judge]:
    """`pytest --rag-update-baseline -k one`, without pytest: the judge, the plan, the file read back."""
    fp = fingerprint(cfg, asked)
    runs = {"one": run(cfg, asked, ranks)}
    judge = Judge(cfg, asked, old, fp, runs, update=True, allow_regression=allow, selected=KEYS)
    plan = baseline_update(cfg, old, fp, runs, KEYS, judge)
    return (parse(cfg.baseline, encode(plan.record)) if plan.record else None), plan, judge


def gate(cfg: Config, old: Baseline, asked: Sequence[Question], ranks: Mapping[str, int] | None = None) -> Judge:
    """`pytest --rag-eval -k one`, without pytest: the judge."""
    return Judge(cfg, asked, old, fingerprint(cfg, asked), {"one": run(cfg, asked, ranks)}, selected=KEYS)


def passes(judge: Judge) -> bool:
    return all(judge.outcome(key).passed for key in KEYS)


def approved(baseline: Baseline) -> dict[str, tuple[str, ...]]:
    return dict(baseline.retrievers["one"].approved)


FIFTY = questions(50)


def test_accepted_drops_do_not_accumulate(tmp_path: Path) -> None:
    """significance none, tolerance 0.02: each update moves one more question's chunk to rank 2 (ndcg@3
    -0.007381 each against the first): -0.0074 and -0.0148 pass and keep the approved rankings; -0.0221
    is refused, although it is only 0.0074 below the last recorded."""
    cfg = config(tmp_path, "tolerance = 0.02")
    old = first(cfg, FIFTY)
    one, plan, _ = update(cfg, old, FIFTY, {"q001": 2})
    assert one is not None and not plan.failed
    assert one.retrievers["one"].metrics["ndcg@3"] == round(1 - (1 - RANK_2) / 50, 6)
    assert approved(one) == {"q001": tuple(rankings(FIFTY)["q001"])}, "the first approval is kept"
    two, plan, _ = update(cfg, one, FIFTY, {"q001": 2, "q002": 2})
    assert two is not None and not plan.failed and set(approved(two)) == {"q001", "q002"}
    judge = gate(cfg, two, FIFTY, {"q001": 2, "q002": 2, "q003": 2})
    assert not passes(judge)
    three, plan, judge = update(cfg, two, FIFTY, {"q001": 2, "q002": 2, "q003": 2})
    assert three is None and plan.failed
    assert plan.lines[0] == (
        "rag: refused to record ndcg@3 of 'one': 0.9779 is below the bar's 1.0000 (-0.0221, tolerance 0.0200); "
        "fix it and re-run, or pass --rag-allow-regression to record it, which lowers the bar: the pull request "
        "then needs the approval label (rag-baseline-approved unless the action's `label` input names another)")
    assert plan.lines[-1] == f"rag: {cfg.baseline} is left as it was, byte for byte"


def test_the_judge_scores_the_approved_rankings_never_the_stored_values(tmp_path: Path) -> None:
    """Judge.recorded is the file's entry; Judge.bar the approved rankings scored under today's exam. A value
    written into the file by hand changes no comparison."""
    cfg = config(tmp_path, "tolerance = 0.02")
    kept, _, _ = update(cfg, first(cfg, FIFTY), FIFTY, {"q001": 2})
    assert kept is not None
    doc = json.loads(kept.path.read_text(encoding="utf-8")) if kept.path.exists() else dict(kept.document)
    doc["retrievers"]["one"]["metrics"]["ndcg@3"] = 1.0
    doc["retrievers"]["one"]["questions"]["q001"]["metrics"]["ndcg@3"] = 0.1
    forged = parse(cfg.baseline, dumps(doc))
    for side in (kept, forged):
        judge = gate(cfg, side, FIFTY, {"q001": 2})
        recorded, bar = judge.recorded("one"), judge.bar("one")
        assert recorded is not None and bar is not None
        assert bar.metrics["ndcg@3"] == 1.0 and bar.questions["q001"].metrics["ndcg@3"] == 1.0
        comparison = judge.comparison("one", "ndcg@3")
        assert comparison is not None and comparison.baseline == 1.0 and comparison.value == 0.992619
        assert comparison.last_update == 0.992619, "the last update's rankings, scored, not its stored values"


def test_the_flag_lowers_the_bar_to_today_s_rankings(tmp_path: Path) -> None:
    cfg = config(tmp_path, "tolerance = 0.02")
    old = first(cfg, FIFTY)
    half = {f"q{n:03d}": 0 for n in range(1, 26)}
    new, plan, judge = update(cfg, old, FIFTY, half, allow=True)
    assert new is not None and "approved" not in new.document["retrievers"]["one"]
    outcome = judge.outcome(KEYS[1])
    assert outcome.passed and outcome.summary == (
        "recall@3 of 'one': 0.5000 to be recorded; it lowers the bar (0.5000 is below the bar's 1.0000 (-0.5000, "
        "tolerance 0.0200)), as --rag-allow-regression allows")
    after = gate(cfg, new, FIFTY, half)
    assert passes(after) and after.comparison("one", "recall@3") is not None


@pytest.mark.parametrize("start, today, replaced", [
    ({f"q{n:03d}": 2 for n in range(1, 26)}, {}, True),  # ndcg@3 +0.1845, recall unchanged: the bar follows
    ({"q001": 2}, {}, False),  # +0.0074: passes, raises nothing
    ({f"q{n:03d}": 2 for n in range(1, 26)}, {"q050": 0}, False),  # ndcg +0.1645 but recall -0.02: kept
    ({"q001": 2}, {"q002": 2}, False),  # the same means, moved around: kept
])
def test_an_update_replaces_the_approved_rankings_only_when_nothing_fell_and_one_rose_by_more_than_the_tolerance(
        tmp_path: Path, start: dict[str, int], today: dict[str, int], replaced: bool) -> None:
    cfg = config(tmp_path, "tolerance = 0.02")
    base = first(cfg, FIFTY, start)
    new, plan, _ = update(cfg, base, FIFTY, today)
    assert new is not None and not plan.failed
    old = rankings(FIFTY, start)
    expected = {} if replaced else {qid: tuple(old[qid]) for qid, ranking in rankings(FIFTY, today).items()
                                    if ranking != old[qid]}
    assert approved(new) == expected


TWO_HUNDRED = questions(200)


def test_alternating_updates_do_not_move_the_approved_rankings_down(tmp_path: Path) -> None:
    """Tolerance 0.02, 200 questions, 80 at rank 2. Update 1 raises ndcg@3 by 0.0314 (17 to rank 1), nothing
    fell: approved. Update 2 loses 3 questions (recall -0.015): passes, the approval kept. Update 3 raises
    ndcg@3 by 0.0404 against the approval (30 more to rank 1) while recall is still -0.015: kept, as nothing
    may be below the approval. Update 4 loses 3 more: recall -0.03 against the first approval, refused."""
    cfg = config(tmp_path, "tolerance = 0.02")
    ranks = {f"q{n:03d}": 2 for n in range(1, 81)}
    base = first(cfg, TWO_HUNDRED, ranks)
    steps = [
        {**ranks, **{f"q{n:03d}": 1 for n in range(1, 18)}},
        {**ranks, **{f"q{n:03d}": 1 for n in range(1, 18)}, **{f"q{n:03d}": 0 for n in range(198, 201)}},
        {**ranks, **{f"q{n:03d}": 1 for n in range(1, 48)}, **{f"q{n:03d}": 0 for n in range(198, 201)}},
        {**ranks, **{f"q{n:03d}": 1 for n in range(1, 48)}, **{f"q{n:03d}": 0 for n in range(195, 201)}},
    ]
    one, plan, judge = update(cfg, base, TWO_HUNDRED, steps[0])
    assert one is not None and approved(one) == {}, "raised by more than the tolerance, nothing fell: approved"
    two, plan, _ = update(cfg, one, TWO_HUNDRED, steps[1])
    assert two is not None and set(approved(two)) == {"q198", "q199", "q200"}
    three, plan, judge = update(cfg, two, TWO_HUNDRED, steps[2])
    ndcg, recall = judge.comparison("one", "ndcg@3"), judge.comparison("one", "recall@3")
    assert ndcg is not None and recall is not None and ndcg.delta is not None and ndcg.delta > 0.04
    assert recall.delta == -0.015
    assert three is not None and set(approved(three)) == {"q198", "q199", "q200"} | {
        f"q{n:03d}" for n in range(18, 48)}, "the first approval is kept: recall is below it"
    four, plan, _ = update(cfg, three, TWO_HUNDRED, steps[3])
    assert four is None and plan.failed
    assert plan.lines[0].startswith("rag: refused to record recall@3 of 'one': 0.9700 is below the bar's 1.0000 "
                                    "(-0.0300, tolerance 0.0200)")


def test_an_update_with_nothing_new_writes_nothing(tmp_path: Path) -> None:
    """Kept approved rankings are written again as they were: recording the same rankings twice is byte-identical."""
    cfg = config(tmp_path, "tolerance = 0.02")
    once, _, _ = update(cfg, first(cfg, FIFTY), FIFTY, {"q001": 2})
    assert once is not None
    again, plan, _ = update(cfg, once, FIFTY, {"q001": 2})
    assert again is None and not plan.failed and plan.lines[-1].endswith("is already up to date")


ADDED = (*FIFTY, Question("q051", "新问题", {"g051": 1}))
EDITED = (replace(FIFTY[0], query=FIFTY[0].query + "？"), *FIFTY[1:])
REMOVED = FIFTY[1:]


def test_an_added_question_joins_the_bar_and_needs_no_flag(tmp_path: Path) -> None:
    cfg = config(tmp_path, "tolerance = 0.02")
    old, _, _ = update(cfg, first(cfg, FIFTY), FIFTY, {"q001": 2})
    assert old is not None
    new, plan, _ = update(cfg, old, ADDED, {"q001": 2, "q051": 0})
    assert new is not None and not plan.failed
    assert set(approved(new)) == {"q001"}, "q051 joins with today's ranking"


def test_edited_questions_recorded_lower_are_a_lowering(tmp_path: Path) -> None:
    """Edit a query and record lower values: its approved value leaves, a lower one replaces it."""
    cfg = config(tmp_path)
    old = first(cfg, FIFTY)
    gone, plan, _ = update(cfg, old, EDITED, {"q001": 0})
    assert gone is None and plan.failed
    assert plan.lines[0].startswith(
        "rag: refused to record ndcg@3 of 'one': the 1 edited question (q001): bar 1.0000, their new values 0.0000, "
        "below the bar; fix it and re-run, or pass --rag-allow-regression")
    allowed, plan, _ = update(cfg, old, EDITED, {"q001": 0}, allow=True)
    assert allowed is not None and approved(allowed) == {}
    better, plan, _ = update(cfg, old, EDITED)
    assert better is not None and not plan.failed


@pytest.mark.parametrize("rank, refused", [(1, True), (0, False)])
def test_a_removed_question_lowers_the_bar_when_it_was_better_than_the_rest(
        tmp_path: Path, rank: int, refused: bool) -> None:
    """q001's approved value is scored under the base's exam (the labels the file keeps)."""
    cfg = config(tmp_path)
    half = {f"q{n:03d}": 0 for n in range(2, 51)}
    new, plan, _ = update(cfg, first(cfg, FIFTY, {**half, "q001": rank}), REMOVED, half)
    assert (new is None) is refused
    if refused:
        assert "the 1 removed question (q001): bar 1.0000, the bar of the questions kept 0.0000, below the bar" in (
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
        assert entry.bar == {} and entry.approved == {}
        for label in entry.metrics:
            assert entry.bar_values(label) == {qid: q.metrics[label] for qid, q in entry.questions.items()
                                               if label in q.metrics}


def test_a_format_2_baseline_reads_with_its_recorded_rankings_approved() -> None:
    old = read(FORMAT_2)
    assert old.format_version == 2 and old.retrievers
    for entry in old.retrievers.values():
        assert entry.bar == {} and entry.approved == {}
        assert entry.approved_rankings() == {qid: q.ranking for qid, q in entry.questions.items()}


def format_3(baseline: Baseline, bar: Mapping[str, Mapping[str, float]] | None = None) -> Baseline:
    """`baseline` as a format-3 file wrote it: no labels kept, no approved rankings, and `bar` (a value bar
    kept by an update that passed) where given."""
    doc = json.loads(dumps(baseline.document))
    doc["format_version"] = 3
    del doc["fingerprint"]["questions"]["labels"]
    entry = doc["retrievers"]["one"]
    entry.pop("approved", None)
    if bar:
        entry["bar"] = {label: dict(values) for label, values in bar.items()}
    return parse(baseline.path, dumps(doc))


def test_a_format_3_value_bar_keeps_an_accepted_drop_refused(tmp_path: Path) -> None:
    """A format-3 file recorded q001 at rank 2 (an accepted drop) and kept the bar's 1.0 for it: after the
    upgrade, two more questions at rank 2 are -0.0148 against what it recorded but -0.0221 against the kept
    bar: the gate fails and the update refuses, and the header names the entry's value bar once. An update
    that raises the bar by more than the tolerance under every exam replaces it with approved rankings."""
    cfg = config(tmp_path, "tolerance = 0.02")
    recorded = first(cfg, FIFTY, {"q001": 2})
    old = format_3(recorded, {label: {"q001": 1.0} for label in LABELS if label == "ndcg@3"})
    assert old.format_version == 3 and old.retrievers["one"].bar == {"ndcg@3": {"q001": 1.0}}
    worse = {"q001": 2, "q002": 2, "q003": 2}
    judge = gate(cfg, old, FIFTY, worse)
    outcome = judge.outcome(KEYS[0])
    assert not outcome.passed and outcome.summary.startswith(
        "ndcg@3 of 'one' fell from 1.0000 to 0.9779 (-0.0221, tolerance 0.0200)")
    assert "value bars kept from a format-3 baseline, compared as stored until an update raises them by more than " \
           "the tolerance under both exams: one (ndcg@3)" in judge.notes()
    refused, plan, _ = update(cfg, old, FIFTY, worse)
    assert refused is None and plan.failed
    kept, plan, _ = update(cfg, old, FIFTY, {"q001": 2})
    assert kept is not None and kept.format_version == 5
    assert kept.document["retrievers"]["one"]["bar"] == {"ndcg@3": {"q001": 1.0}}, "the value bar stays"
    assert "labels" in kept.fingerprint["questions"]
    raised, plan, _ = update(cfg, format_3(first(cfg, FIFTY, {f"q{n:03d}": 2 for n in range(1, 26)}),
                                          {"ndcg@3": {"q001": 1.0}}), FIFTY)
    assert raised is not None and "bar" not in raised.document["retrievers"]["one"]
    assert approved(raised) == {}


def test_a_format_3_file_whose_bar_is_its_recorded_values_behaves_as_a_new_file(tmp_path: Path) -> None:
    """No kept bar: the recorded rankings are the approved ones; judged and updated as a format-4 file is,
    and the update writes the labels it lacked."""
    cfg = config(tmp_path, "tolerance = 0.02")
    new = first(cfg, FIFTY, {"q001": 2})
    old = format_3(new)
    for side in (old, new):
        judge = gate(cfg, side, FIFTY, {"q001": 2, "q002": 2})
        assert passes(judge) and not judge.value_bar_notes()
        assert judge.comparison("one", "ndcg@3") == gate(cfg, new, FIFTY, {"q001": 2, "q002": 2}).comparison(
            "one", "ndcg@3")
    upgraded, plan, _ = update(cfg, old, FIFTY, {"q001": 2, "q002": 2})
    again, _, _ = update(cfg, new, FIFTY, {"q001": 2, "q002": 2})
    assert upgraded is not None and again is not None
    assert dumps(upgraded.document) == dumps(again.document), "byte for byte the file a format-4 baseline gives"
