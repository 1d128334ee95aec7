"""Issue 34 on the bundled sample: an edited gold text names its questions; a split gold chunk fails with a
re-anchoring proposal, `ragretrieval relabel --apply` writes it and the next run loads, judging q01 by the
question rule as the update does (issue 48). BM25 items only (-k),
so that no chunk needs embedding; the sample's baseline gets the gold texts recording it would give."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from sample_project import gate, lines, outcome, sample, write_lines

from pytest_ragretrieval.baseline.fingerprint import gold_texts
from pytest_ragretrieval.baseline.format import dumps
from pytest_ragretrieval.cli import main
from pytest_ragretrieval.evalset.jsonl import load_chunks, load_evalset

pytestmark = pytest.mark.slow
CHUNK = "travel-004"
"""q01's grade-2 gold, and no other question's."""


def with_gold(folder: Path) -> Path:
    """The sample with the gold texts in its baseline, as `--rag-update-baseline` records them."""
    chunks = load_chunks(folder / "fixtures" / "chunks.jsonl")
    path = folder / "baselines" / "retrieval.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["fingerprint"]["chunks"]["gold"] = gold_texts(chunks, load_evalset(folder / "fixtures" / "evalset.jsonl", chunks))
    path.write_text(dumps(doc), encoding="utf-8")
    return folder


def test_an_edited_gold_text_names_the_question_whose_label_it_is(tmp_path: Path) -> None:
    folder = with_gold(sample(tmp_path))
    rows = lines(folder / "fixtures" / "chunks.jsonl")
    write_lines(folder / "fixtures" / "chunks.jsonl",
                [dict(row, text="本条已废止，以新版差旅制度为准。") if row["id"] == CHUNK else row for row in rows])
    done = gate(folder, "--rag-eval", "-k", "bm25", "--rag-json", "results.json")
    assert "rag: warning: labels to review: q01 (the text of gold chunk travel-004 was edited)" in done.stdout
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    assert results["labels_to_review"] == [{"chunk": CHUNK, "questions": ["q01"]}]


def test_a_split_gold_chunk_is_re_anchored_and_the_next_run_holds_the_bar(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = with_gold(sample(tmp_path))
    rows = lines(folder / "fixtures" / "chunks.jsonl")
    text = next(row["text"] for row in rows if row["id"] == CHUNK)
    cut = min((i + 1 for i, c in enumerate(text[:-1]) if c in "。！？"), key=lambda at: abs(2 * at - len(text)))
    halves = [{**row, "id": f"{CHUNK}{n}", "text": piece}
              for row in rows if row["id"] == CHUNK for n, piece in (("a", text[:cut]), ("b", text[cut:]))]
    write_lines(folder / "fixtures" / "chunks.jsonl",
                [piece for row in rows for piece in (halves if row["id"] == CHUNK else [row])])
    done = gate(folder, "--rag-eval", "-k", "bm25")
    assert done.returncode != 0
    assert ("  q01: travel-004 -> travel-004a, travel-004b (text 100% contained)\n"
            "apply it with `ragretrieval relabel --apply` (see the diff with `ragretrieval relabel`)") in done.stderr
    monkeypatch.chdir(folder)
    assert main(["relabel", "--apply"]) == 0
    assert lines(folder / "fixtures" / "evalset.jsonl")[0]["relevant"] == {
        "travel-004a": 2, "travel-004b": 2, "travel-002": 1, "travel-003": 1, "travel-005": 1, "travel-025": 1}
    done = gate(folder, "--rag-eval", "-k", "bm25")
    assert done.returncode == 1, done.stdout[-3000:]  # q01's gold moved with the corpus: it left the comparison
    assert "questions: 59 comparable, 0 added, 0 removed, 1 edited (q01: graded gold)" in done.stdout
    assert "recall@5 of 'bm25' lowers the bar through its questions: the 1 edited question (q01)" in done.stdout
    assert outcome(done).startswith("6 failed, 6 passed"), outcome(done)  # recall, f1 and ndcg of both bm25s

