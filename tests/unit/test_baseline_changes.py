"""Classifying a baseline change against the base branch: what lowers the bar and what does not."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from stages import document

from pytest_ragretrieval.baseline.format import dumps, parse
from pytest_ragretrieval.core.errors import BaselineError
from pytest_ragretrieval.record.exam import gold_digest
from pytest_ragretrieval.review.changes import (
    Changes,
    Entry,
    LostHit,
    SettingChange,
    ValueChange,
    classify,
    dumps_changes,
    parse_changes,
)
from pytest_ragretrieval.review.settings import GateSettings

QUESTION_DIGESTS = {qid: {"query": f"{qid}-query", "gold": f"{qid}-gold", "tags": []} for qid in ("q1", "q2", "q3")}
FINGERPRINT: dict[str, Any] = {
    "yardstick": {"k": 2, "metrics_version": 1, "grading_version": 1}, "tokenizer": "jieba 0.42.1",
    "chunks": {"sha256": "c" * 64, "count": 1, "digests": {"c1": "0c0c0c0c0c0c"}},
    "questions": {"sha256": "e" * 64, "count": 3, "digests": QUESTION_DIGESTS},
    "retrievers": {"bm25": {"type": "bm25", "k1": 1.5}, "vector": {"type": "vector"}},
}
METRICS = {"precision@2": 0.5, "recall@2": 0.75, "ndcg@2": 0.6}


def retriever(metrics: dict[str, float] | None = None, tags: dict[str, dict[str, float]] | None = None,
              questions: dict[str, dict[str, float]] | None = None) -> dict[str, Any]:
    return {
        "metrics": dict(METRICS if metrics is None else metrics),
        "tags": tags or {},
        "questions": {qid: {"ranking": ["c1"], "metrics": values} for qid, values in (questions or {}).items()},
    }


def baseline(name: str, retrievers: dict[str, Any], fingerprint: dict[str, Any] | None = None,
             unavailable: dict[str, str] | None = None) -> Any:
    found = FINGERPRINT if fingerprint is None else fingerprint
    named = {**{name: {"type": name} for name in retrievers}, **found.get("retrievers", {})}
    doc = document(2, {**found, "retrievers": named}, retrievers, unavailable)
    section = doc["fingerprint"]["questions"]
    if "labels" not in section:
        doc["format_version"] = 3  # keeps no labels: compared by its stored values
    else:  # the gold digests the kept labels give, as a run records both
        section["digests"] = {qid: {**entry, "gold": gold_digest(section["labels"].get(qid, {}), ())}
                              for qid, entry in section["digests"].items()}
    return parse(Path(name), dumps(doc))


def settings(**changes: Any) -> GateSettings:
    base = GateSettings(metrics=tuple(METRICS), tolerances=dict.fromkeys(METRICS, 0.0),
                        retrievers=("bm25", "vector"))
    return replace(base, **changes)


OLD = baseline("old.json", {"bm25": retriever(), "vector": retriever()})


def test_identical_baselines_and_settings_change_nothing() -> None:
    changes = classify(OLD, baseline("new.json", {"bm25": retriever(), "vector": retriever()}), settings(), settings())
    assert changes.unchanged and not changes.lowers_the_bar
    assert (changes.old_path, changes.new_path) == ("old.json", "new.json")


def test_lowered_and_raised_values_per_retriever_in_metric_order() -> None:
    new = baseline("new.json", {
        "bm25": retriever({"precision@2": 0.5, "recall@2": 0.7, "ndcg@2": 0.55}),
        "vector": retriever({"precision@2": 0.6, "recall@2": 0.75, "ndcg@2": 0.6}),
    })
    changes = classify(OLD, new)
    assert changes.lowered == (ValueChange("bm25", "recall@2", 0.75, 0.7), ValueChange("bm25", "ndcg@2", 0.6, 0.55))
    assert changes.raised == (ValueChange("vector", "precision@2", 0.5, 0.6),)
    assert changes.lowers_the_bar
    assert changes.lowered[0].delta == pytest.approx(-0.05)


def test_a_change_below_rounding_is_no_change() -> None:
    new = baseline("new.json", {"bm25": retriever({**METRICS, "ndcg@2": 0.6 - 1e-12}), "vector": retriever()})
    assert classify(OLD, new).unchanged


def test_removed_and_added_retrievers_and_metrics() -> None:
    new = baseline("new.json", {
        "bm25": retriever({"precision@2": 0.5, "recall@2": 0.75, "mrr@2": 0.4}),
        "hybrid": retriever(),
    })
    changes = classify(OLD, new)
    assert changes.removed == (Entry("bm25", "ndcg@2", "no longer in the baseline"),
                               Entry("vector", "", "no longer in the baseline"))
    assert changes.added == (Entry("bm25", "mrr@2", "new in the baseline"), Entry("hybrid", "", "new in the baseline"))
    assert changes.lowers_the_bar


def test_a_retriever_recorded_as_unavailable_is_removed_with_the_reason() -> None:
    # Its items would be skipped from now on: the bar is gone for it.
    new = baseline("new.json", {"bm25": retriever()}, unavailable={"vector": "model not here"})
    (entry,) = classify(OLD, new).removed
    assert entry == Entry("vector", "", "recorded as unavailable: model not here")


def test_the_first_baseline_is_all_new() -> None:
    changes = classify(None, OLD, None, settings(), ["main has no baselines/retrieval.json"])
    assert changes.old_path == "" and not changes.lowers_the_bar
    assert [e.retriever for e in changes.added] == ["bm25", "vector"]
    assert changes.notes == ("main has no baselines/retrieval.json",)


def test_system_changes_are_named_and_lowered_values_still_count() -> None:
    # Re-recorded after a parameter change: compared across it, and the bar still went down.
    fingerprint = {**FINGERPRINT, "retrievers": {"bm25": {"type": "bm25", "k1": 0.5}, "vector": {"type": "vector"}}}
    new = baseline("new.json", {"bm25": retriever({**METRICS, "ndcg@2": 0.4}), "vector": retriever()}, fingerprint)
    changes = classify(OLD, new)
    assert changes.fingerprint == ("bm25.k1 1.5 -> 0.5",) and changes.yardstick == () and changes.questions == ()
    assert changes.lowered == (ValueChange("bm25", "ndcg@2", 0.6, 0.4),)


def test_a_yardstick_change_is_named_and_values_compare_as_recorded() -> None:
    fingerprint = {**FINGERPRINT, "yardstick": {"k": 2, "metrics_version": 2, "grading_version": 1}}
    new = baseline("new.json", {"bm25": retriever({**METRICS, "ndcg@2": 0.4}), "vector": retriever()}, fingerprint)
    changes = classify(OLD, new)
    assert changes.yardstick == ("metrics_version 1 -> 2",) and changes.fingerprint == ()
    assert changes.lowered == (ValueChange("bm25", "ndcg@2", 0.6, 0.4),) and changes.lowers_the_bar


def test_values_are_compared_over_the_questions_both_share() -> None:
    """q3 is new in the pull request and scores 0: over q1 and q2 nothing moved, so nothing is lowered,
    though the recorded mean fell from 0.5 to 0.3333."""
    old = baseline("old.json", {"bm25": retriever({"recall@2": 0.5}, questions={"q1": {"recall@2": 1.0},
                                                                                "q2": {"recall@2": 0.0}})},
                   {**FINGERPRINT, "questions": {"sha256": "e0" * 32, "digests": {q: QUESTION_DIGESTS[q] for q in ("q1", "q2")}}})
    new = baseline("new.json", {"bm25": retriever({"recall@2": 0.333333}, questions={
        "q1": {"recall@2": 1.0}, "q2": {"recall@2": 0.0}, "q3": {"recall@2": 0.0}})})
    changes = classify(old, new)
    assert changes.lowered == () and changes.raised == () and not changes.lowers_the_bar
    assert changes.questions == ("questions: 2 comparable, 1 added (q3), 0 removed, 0 edited; added ones are scored, never judged",)
    edited = {**QUESTION_DIGESTS, "q1": {**QUESTION_DIGESTS["q1"], "gold": "other"}}
    newer = baseline("newer.json", {"bm25": retriever({"recall@2": 0.0}, questions={
        "q1": {"recall@2": 0.0}, "q2": {"recall@2": 0.0}, "q3": {"recall@2": 0.0}})},
        {**FINGERPRINT, "questions": {"sha256": "e2" * 32, "digests": edited}})
    # q1's gold changed: its bar value 1.0 left, and its new value 0.0 replaces it: a lowering (issue 32)
    assert classify(old, newer).lowered == (ValueChange(
        "bm25", "recall@2", 1.0, 0.0, scope="the 1 edited question (q1): bar 1.0000, their new values 0.0000"),)
    same = baseline("same.json", {"bm25": retriever({"recall@2": 0.333333}, questions={
        "q1": {"recall@2": 1.0}, "q2": {"recall@2": 0.0}, "q3": {"recall@2": 0.0}})},
        {**FINGERPRINT, "questions": {"sha256": "e2" * 32, "digests": edited}})
    assert not classify(old, same).lowers_the_bar  # edited, and scoring as well as before


def test_tag_values_are_listed_but_do_not_lower_the_bar() -> None:
    old = baseline("old.json", {"bm25": retriever(tags={"keyword": {"ndcg@2": 0.9}, "semantic": {"ndcg@2": 0.3}})})
    new = baseline("new.json", {"bm25": retriever(tags={"keyword": {"ndcg@2": 0.8}, "semantic": {"ndcg@2": 0.4}})})
    changes = classify(old, new)
    assert changes.tags_lowered == (ValueChange("bm25", "ndcg@2", 0.9, 0.8, "keyword"),)
    assert changes.tags_raised == (ValueChange("bm25", "ndcg@2", 0.3, 0.4, "semantic"),)
    assert not changes.lowers_the_bar and not changes.unchanged


@pytest.mark.parametrize(("old", "new", "loosened", "tightened"), [
    (settings(), settings(tolerances={**dict.fromkeys(METRICS, 0.0), "ndcg@2": 0.02}),
     [SettingChange("tolerance", "ndcg@2", "0", "0.02")], []),
    (settings(tolerances=dict.fromkeys(METRICS, 0.05)), settings(tolerances=dict.fromkeys(METRICS, 0.01)),
     [], [SettingChange("tolerance", label, "0.05", "0.01") for label in METRICS]),
    (settings(), settings(significance="randomization"), [SettingChange("significance", "", "none", "randomization")], []),
    (settings(significance="bootstrap"), settings(), [], [SettingChange("significance", "", "bootstrap", "none")]),
    (settings(significance="bootstrap"), settings(significance="randomization"),
     [SettingChange("significance", "", "bootstrap", "randomization")], []),
    (settings(significance="bootstrap"), settings(significance="bootstrap", alpha=0.01),
     [SettingChange("alpha", "", "0.05", "0.01")], []),
    (settings(alpha=0.05), settings(alpha=0.01), [], []),  # alpha means nothing without a test
    # an adjusted p is never below the unadjusted one, nor max-T's above Holm's: later in none, maxt, holm fails less
    (settings(significance="bootstrap", adjustment="none"), settings(significance="bootstrap"),
     [SettingChange("adjustment", "", "none", "maxt")], []),
    (settings(significance="randomization"), settings(significance="randomization", adjustment="holm"),
     [SettingChange("adjustment", "", "maxt", "holm")], []),
    (settings(significance="randomization", adjustment="holm"), settings(significance="randomization", adjustment="none"),
     [], [SettingChange("adjustment", "", "holm", "none")]),
    (settings(adjustment="none"), settings(adjustment="holm"), [], []),  # nor the adjustment without a test
    (settings(fail_on=("metric", "question")), settings(),
     [SettingChange("fail_on", "question", "metric, question", "metric")], []),
    (settings(max_latency_ms={"bm25": 50.0}), settings(max_latency_ms={"bm25": 80.0}),
     [SettingChange("max_latency_ms", "bm25", "50", "80")], []),
    (settings(max_latency_ms={"bm25": 50.0}), settings(), [SettingChange("max_latency_ms", "bm25", "50", "none")], []),
    (settings(), settings(max_latency_ms={"bm25": 50.0}), [], [SettingChange("max_latency_ms", "bm25", "none", "50")]),
    # more of an index's swaps counted as ties: its loss reads as a labelling problem more often
    (settings(), settings(ann_tie_epsilon=0.01), [SettingChange("ann_tie_epsilon", "", "0.0001", "0.01")], []),
    (settings(ann_tie_epsilon=0.01), settings(ann_tie_epsilon=0.0), [],
     [SettingChange("ann_tie_epsilon", "", "0.01", "0")]),
], ids=["tolerance-raised", "tolerance-lowered", "significance-on", "significance-off", "other-test", "alpha-lowered",
        "alpha-without-test", "adjustment-on", "maxt-to-holm", "adjustment-off", "adjustment-without-test",
        "question-gating-off", "latency-raised", "latency-dropped", "latency-added", "ties-raised", "ties-lowered"])
def test_settings_that_loosen_or_tighten_the_gate(old: GateSettings, new: GateSettings,
                                                   loosened: list[SettingChange], tightened: list[SettingChange]) -> None:
    changes = classify(OLD, OLD, old, new)
    assert list(changes.loosened) == loosened
    assert list(changes.tightened) == tightened
    assert changes.lowers_the_bar == bool(loosened)


def test_metrics_and_retrievers_dropped_from_the_config_are_removed_once() -> None:
    new_baseline = baseline("new.json", {"bm25": retriever({"precision@2": 0.5, "recall@2": 0.75})})
    new_settings = settings(metrics=("precision@2", "recall@2"), retrievers=("bm25",),
                            tolerances={"precision@2": 0.0, "recall@2": 0.0})
    changes = classify(OLD, new_baseline, settings(), new_settings)
    assert changes.removed == (
        Entry("", "ndcg@2", "no longer in the configured metrics"),
        Entry("bm25", "ndcg@2", "no longer in the baseline"),
        Entry("vector", "", "no longer in the baseline; no longer configured"),
    )


def test_lost_hits_count_only_where_the_base_gates_questions() -> None:
    old = baseline("old.json", {"bm25": retriever(questions={"q1": {"recall@2": 1.0}, "q2": {"recall@2": 0.0},
                                                             "q3": {"precision@2": 0.5}})})
    new = baseline("new.json", {"bm25": retriever(questions={"q1": {"recall@2": 0.0}, "q2": {"recall@2": 0.0},
                                                             "q3": {"precision@2": 0.5}})})
    assert classify(old, new, settings(), settings()).lost_hits == ()
    gated = settings(fail_on=("metric", "question"))
    changes = classify(old, new, gated, gated)
    assert changes.lost_hits == (LostHit("bm25", "q1"),)
    assert changes.lowers_the_bar


def test_changes_survive_their_json_file(tmp_path: Path) -> None:
    new = baseline("new.json", {"bm25": retriever({**METRICS, "ndcg@2": 0.5}), "hybrid": retriever()})
    changes = classify(OLD, new, settings(), settings(significance="bootstrap"), ["a note"])
    path = tmp_path / "changes.json"
    path.write_text(dumps_changes(changes), encoding="utf-8")
    assert parse_changes(path, path.read_text(encoding="utf-8")) == changes


def test_a_segment_s_lowering_survives_the_file_and_one_without_a_segment_reads_as_the_whole(tmp_path: Path) -> None:
    changes = Changes("main:b.json", "b.json", lowered=(ValueChange("bm25", "recall@3", 1.0, 0.7, exam="today",
                                                                    segment="lang:de"),))
    doc = json.loads(dumps_changes(changes))
    assert doc["lowered"][0]["segment"] == "lang:de" and doc["lowers_the_bar"]
    assert parse_changes(tmp_path / "c.json", json.dumps(doc)) == changes
    del doc["lowered"][0]["segment"]  # a file written before segments: the whole set's lowering
    assert parse_changes(tmp_path / "c.json", json.dumps(doc)).lowered[0].segment == ""


def test_a_lowering_of_todays_rankings_survives_its_json_file_and_the_heads_write_no_side(tmp_path: Path) -> None:
    """`side` is written only where the lowering is today's rankings' (`diff --today`): files the head's side
    alone fills stay as before, and the side is read back."""
    today = ValueChange("bm25", "recall@2", 0.75, 0.5, exam="base", side="today")
    changes = Changes("main:b.json", "b.json", lowered=(ValueChange("bm25", "ndcg@2", 0.6, 0.55), today))
    doc = json.loads(dumps_changes(changes))
    assert ["side" in item for item in doc["lowered"]] == [False, True] and doc["lowered"][1]["side"] == "today"
    path = tmp_path / "changes.json"
    path.write_text(dumps_changes(changes), encoding="utf-8")
    assert parse_changes(path, path.read_text(encoding="utf-8")) == changes


@pytest.mark.parametrize(("text", "message"), [
    ("{", "not valid JSON"),
    ('{"kind": "something else", "version": 1}', "not a baseline-changes file of version 1"),
    ('{"kind": "ragretrieval-baseline-changes", "version": 1}', "malformed baseline-changes file"),
])
def test_a_bad_changes_file_is_one_line_naming_it(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(BaselineError) as caught:
        parse_changes(tmp_path / "changes.json", text)
    assert message in str(caught.value) and "changes.json" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_changes_carry_the_head_s_digests_of_its_approved_rankings_and_its_exam(tmp_path: Path) -> None:
    """What an approval given on these changes binds (review/approved.py): each digest moves with its own
    part of the head's baseline only, and the base's side moves neither."""
    labelled = {**FINGERPRINT, "questions": {**FINGERPRINT["questions"], "labels": {"q1": {"c1": 1}}}}
    questions = {"q1": {"recall@2": 1.0}}
    head = classify(OLD, baseline("new.json", {"bm25": retriever(questions=questions)}, labelled))
    more_gold = {**labelled, "questions": {**labelled["questions"], "labels": {"q1": {"c1": 1, "c2": 2}}}}
    relabelled = classify(OLD, baseline("new.json", {"bm25": retriever(questions=questions)}, more_gold))
    approved = {**retriever(questions=questions), "approved": {"q1": ["c2"]}}
    reapproved = classify(OLD, baseline("new.json", {"bm25": approved}, labelled))
    rebased = classify(baseline("old.json", {"bm25": retriever(questions=questions)}, more_gold),
                       baseline("new.json", {"bm25": retriever(questions=questions)}, labelled))
    assert len({head.approved_digest, head.labels_digest}) == 2 and all(
        len(digest) == 64 for digest in (head.approved_digest, head.labels_digest))
    assert (relabelled.approved_digest, relabelled.labels_digest != head.labels_digest) == (head.approved_digest, True)
    assert (reapproved.labels_digest, reapproved.approved_digest != head.approved_digest) == (head.labels_digest, True)
    assert (rebased.approved_digest, rebased.labels_digest) == (head.approved_digest, head.labels_digest)
    path = tmp_path / "changes.json"
    path.write_text(dumps_changes(head), encoding="utf-8")
    assert parse_changes(path, path.read_text(encoding="utf-8")) == head


def test_a_changes_file_without_digests_reads_and_a_damaged_one_names_the_json_path(tmp_path: Path) -> None:
    doc = json.loads(dumps_changes(classify(OLD, OLD)))
    older = {key: value for key, value in doc.items() if not key.endswith("_digest")}
    assert parse_changes(tmp_path / "changes.json", json.dumps(older)).approved_digest == ""
    with pytest.raises(BaselineError) as caught:
        parse_changes(Path("changes.json"), json.dumps({**doc, "labels_digest": "sha256:" + "0" * 64}))
    assert str(caught.value) == ("changes.json: malformed baseline-changes file: labels_digest must be a digest of 64 "
                                 "lowercase hex digits, got 'sha256:" + "0" * 63 + "'; write it with `ragretrieval "
                                 "diff OLD NEW --json PATH`")
