"""Re-anchoring after a re-chunking, on CMRC 2018 dev: does `relabel` put every label where its text went?

Each passage is cut at the sentence end (。！？) nearest its middle (ties: the earlier one) into two
chunks with new ids (`ID-1`, `ID-2`); a passage without a sentence end inside it keeps its text
under the new id `ID-1`. The eval set is the first N questions, each labelled with its passage at a
grade of 1, 2 or 3 (by position, so that grades are seen to be kept), every fifth also with a
`relevant_text` snippet (its answer). The gold texts are recorded as the baseline records them
(`gold_texts` over the old corpus), then `relabel`'s plan is made against the new corpus and applied.

Checked per question: the proposal names exactly the new chunks of its passage (both halves, none
outside them), each with the old grade; a snippet label matches, among its passage's halves, exactly
the ones that hold the snippet, and one the cut went through (no half holds it whole) is proposed as
the ids of the halves it spans. Counted: questions, proposals, ambiguous ones, wrong ones.
With `--edit` the middle character of every second half is also changed, so the old text is no
longer contained anywhere and the fuzzy step must find the second half.
Usage: python benchmarks/rechunk.py /work/data/cmrc2018_dev.json [--questions 600] [--edit]
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_ragretrieval.baseline.fingerprint import gold_texts
from pytest_ragretrieval.evalset.jsonl import load_chunks, load_evalset
from pytest_ragretrieval.labels.relabel import plan, rewritten

ENDS = "。！？"


def split(text: str) -> tuple[str, ...]:
    """The text cut after the sentence end nearest its middle (ties: the earlier); whole without one inside."""
    cuts = [i + 1 for i, char in enumerate(text) if char in ENDS and 0 < i + 1 < len(text)]
    if not cuts:
        return (text,)
    cut = min(cuts, key=lambda at: (abs(2 * at - len(text)), at))
    return text[:cut], text[cut:]


def rechunk(chunks: Sequence[dict[str, Any]], edit: bool = False) -> list[dict[str, Any]]:
    """Every chunk split, its pieces numbered `ID-1`, `ID-2`; with `edit`, the middle character of every
    second piece replaced by `＊` (a typo fixed in the same commit: the fuzzy step's work)."""
    rows = [{"id": f"{row['id']}-{n}", "text": piece}
            for row in chunks for n, piece in enumerate(split(row["text"]), 1)]
    for row in rows:
        if edit and row["id"].endswith("-2"):
            middle = len(row["text"]) // 2
            row["text"] = row["text"][:middle] + "＊" + row["text"][middle + 1:]
    return rows


def jsonl(rows: Sequence[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def check(folder: Path, chunks: list[dict[str, Any]], questions: list[dict[str, Any]], edit: bool = False
          ) -> dict[str, Any]:
    """Record the gold texts over `chunks`, re-chunk, plan and apply; count what the module docstring says."""
    (folder / "chunks.jsonl").write_text(jsonl(chunks), encoding="utf-8")
    (folder / "evalset.jsonl").write_text(jsonl(questions), encoding="utf-8")
    old = load_chunks(folder / "chunks.jsonl")
    recorded = gold_texts(old, load_evalset(folder / "evalset.jsonl", old))
    pieces = rechunk(chunks, edit)
    (folder / "chunks.jsonl").write_text(jsonl(pieces), encoding="utf-8")
    new = load_chunks(folder / "chunks.jsonl")
    started = time.perf_counter()
    found = plan(folder / "evalset.jsonl", new, recorded)
    seconds = time.perf_counter() - started
    text = rewritten((folder / "evalset.jsonl").read_text(encoding="utf-8"), found)
    (folder / "evalset.jsonl").write_text(text, encoding="utf-8")
    relabelled = {q.id: q for q in load_evalset(folder / "evalset.jsonl", new)}
    by_passage: dict[str, list[dict[str, Any]]] = {}
    for piece in pieces:
        by_passage.setdefault(piece["id"].rpartition("-")[0], []).append(piece)
    moves = {move.question: move for move in found.moves if not move.snippet}
    cut_moves = {(move.question, move.old): move for move in found.moves if move.snippet}
    wrong, snippets, snippet_wrong, cut_through = [], 0, [], 0
    for question in questions:
        qid = question["id"]
        (passage, grade), = question["relevant"].items()
        halves = by_passage[passage]
        move = moves.get(qid)
        expected = {piece["id"] for piece in halves}
        if move is None or set(move.chunks) != expected or move.ambiguous:
            wrong.append(qid)
        elif any(relabelled[qid].relevance.get(cid) != grade for cid in expected):
            wrong.append(qid)
        for snippet in question.get("relevant_text", []):
            snippets += 1
            holding = {piece["id"] for piece in halves if snippet in piece["text"]}
            matched = {cid for cid in expected if cid in relabelled[qid].snippet_ids}
            cut = cut_moves.get((qid, snippet))
            if not holding:  # cut through: it must move, by id, to the pieces of its passage that hold it
                cut_through += 1
                spans = cut is not None and set(cut.chunks) <= expected and bool(cut.chunks) and not cut.ambiguous
                if not spans or any(relabelled[qid].relevance.get(cid, 0) < 1 for cid in cut.chunks):
                    snippet_wrong.append(qid)
            elif matched != holding or cut is not None:
                snippet_wrong.append(qid)
    return {
        "passages": len(chunks), "chunks_after": len(pieces), "questions": len(questions),
        "proposals": len(moves), "snippet_proposals": len(cut_moves), "ambiguous": len(found.ambiguous),
        "lost": len(found.lost),
        "wrong": len(wrong), "wrong_ids": wrong[:10], "snippet_labels": snippets,
        "snippets_cut_through": cut_through, "snippet_wrong": len(snippet_wrong),
        "kinds": sorted({move.anchor.how for move in found.moves if move.anchor is not None}),
        "by_kind": {how: sum(1 for m in moves.values() if m.anchor is not None and m.anchor.how == how)
                    for how in ("contained", "fuzzy")},
        "gold_chunks": len(recorded), "gold_bytes": len(json.dumps(recorded, ensure_ascii=False).encode()),
        "plan_seconds": round(seconds, 3),
    }


def cmrc(path: Path, count: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The passages of CMRC 2018 dev (SQuAD format) and the first `count` questions, labelled."""
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    chunks, questions = [], []
    for article in data:
        for paragraph in article["paragraphs"]:
            chunks.append({"id": paragraph["id"], "text": paragraph["context"]})
            for qa in paragraph["qas"]:
                if len(questions) == count:
                    continue
                question: dict[str, Any] = {"id": qa["id"], "query": qa["question"],
                                            "relevant": {paragraph["id"]: 1 + len(questions) % 3}}
                answer = qa["answers"][0]["text"].strip() if qa["answers"] else ""
                if len(questions) % 5 == 0 and answer:
                    question["relevant_text"] = [answer]
                questions.append(question)
    return chunks, questions


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("data", type=Path, help="cmrc2018_dev.json")
    parser.add_argument("--questions", type=int, default=600)
    parser.add_argument("--edit", action="store_true", help="also change one character of every second half")
    args = parser.parse_args()
    chunks, questions = cmrc(args.data, args.questions)
    with tempfile.TemporaryDirectory() as folder:
        print(json.dumps(check(Path(folder), chunks, questions, args.edit), ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
