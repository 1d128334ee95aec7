"""What changed since the baseline, by hand: the yardstick, the system under test, the corpus, the questions."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from projects import write_project

from pytest_ragretrieval.baseline.fingerprint import (
    chunks_digest,
    corpus_record,
    evalset_digest,
    question_record,
    questions_record,
    yardstick,
)
from pytest_ragretrieval.baseline.format import parse
from pytest_ragretrieval.baseline.since import (
    LISTED,
    Change,
    CorpusChange,
    corpus_change,
    detectable,
    paired,
    question_changes,
    show,
    since,
)
from pytest_ragretrieval.baseline.verify import reproduced
from pytest_ragretrieval.config.settings import load_config
from pytest_ragretrieval.core.errors import RagError
from pytest_ragretrieval.evalset.jsonl import load_chunks, load_evalset
from pytest_ragretrieval.evalset.records import Chunk, Question
from pytest_ragretrieval.record.upgrade import fingerprint_1 as upgraded
from pytest_ragretrieval.scoring.metrics import METRICS_VERSION
from pytest_ragretrieval.scoring.stats import holm

ROOT = Path(__file__).resolve().parents[2]
FORMAT_1 = ROOT / "tests" / "data" / "baseline-format-1.json"


def test_values_are_shown_as_json_and_long_ones_are_cut() -> None:
    assert str(Change("hybrid.weights", [1.0, 0.5], [0.2, 1.0])) == "hybrid.weights [1.0, 0.5] -> [0.2, 1.0]"
    assert str(Change("tokenizer", "jieba 0.42.1", None)) == 'tokenizer "jieba 0.42.1" -> (none)'
    assert show("x" * 100) == '"' + "x" * 58 + "…"


def test_a_retrievers_changes_carry_its_sources_by_dotted_path_and_are_listed_once() -> None:
    old = {"retrievers": {"bm25": {"k1": 1.5}, "hybrid": {"weights": [1.0, 0.5], "reads": {"bm25": {"k1": 1.5}}}}}
    new = {"retrievers": {"bm25": {"k1": 1.2}, "hybrid": {"weights": [0.2, 1.0], "reads": {"bm25": {"k1": 1.2}}}}}
    found = since(old, new, ["bm25", "hybrid"])
    assert found.of("hybrid") == ["hybrid.reads.bm25.k1 1.5 -> 1.2", "hybrid.weights [1.0, 0.5] -> [0.2, 1.0]"]
    assert found.system() == ["bm25.k1 1.5 -> 1.2", "hybrid.weights [1.0, 0.5] -> [0.2, 1.0]"]
    assert found.lines() == ["compared across changes: bm25.k1 1.5 -> 1.2; hybrid.weights [1.0, 0.5] -> [0.2, 1.0]"]
    assert found.comparable and not found.data_changed
    reader_only = since({"retrievers": {"hybrid": old["retrievers"]["hybrid"]}},
                        {"retrievers": {"hybrid": new["retrievers"]["hybrid"]}}, ["hybrid"])
    assert reader_only.system()[0] == "hybrid.reads.bm25.k1 1.5 -> 1.2", "named under reads when its source is not"


def test_the_search_settings_in_effect_are_named_and_an_older_record_without_them_is_no_change() -> None:
    """Before, a DBA's `ALTER ROLE gate SET hnsw.ef_search = 4` changed nothing the fingerprint held."""
    engine = {"server": "16.4", "hnsw.ef_search": 40}
    before = {"retrievers": {"prod": {"type": "table", "engine": engine}}}
    session = {"hnsw.ef_search": "40 (search_settings)", "ivfflat.probes": "1 (server default)"}
    recorded = {"retrievers": {"prod": {"type": "table", "engine": {**engine, "session": session}}}}
    assert since(before, recorded, ["prod"]).lines() == []
    changed = {**session, "ivfflat.probes": "3 (database)"}
    now = {"retrievers": {"prod": {"type": "table", "engine": {**engine, "session": changed}}}}
    assert since(recorded, now, ["prod"]).system() == [
        'prod.engine.session.ivfflat.probes "1 (server default)" -> "3 (database)"']
    assert since(recorded, before, ["prod"]).system() != [], "a record that loses them is a change"


def test_the_yardstick_alone_makes_values_incomparable() -> None:
    old = {"yardstick": {"k": 5, "metrics_version": 1, "grading_version": 1}, "tokenizer": "jieba 0.42.1"}
    new = {"yardstick": {"k": 3, "metrics_version": 1, "grading_version": 1}, "tokenizer": "english 1"}
    found = since(old, new)
    assert not found.comparable and [str(c) for c in found.yardstick] == ["k 5 -> 3"]
    assert found.lines() == ["not comparable: the yardstick changed: k 5 -> 3"]
    assert since({**old, "yardstick": new["yardstick"]}, new).lines() == [
        'compared across changes: tokenizer "jieba 0.42.1" -> "english 1"']


def test_the_corpus_is_described_chunk_by_chunk() -> None:
    old = {"sha256": "1", "count": 3, "digests": {"a": "1", "b": "2", "c": "3"}}
    new = {"sha256": "2", "count": 3, "digests": {"a": "1", "b": "9", "d": "4"}}
    assert str(corpus_change(old, new)) == "chunks: 1 edited (b), 1 added (d), 1 removed (c)"
    assert corpus_change(old, old) is None
    many = {"sha256": "3", "digests": {f"c{i:02d}": "x" for i in range(LISTED + 2)}}
    assert str(corpus_change({"sha256": "0", "digests": {}}, many)) == (
        "chunks: 0 edited, 12 added (c00, c01, c02, c03, c04, c05, c06, c07, c08, c09, ... and 2 more), 0 removed")


def test_above_the_limit_the_corpus_is_a_digest_and_a_size() -> None:
    chunks = [Chunk("a", "x"), Chunk("b", "y"), Chunk("c", "z")]
    assert corpus_record(chunks, limit=3)["digests"]["a"] == corpus_record(chunks[:1], limit=3)["digests"]["a"]
    big = corpus_record(chunks, limit=2)
    assert big == {"sha256": chunks_digest(chunks), "count": 3}
    edited = corpus_record([Chunk("a", "x"), Chunk("b", "y!"), Chunk("c", "z"), Chunk("d", "w")], limit=2)
    assert str(corpus_change(big, edited)) == (
        "chunks: changed (3 -> 4 chunks; not itemized above 20,000 chunks; `git diff` on the chunks file names them)")
    assert str(corpus_change({"sha256": "1"}, edited)) == (
        "chunks: changed (4 chunks now; not itemized: a format-1 baseline records one digest for the whole corpus)")
    assert len(corpus_record(chunks)["digests"]["b"]) == 12


def test_questions_are_comparable_when_query_and_graded_gold_are_unchanged() -> None:
    before = [Question("q1", "a", {"c1": 1}, ("x",)), Question("q2", "b", {"c2": 2}), Question("q3", "c", {"c3": 1}),
              Question("q4", "d", {"c4": 1, "c5": 1}, snippet_ids=frozenset({"c4", "c5"})), Question("q5", "e", {})]
    after = [Question("q1", "a", {"c1": 1}, ("y",)), Question("q2", "b!", {"c2": 2}), Question("q3", "c", {"c3": 2}),
             Question("q4", "d", {"c4": 1}, snippet_ids=frozenset({"c4"})), Question("q6", "f", {"c6": 1})]
    corpus = CorpusChange(5, 5, edited=("c5",))
    format_3 = {key: value for key, value in questions_record(before).items() if key != "labels"}
    found = question_changes(format_3, questions_record(after), corpus)
    assert found.comparable == {"q1"}
    assert found.added == ("q6",) and found.removed == ("q5",) and found.retagged == (("q1", "x -> y"),)
    assert dict(found.edited) == {
        "q2": "query", "q3": "graded gold", "q4": "graded gold: its relevant_text no longer matches c5 (edited)"}
    kept = question_changes(questions_record(before), questions_record(after), corpus)
    assert kept.comparable == {"q1", "q3"}, "a baseline that keeps its labels compares an unchanged query"
    assert kept.relabelled == ("q3",), "q4's label left c5, which was edited: the ids changed meaning"
    assert dict(kept.edited) == {"q2": "query", "q4": "graded gold: its relevant_text no longer matches c5 (edited)"}
    assert found.lines() == [
        "questions: 1 comparable, 1 added (q6), 1 removed (q5), 3 edited (q2: query, q3: graded gold, "
        "q4: graded gold: its relevant_text no longer matches c5 (edited)); added ones are scored, never judged; "
        "edited ones are not compared",
        "questions retagged (still compared): q1 x -> y",
    ]
    same = questions_record(before)
    assert not question_changes(same, same, None).changed


def test_means_are_paired_over_the_common_questions() -> None:
    old = {"q1": {"r@5": 1.0}, "q2": {"r@5": 0.5}, "q3": {"r@5": 0.0}}
    new = {"q1": {"r@5": 0.5}, "q2": {"r@5": 0.5}, "q4": {"r@5": 1.0}}
    pairs = paired("r@5", old, new, {"q1", "q2", "q3", "q4"})
    assert (pairs.ids, pairs.before, pairs.after, pairs.whole) == (("q1", "q2"), (1.0, 0.5), (0.5, 0.5), False)
    assert paired("r@5", old, old, {"q1", "q2", "q3"}).whole


def test_the_minimum_detectable_effect_by_hand() -> None:
    """Values 1, 0, 1, 0: sd = sqrt(4 * 0.25 / 3) = 0.577350, n = 4, so (1.959964 + 0.841621) * 0.577350 / 2."""
    assert detectable([1.0, 0.0, 1.0, 0.0]) == round((1.959964 + 0.841621) * math.sqrt(1 / 3) / 2, 6) == 0.808748
    assert detectable([0.5, 0.5, 0.5]) == 0.0
    assert detectable([1.0]) is None


def test_holm_by_hand() -> None:
    """Sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1: 0.02, 0.03, 0.06, max(0.06, 0.04) = 0.06."""
    assert holm([0.01, 0.04, 0.03, 0.005]) == [0.03, 0.06, 0.06, 0.02]
    assert holm([0.5, 0.5]) == [1.0, 1.0]
    assert holm([0.02]) == [0.02] and holm([]) == []


def test_a_format_1_baseline_loads_upgraded() -> None:
    """The sample's baseline as format 1 recorded it: the yardstick, its one corpus and eval-set digest each."""
    baseline = parse(FORMAT_1, FORMAT_1.read_text(encoding="utf-8"))
    assert baseline.format_version == 1
    fingerprint = baseline.fingerprint
    assert fingerprint["yardstick"] == {"k": 5, "metrics_version": 1, "grading_version": 1}
    chunks = load_chunks(ROOT / "fixtures" / "chunks.jsonl")
    questions = load_evalset(ROOT / "fixtures" / "evalset.jsonl", chunks)
    assert fingerprint["chunks"] == {"sha256": chunks_digest(chunks)}
    assert fingerprint["questions"] == {"sha256": evalset_digest(questions)}
    assert upgraded(json.loads(FORMAT_1.read_text(encoding="utf-8"))["fingerprint"]) == fingerprint
    today = {"chunks": corpus_record(chunks), "questions": questions_record(questions)}
    found = since(fingerprint, {**fingerprint, **today})
    assert found.corpus is None and not found.questions.changed and found.questions.comparable == {
        q.id for q in questions}


def test_a_format_1_baseline_compares_the_questions_whose_values_todays_gold_reproduces() -> None:
    baseline = parse(FORMAT_1, FORMAT_1.read_text(encoding="utf-8"))
    chunks = load_chunks(ROOT / "fixtures" / "chunks.jsonl")
    questions = load_evalset(ROOT / "fixtures" / "evalset.jsonl", chunks)
    q01 = next(q for q in questions if q.id == "q01")
    assert baseline.retrievers["vector"].questions["q01"].metrics["recall@5"] == 0.0
    regraded = [Question(q.id, q.query, {**q.relevance, "travel-023": 1}) if q is q01 else q for q in questions]
    assert reproduced(baseline, 5, questions) == {q.id for q in questions}
    assert reproduced(baseline, 5, regraded) == {q.id for q in questions} - {"q01"}, (
        "travel-023, vector's first hit for q01, is now gold: its recorded 0 no longer follows")
    assert question_record(q01) != question_record(regraded[0])


@pytest.mark.parametrize("key", ["yardstick", "chunks", "questions"])
def test_a_format_2_fingerprint_section_of_the_wrong_type_is_one_line(key: str) -> None:
    doc = {"format_version": 2, "k": 5, "retrievers": {}, "fingerprint": {key: []}}
    with pytest.raises(Exception, match=rf"fingerprint.{key} must be an object, got an array; fix it"):
        parse(Path("b.json"), json.dumps(doc))


def test_grade_0_judgments_added_from_a_pool_keep_a_question_comparable() -> None:
    """`ragretrieval pool --apply` adds grade-0 judgments: they move no metric but judged@k, so the question
    stays comparable (a retune in the same pull request is still judged on it); a new relevant chunk, a
    regrade, or grade 0 on a no-answer question (which changes what it is) still edits it."""
    before = [Question("q1", "a", {"c1": 1}), Question("q2", "b", {"c2": 1, "c3": 0}), Question("q3", "c", {}),
              Question("q4", "d", {"c4": 2})]
    after = [Question("q1", "a", {"c1": 1, "c9": 0}), Question("q2", "b", {"c2": 1}), Question("q3", "c", {"c9": 0}),
             Question("q4", "d", {"c4": 2, "c8": 1})]
    format_3 = {key: value for key, value in questions_record(before).items() if key != "labels"}
    found = question_changes(format_3, questions_record(after), None)
    assert found.comparable == {"q1", "q2"}
    assert [qid for qid, _ in found.edited] == ["q3", "q4"]
    assert question_changes(questions_record(before), questions_record(after), None).comparable == {
        "q1", "q2", "q3", "q4"}, "format 4 keeps the labels: every question is judged, q3 and q4 under both exams"
    pooled = question_record(after[0])
    assert {key: value for key, value in pooled.items() if key != "judged"} == question_record(before[0])
    assert "judged" in pooled and "judged" not in question_record(before[0])


@pytest.mark.parametrize(("line", "recorded"), [("", 0.0001), ("ann_tie_epsilon = 0.002\n", 0.002)])
def test_the_yardstick_records_ann_recall_s_tie_epsilon_and_a_change_of_it_still_compares(
    tmp_path: Path, line: str, recorded: float
) -> None:
    """ann_recall counts a swap within `ann_tie_epsilon` of the exact k-th as a tie: the fingerprint says which
    epsilon it counted under; changing it compares as before (a setting: review/changes.py names a raise)."""
    write_project(tmp_path, settings=line)
    found = yardstick(load_config(None, tmp_path))
    assert found == {"k": 3, "metrics_version": METRICS_VERSION, "grading_version": 1, "ann_tie_epsilon": recorded}
    other = {**found, "ann_tie_epsilon": recorded * 10}
    assert since({"yardstick": found}, {"yardstick": other}, set()).yardstick == ()


def test_a_negative_tie_epsilon_is_one_line_naming_the_key(tmp_path: Path) -> None:
    write_project(tmp_path, settings="ann_tie_epsilon = -0.1\n")
    with pytest.raises(RagError, match=r"ann_tie_epsilon") as caught:
        load_config(None, tmp_path)
    assert "\n" not in str(caught.value)
