"""Derive the documents version of the bundled sample (fixtures/documents/) from fixtures/chunks.jsonl
and fixtures/evalset.jsonl, deterministically: rerun it and `git diff` shows nothing.

Each of the 8 documents is its chunks' texts in file order joined by a blank line ("\\n\\n", as a writer
separates paragraphs), ending with one newline, written to fixtures/documents/kb/<doc>. Every gold chunk
of a question becomes a `relevant_spans` entry: the chunk's span in its document, its grade, its text.
No-answer questions keep `"relevant": []`.

    python benchmarks/sample_documents.py          # writes fixtures/documents/kb/*.md and evalset.jsonl
    python benchmarks/sample_documents.py --check  # exits 1 when the committed files differ
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "fixtures"
OUT = ROOT / "fixtures" / "documents"
SEPARATOR = "\n\n"


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def derive(chunks: list[dict[str, Any]], questions: list[dict[str, Any]]) -> tuple[dict[str, str], list[str]]:
    """(document name -> text, eval set lines) from the sample's chunks and questions."""
    texts: dict[str, list[str]] = {}
    spans: dict[str, tuple[str, int, int]] = {}
    for chunk in chunks:
        parts = texts.setdefault(chunk["doc"], [])
        start = sum(len(p) + len(SEPARATOR) for p in parts)
        spans[chunk["id"]] = (chunk["doc"], start, start + len(chunk["text"]))
        parts.append(chunk["text"])
    documents = {doc: SEPARATOR.join(parts) + "\n" for doc, parts in texts.items()}
    lines = []
    for question in questions:
        row: dict[str, Any] = {"id": question["id"], "query": question["query"]}
        if question["relevant"]:
            row["relevant_spans"] = [
                {"doc": spans[cid][0], "start": spans[cid][1], "end": spans[cid][2], "grade": grade,
                 "text": documents[spans[cid][0]][spans[cid][1]:spans[cid][2]]}
                for cid, grade in question["relevant"].items()
            ]
        else:
            row["relevant"] = []
        row["tags"] = question["tags"]
        lines.append(json.dumps(row, ensure_ascii=False))
    return documents, lines


def wanted() -> dict[Path, str]:
    """Every file this script writes, with its content."""
    documents, lines = derive(read_jsonl(SAMPLE / "chunks.jsonl"), read_jsonl(SAMPLE / "evalset.jsonl"))
    files = {OUT / "kb" / doc: text for doc, text in documents.items()}
    files[OUT / "evalset.jsonl"] = "\n".join(lines) + "\n"
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed files, write nothing")
    args = parser.parse_args(argv)
    files = wanted()
    if args.check:
        stale = [p for p, text in files.items() if not p.exists() or p.read_text(encoding="utf-8") != text]
        for path in stale:
            print(f"{path.relative_to(ROOT)}: differs from what benchmarks/sample_documents.py derives")
        return 1 if stale else 0
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
