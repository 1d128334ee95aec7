"""Labels that stay true while the corpus moves (issue 34): an edited gold text names its questions; a split
gold chunk fails with a re-anchoring proposal that `ragretrieval relabel --apply` writes."""
from __future__ import annotations

import json

import pytest
from projects import CHUNKS, GOLD, QUESTIONS, jsonl, set_rankings, write_project

from pytest_ragretrieval.cli import main

RUN = ("-p", "no:cacheprovider")


@pytest.fixture
def recorded(pytester: pytest.Pytester) -> pytest.Pytester:
    write_project(pytester.path)
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    return pytester


def write_chunks(pytester: pytest.Pytester, chunks: list[dict[str, str]]) -> None:
    (pytester.path / "fixtures" / "chunks.jsonl").write_text(jsonl(chunks), encoding="utf-8")


def test_the_baseline_keeps_the_gold_chunks_texts(recorded: pytest.Pytester) -> None:
    baseline = json.loads((recorded.path / "baselines" / "retrieval.json").read_text(encoding="utf-8"))
    gold = {cid for q in QUESTIONS for cid in q["relevant"]}
    assert baseline["fingerprint"]["chunks"]["gold"] == {c["id"]: c["text"] for c in CHUNKS if c["id"] in gold}


def test_an_edited_gold_text_names_its_questions_and_their_drops(recorded: pytest.Pytester) -> None:
    """travel-001 is q01's gold; edited, and the table no longer finds it: q01's drop is named as such."""
    write_chunks(recorded, [dict(c, text="本条已废止。") if c["id"] == "travel-001" else c for c in CHUNKS])
    set_rankings(recorded.path, dict(GOLD, q01=["refund-001"]))
    result = recorded.runpytest("--rag-eval", "-k", "table and recall", "--rag-json", "results.json",
                                "--rag-report", "report.md", "--rag-html", "report.html", *RUN)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "rag: warning: labels to review: q01 (the text of gold chunk travel-001 was edited)",
        "*questions that dropped, worst first:",
        "*  q01: 1.0000 -> 0.0000 (-1.0000) — its gold chunk travel-001 was edited",
        "*1 of the 1 questions that dropped stand on gold text edited since the baseline (q01): review their labels*",
    ])
    results = json.loads((recorded.path / "results.json").read_text(encoding="utf-8"))
    assert results["labels_to_review"] == [{"chunk": "travel-001", "questions": ["q01"]}]
    assert "labels to review: q01 (the text of gold chunk travel-001 was edited)" in results["since_baseline"]["lines"]
    assert "- labels to review: q01 (the text of gold chunk travel-001 was edited)" in (
        recorded.path / "report.md").read_text(encoding="utf-8")
    assert "labels to review: q01 (the text of gold chunk travel-001 was edited)" in (
        recorded.path / "report.html").read_text(encoding="utf-8")


def test_a_split_gold_chunk_is_re_anchored_by_relabel_and_the_next_run_passes(
    recorded: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """travel-002 (q03's grade-2 gold) cut in two at the comma: both halves hold its text, both get grade 2.
    q03's gold moved with the corpus, so it leaves the comparison, and bm25, which ranks one half, scores it
    lower: the question rule fails those items as the update refuses them (on b30c1d3 the gate passed what
    the update refused); recorded with --rag-allow-regression, the next run passes."""
    text = next(c["text"] for c in CHUNKS if c["id"] == "travel-002")
    cut = text.index("，") + 1
    halves = [{"id": "travel-002a", "doc": "差旅报销制度.md", "text": text[:cut]},
              {"id": "travel-002b", "doc": "差旅报销制度.md", "text": text[cut:]}]
    write_chunks(recorded, [piece for c in CHUNKS for piece in (halves if c["id"] == "travel-002" else [c])])
    set_rankings(recorded.path, dict(GOLD, q03=["travel-002a", "travel-002b", "travel-003"]))
    result = recorded.runpytest("--rag-eval", *RUN)
    assert result.ret != 0
    result.stderr.fnmatch_lines([
        "ERROR: fixtures/evalset.jsonl: 1 gold label names what the corpus no longer holds; where its text went:",
        "  q03: travel-002 -> travel-002a, travel-002b (text 100% contained)",
        "apply it with `ragretrieval relabel --apply` (see the diff with `ragretrieval relabel`)",
    ])
    assert main(["relabel", "--apply"]) == 0
    assert "ragretrieval: wrote fixtures/evalset.jsonl (1 label moved)" in capsys.readouterr().out
    questions = [json.loads(line) for line in (recorded.path / "fixtures" / "evalset.jsonl").read_text(
        encoding="utf-8").splitlines()]
    assert questions[2]["relevant"] == {"travel-002a": 2, "travel-002b": 2, "travel-003": 1}
    assert [q for q in questions if q["id"] != "q03"] == [q for q in QUESTIONS if q["id"] != "q03"]
    result = recorded.runpytest("--rag-eval", *RUN)
    result.assert_outcomes(passed=5, failed=3)
    result.stdout.fnmatch_lines(["questions: 5 comparable, 0 added, 0 removed, 1 edited (q03: graded gold)*"])
    result.stdout.fnmatch_lines(["recall@3 of 'bm25' lowers the bar through its questions: the 1 edited question "
                                 "(q03): bar 0.5000, their new values 0.3333, below the bar*"])
    assert recorded.runpytest("--rag-update-baseline", *RUN).ret == 1
    assert recorded.runpytest("--rag-update-baseline", "--rag-allow-regression", *RUN).ret == 0
    recorded.runpytest("--rag-eval", *RUN).assert_outcomes(passed=8)


def test_a_removed_chunk_judged_not_relevant_is_proposed_dropped_and_the_next_run_passes(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """service-001, judged not relevant to q05, removed from the corpus: old code stopped the gate at `unknown
    chunk id 'service-001' in 'not_relevant'` and `relabel` found nothing to relabel, so no run could load."""
    questions = [dict(q, not_relevant=["service-001"]) if q["id"] == "q05" else q for q in QUESTIONS]
    write_project(pytester.path, questions=questions)
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    write_chunks(pytester, [c for c in CHUNKS if c["id"] != "service-001"])
    result = pytester.runpytest("--rag-eval", *RUN)
    assert result.ret != 0
    result.stderr.fnmatch_lines([
        "ERROR: fixtures/evalset.jsonl: 1 gold label names what the corpus no longer holds; where its text went:",
        "  q05: service-001 (in not_relevant) -> (dropped: a grade-0 judgment of a chunk no longer in the corpus)",
        "apply it with `ragretrieval relabel --apply` (see the diff with `ragretrieval relabel`)",
    ])
    assert main(["relabel", "--apply"]) == 0
    assert "ragretrieval: wrote fixtures/evalset.jsonl (1 label moved)" in capsys.readouterr().out
    lines = (pytester.path / "fixtures" / "evalset.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == QUESTIONS
    pytester.runpytest("--rag-eval", *RUN).assert_outcomes(passed=8)


def test_the_gate_s_proposal_does_not_trust_a_forged_gold_text(recorded: pytest.Pytester) -> None:
    """The campaign's forgery: the baseline's gold text of travel-002 set to travel-003's, travel-002 removed.
    Old code proposed `q03: travel-002 -> travel-003 (text 100% contained)` as certain."""
    path = recorded.path / "baselines" / "retrieval.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    gold = document["fingerprint"]["chunks"]["gold"]
    gold["travel-002"] = gold["travel-003"]
    path.write_text(json.dumps(document, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    write_chunks(recorded, [c for c in CHUNKS if c["id"] != "travel-002"])
    result = recorded.runpytest("--rag-eval", *RUN)
    assert result.ret != 0
    result.stderr.fnmatch_lines([
        "  q03: travel-002 -> travel-003 (text 100% contained; ambiguous: the baseline's text of travel-002 is not "
        "the one its digest fingerprint.chunks.digests.travel-002 was recorded from *",
        "check the ambiguous ones, then apply it with `ragretrieval relabel --apply --accept-ambiguous`*",
    ])
