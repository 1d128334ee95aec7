"""Gold spans refused where they cannot be right: past the end of their document, or not holding their
`text` in documents unedited since the baseline recorded them (or that no baseline recorded yet), while a
span whose document was edited is still found where its text moved; blank gold is called blank; a budget
below most chunks of a chunking is one warning line naming how many fit."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_ragretrieval.core.errors import FixtureError
from pytest_ragretrieval.evalset.chunkers import Chunker
from pytest_ragretrieval.evalset.corpus import budget_warnings, documents_corpus, recorded_digest
from pytest_ragretrieval.evalset.documents import documents_digest, load_documents
from pytest_ragretrieval.evalset.jsonl import Unanchored

TEXT = "Refunds are paid back within three working days. Hotels cost 600 a night. Refunds are final."
CHUNKER = Chunker("sentences", size=1)


def project(tmp_path: Path, *spans: dict[str, Any], text: str = TEXT) -> tuple[Path, Path]:
    (tmp_path / "docs.jsonl").write_text(json.dumps({"id": "kb", "text": text}) + "\n", encoding="utf-8")
    lines = [json.dumps({"id": "q0", "query": "hotel", "relevant_spans": [{"doc": "kb", "start": 49, "end": 72}]})]
    lines += [json.dumps({"id": f"q{n + 1}", "query": "refund", "relevant_spans": [span]})
              for n, span in enumerate(spans)]
    (tmp_path / "evalset.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path / "docs.jsonl", tmp_path / "evalset.jsonl"


def load(docs: Path, evalset: Path, recorded: str | None = None) -> Any:
    return documents_corpus(docs, CHUNKER, docs.parent, evalset, recorded=recorded)


def test_a_span_past_the_end_is_refused_with_or_without_text(tmp_path: Path) -> None:
    docs, evalset = project(tmp_path, {"doc": "kb", "start": 80, "end": 500, "text": "Refunds are final."})
    with pytest.raises(Unanchored, match=r"evalset.jsonl:2: relevant_spans\[0\]: end 500 is past the end of 'kb' "
                                         r"\(92 characters\); fix the span's offsets$"):
        load(docs, evalset)


def test_a_span_not_holding_its_text_in_unedited_documents_is_refused_naming_where_it_is(tmp_path: Path) -> None:
    """The text "Refunds are" is at 0 and at 74: written at 3..14, it would be moved silently to 0."""
    docs, evalset = project(tmp_path, {"doc": "kb", "start": 3, "end": 14, "text": "Refunds are"})
    with pytest.raises(Unanchored, match=r"evalset.jsonl:2: relevant_spans\[0\]: 'kb' holds 'unds are pa' at "
                                         r"3\.\.14, not its text 'Refunds are', in documents unedited since the "
                                         r"baseline recorded them \(or that no baseline recorded yet\); its text "
                                         r"is at 0\.\.11: set start 0 and end 11$"):
        load(docs, evalset)
    recorded = documents_digest(load_documents(docs))
    with pytest.raises(Unanchored, match="set start 0 and end 11"):
        load(docs, evalset, recorded)


def test_after_an_edit_the_span_is_found_where_its_text_moved(tmp_path: Path) -> None:
    before = documents_digest(load_documents(project(tmp_path)[0]))
    edited = "NOTE: updated.\n" + TEXT
    docs, evalset = project(tmp_path, {"doc": "kb", "start": 29, "end": 47, "text": "three working days"},
                            text=edited)
    _, questions = load(docs, evalset, recorded=before)
    (span,) = questions[1].spans
    assert edited[span.start:span.end] == "three working days" and span.start == 29 + len("NOTE: updated.\n")
    with pytest.raises(Unanchored, match="set start 44 and end 62"):  # the same files, no baseline yet
        load(docs, evalset)


def test_blank_gold_is_called_blank(tmp_path: Path) -> None:
    docs, evalset = project(tmp_path, {"doc": "kb", "start": 0, "end": 5, "text": "  \n"})
    with pytest.raises(FixtureError, match=r"evalset.jsonl:2: relevant_spans\[0\]: 'text' must be the span's text, "
                                           r"a string that is not empty or blank \(whitespace only\)"):
        load(docs, evalset)
    docs, evalset = project(tmp_path, {"doc": "kb", "start": 48, "end": 49}, text=TEXT)
    with pytest.raises(FixtureError, match=r"evalset.jsonl:2: relevant_spans\[0\]: 'kb' holds only blank "
                                           r"characters \(whitespace\) at 48\.\.49"):
        load(docs, evalset)


def test_the_recorded_digest_is_read_from_a_fingerprint() -> None:
    assert recorded_digest({"chunks": {"documents": {"sha256": "ab", "count": 1}}}) == "ab"
    assert recorded_digest({"chunks": {"sha256": "x"}}) is None
    assert recorded_digest(None) is None


def test_a_budget_below_most_chunks_is_one_warning_naming_how_many_fit(tmp_path: Path) -> None:
    docs, evalset = project(tmp_path)
    chunks, _ = load(docs, evalset)
    lengths = sorted(len(chunk.text) for chunk in chunks)
    assert lengths == [18, 25, 49]
    (line,) = budget_warnings([20, 30, 50], chunks, {"": "the default chunking"})
    assert line == ("budget 20c: 1 of the default chunking's 3 chunks fit in 20 characters (its median chunk has "
                    "25), so the budget metrics at 20c score little there; raise the budget or cut smaller chunks")
    assert budget_warnings([25], chunks, {"": "the default chunking"}) == []
