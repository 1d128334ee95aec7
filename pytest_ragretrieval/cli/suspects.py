"""`ragretrieval suspects RESULTS.json`: chunks ranked high but labelled for nothing (pitfall 2)."""
from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..baseline.format import Baseline, read
from ..config.settings import Config, load_config
from ..errors import BaselineError
from ..evalset.jsonl import load_chunks, load_evalset
from ..evalset.records import Chunk, Question
from ..paths import display
from ..report.terminal import table
from .common import ONE_LINE, Result, positive, preview


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    suspects = commands.add_parser(
        "suspects", parents=[common], help="list top-k chunks no label covers: candidates for missing labels",
        description="List chunks that any retriever ranked in its top k but the eval set does not label "
        "for that question (grade 0 counts as judged), most retrievers first. RESULTS is a file written "
        "by `pytest --rag-eval --rag-json RESULTS`. Exit 0 whether or not there are suspects.",
    )
    suspects.add_argument("results", metavar="RESULTS.json")
    suspects.add_argument("--k", type=positive, default=None, metavar="N", help="cutoff (default: the results' k)")


def run(args: argparse.Namespace) -> Result:
    return run_suspects(load_config(args.config, Path.cwd()), args.results, args.k)


@dataclass(frozen=True)
class Suspect:
    """A chunk some retrievers ranked in the top k for a question that does not label it."""

    question: Question
    chunk: Chunk
    retrievers: tuple[str, ...]

    @property
    def count(self) -> int:
        return len(self.retrievers)


def _check_known(
    results: Baseline, questions: Mapping[str, Question], chunks: Mapping[str, Chunk], config: Config
) -> None:
    """Results must match today's fixtures by id; otherwise they describe another eval set or corpus."""
    rerun = f"rerun `pytest --rag-eval --rag-json {display(results.path)}`"
    for name, recorded in sorted(results.retrievers.items()):
        for qid, entry in sorted(recorded.questions.items()):
            if qid not in questions:
                raise BaselineError(
                    f"{display(results.path)}: question {qid!r} is not in {display(config.evalset)}; "
                    f"the eval set changed since the results were written; {rerun}"
                )
            for cid in entry.ranking:
                if cid not in chunks:
                    raise BaselineError(
                        f"{display(results.path)}: chunk {cid!r} (retriever {name!r}, question {qid!r}) is not in "
                        f"{display(config.chunks)}; the corpus changed since the results were written; {rerun}"
                    )


def find_suspects(
    results: Baseline, questions: Mapping[str, Question], chunks: Mapping[str, Chunk], k: int
) -> tuple[list[Suspect], int]:
    """(suspects, most frequent first; how many top-k chunks were left out as judged grade 0).

    A chunk with an explicit grade 0 was looked at and judged not relevant, so it is no
    candidate for a missing label; giving it grade 0 is how a reviewer silences a suspect.
    """
    seen: dict[tuple[str, str], list[str]] = {}
    judged = 0
    for name, recorded in sorted(results.retrievers.items()):
        for qid, entry in recorded.questions.items():
            relevance = questions[qid].relevance
            for cid in entry.ranking[:k]:
                if cid not in relevance:
                    seen.setdefault((qid, cid), []).append(name)
                elif relevance[cid] < 1:
                    judged += 1
    found = [Suspect(questions[qid], chunks[cid], tuple(names)) for (qid, cid), names in seen.items()]
    found.sort(key=lambda s: (-s.count, s.question.id, s.chunk.id))
    return found, judged


def suspect_row(suspect: Suspect) -> list[str]:
    question = suspect.question
    label = question.id if question.answerable else f"{question.id} (no-answer)"
    return [
        str(suspect.count),
        ", ".join(suspect.retrievers),
        label,
        question.query.translate(ONE_LINE),
        suspect.chunk.id,
        preview(suspect.chunk.text),
    ]


def suspect_lines(found: list[Suspect], judged: int, k: int, results: Baseline) -> list[str]:
    """A header saying what was read, then one table row per suspect."""
    place = f"the top {k} of {display(results.path)}"
    lines = []
    if judged:
        lines.append(f"{judged} ranked chunk{'s' if judged != 1 else ''} judged grade 0 left out")
    if not found:
        return lines + [f"no suspects: every chunk in {place} is labelled for its question"]
    lines.append(
        f"{len(found)} suspect{'s' if len(found) != 1 else ''} in {place}: ranked but not labelled "
        "relevant; check each and add it to 'relevant' or give it grade 0"
    )
    headers = ["count", "retrievers", "question", "query", "chunk", "text"]
    return lines + table(headers, [suspect_row(s) for s in found])


def run_suspects(config: Config, results_path: str, k: int | None) -> Result:
    chunks = load_chunks(config.chunks)
    questions = {q.id: q for q in load_evalset(config.evalset, chunks)}
    by_id = {chunk.id: chunk for chunk in chunks}
    results = read(Path(results_path))
    _check_known(results, questions, by_id, config)
    cutoff = k if k is not None else results.k
    found, judged = find_suspects(results, questions, by_id, cutoff)
    return Result(out=depth_note(results, k) + suspect_lines(found, judged, cutoff, results))


def depth_note(results: Baseline, k: int | None) -> list[str]:
    """Results keep only the ids the metrics needed, so a larger --k cannot see further."""
    depth = max((len(e.ranking) for r in results.retrievers.values() for e in r.questions.values()), default=0)
    if k is None or k <= depth:
        return []
    return [f"note: {display(results.path)} holds at most {depth} ids per ranking; --k {k} reads all of them"]
