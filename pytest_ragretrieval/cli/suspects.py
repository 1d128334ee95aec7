"""`ragretrieval suspects RESULTS.json`: chunks ranked high but labelled for nothing (pitfall 2).

Grouped per question, the strongest first, and cut to a few per question and a few questions by
default: the point is the next labels to check, not every candidate at once.
"""
from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..baseline.format import Baseline, read
from ..config.settings import Config, load_config
from ..evalset.jsonl import load_chunks, load_evalset
from ..evalset.records import Chunk, Question
from ..files.paths import display
from ..labels.results import check_known
from ..report.terminal import table
from .common import ONE_LINE, Result, positive, preview

PER_QUESTION = 3
QUESTIONS = 10


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    suspects = commands.add_parser(
        "suspects", parents=[common], help="list top-k chunks no label covers: candidates for missing labels",
        description="List chunks that any retriever ranked in its top k but the eval set does not label "
        "for that question (grade 0 counts as judged), grouped per question: the questions whose suspects "
        "most retrievers agree on first, within each the chunks most retrievers ranked. RESULTS is a file "
        "written by `pytest --rag-eval --rag-json RESULTS`. Exit 0 whether or not there are suspects.",
    )
    suspects.add_argument("results", metavar="RESULTS.json")
    suspects.add_argument("--k", type=positive, default=None, metavar="N", help="cutoff (default: the results' k)")
    suspects.add_argument("--per-question", type=limit, default=PER_QUESTION, metavar="N",
                          help=f"suspects shown per question (default: {PER_QUESTION}; 0: all)")
    suspects.add_argument("--questions", type=limit, default=QUESTIONS, metavar="N",
                          help=f"questions shown (default: {QUESTIONS}; 0: all)")


def limit(text: str) -> int:
    """An argparse `type=`: a whole number >= 0, where 0 means no limit."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0 (0: no limit), got {text!r}")
    return value


def run(args: argparse.Namespace) -> Result:
    return run_suspects(load_config(args.config, Path.cwd()), args.results, args.k, args.per_question, args.questions)


@dataclass(frozen=True)
class Suspect:
    """A chunk some retrievers ranked in the top k for a question that does not label it."""

    question: Question
    chunk: Chunk
    retrievers: tuple[str, ...]

    @property
    def count(self) -> int:
        return len(self.retrievers)


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


def grouped(found: list[Suspect]) -> list[list[Suspect]]:
    """Suspects per question: the question whose strongest suspect most retrievers ranked first (then
    the one with more suspects, then by id); within a question, most retrievers first, then by chunk id."""
    groups: dict[str, list[Suspect]] = {}
    for suspect in found:
        groups.setdefault(suspect.question.id, []).append(suspect)
    for group in groups.values():
        group.sort(key=lambda s: (-s.count, s.chunk.id))
    return sorted(groups.values(), key=lambda group: (-group[0].count, -len(group), group[0].question.id))


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def suspect_lines(found: list[Suspect], judged: int, k: int, results: Baseline, per_question: int = PER_QUESTION,
                  questions: int = QUESTIONS) -> list[str]:
    """A header saying what was read, then each question's line and its suspects, as far as the limits go."""
    place = f"the top {k} of {display(results.path)}"
    lines = []
    if judged:
        lines.append(f"{_plural(judged, 'ranked chunk', 'ranked chunks')} judged grade 0 left out")
    if not found:
        return lines + [f"no suspects: every chunk in {place} is labelled for its question"]
    groups = grouped(found)
    lines.append(
        f"{_plural(len(found), 'suspect', 'suspects')} for {_plural(len(groups), 'question', 'questions')} in "
        f"{place}: ranked but not labelled relevant; check each and add it to 'relevant' or give it grade 0"
    )
    total = len(results.retrievers)
    shown = groups[:questions] if questions else groups
    rows: list[list[str]] = []
    heads: dict[int, str] = {}
    tails: dict[int, str] = {}
    for group in shown:
        question = group[0].question
        label = question.id if question.answerable else f"{question.id} (no-answer)"
        heads[len(rows)] = f"{label}: {question.query.translate(ONE_LINE)}"
        listed = group[:per_question] if per_question else group
        rows += [[f"{s.count}/{total} {', '.join(s.retrievers)}", s.chunk.id, preview(s.chunk.text)] for s in listed]
        if len(group) > len(listed):
            tails[len(rows) - 1] = f"  ... {len(group) - len(listed)} more for {question.id}"
    rendered = table(["retrievers", "chunk", "text"], rows)
    lines += ["  " + line for line in rendered[:2]]
    for number, line in enumerate(rendered[2:]):
        if number in heads:
            lines.append(heads[number])
        lines.append("  " + line)
        if number in tails:
            lines.append(tails[number])
    more = len(found) - len(rows)
    if more:
        unlisted = len(groups) - len(shown)
        lines.append(
            f"{_plural(more, 'suspect', 'suspects')} not shown"
            + (f" ({_plural(unlisted, 'question', 'questions')} not listed)" if unlisted else "")
            + "; --per-question 0 --questions 0 lists every one"
        )
    return lines


def run_suspects(config: Config, results_path: str, k: int | None, per_question: int = PER_QUESTION,
                 listed: int = QUESTIONS) -> Result:
    chunks = load_chunks(config.chunks_file("ragretrieval suspects"))
    questions = {q.id: q for q in load_evalset(config.evalset, chunks)}
    by_id = {chunk.id: chunk for chunk in chunks}
    results = read(Path(results_path))
    check_known(results, questions, by_id, config)
    cutoff = k if k is not None else results.k
    found, judged = find_suspects(results, questions, by_id, cutoff)
    return Result(out=depth_note(results, k) + suspect_lines(found, judged, cutoff, results, per_question, listed))


def depth_note(results: Baseline, k: int | None) -> list[str]:
    """Results keep only the ids the metrics needed, so a larger --k cannot see further."""
    depth = max((len(e.ranking) for r in results.retrievers.values() for e in r.questions.values()), default=0)
    if k is None or k <= depth:
        return []
    return [f"note: {display(results.path)} holds at most {depth} ids per ranking; --k {k} reads all of them"]
