"""Depth-k pooling, as TREC builds its judgment pools, and the labels folded back (`ragretrieval pool`).

For every question, each chunk that the baseline's recorded rankings, its approved ones (the bar,
where they differ) or a results file ranks within the top k and that the eval set does not judge (no
grade at all; grade 0 is a judgment): the bar is scored under the labels too, so its unjudged chunks
are as much a labelling gap as today's. Nothing is
run: the pool is what runs already ranked. One entry per (question, chunk), `"grade": null` for a
person (or the LLM judge, `labels.judge`) to fill; `apply_labels` folds the lines whose grade is an
integer into the eval set, its other lines kept byte for byte.
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..baseline.fingerprint import corpus_record, question_record, questions_record
from ..baseline.format import Baseline, load, read
from ..baseline.since import corpus_change, question_changes
from ..config.settings import Config
from ..core.errors import FixtureError, RagError
from ..core.values import listed
from ..evalset.jsonl import JUDGE_KEYS, MAX_GRADE, load_chunks, load_evalset
from ..evalset.lines import records
from ..evalset.records import Chunk, Question
from ..files.jsontext import loads
from ..files.paths import display, read_input, write_atomic
from .results import check_known


@dataclass(frozen=True)
class Hit:
    """One run's placing of a chunk: which file, which retriever, at which rank (from 1), and whether in
    the approved ranking rather than the recorded one."""

    file: str
    retriever: str
    rank: int
    approved: bool = False


@dataclass(frozen=True)
class Entry:
    """One unjudged (question, chunk) of the pool and every run that ranked it in the top k."""

    question: Question
    chunk: Chunk
    runs: tuple[Hit, ...]

    def record(self) -> dict[str, Any]:
        return {
            "question": self.question.id, "query": self.question.query, "chunk": self.chunk.id,
            "text": self.chunk.text,
            "runs": [{"file": hit.file, "retriever": hit.retriever, "rank": hit.rank,
                      **({"approved": True} if hit.approved else {})} for hit in self.runs],
            "grade": None,
        }

    def line(self) -> str:
        return json.dumps(self.record(), ensure_ascii=False)


def sources(config: Config, results: Sequence[Path]) -> list[Baseline]:
    """The baseline (when there is one), then each results file in the order given."""
    found = [baseline] if (baseline := load(config.baseline)) is not None else []
    found += [read(path) for path in results]
    if not found:
        raise FixtureError(f"nothing to pool: no baseline at {display(config.baseline)} and no --results FILE; "
                         "run `pytest --rag-eval --rag-json FILE` and pass --results FILE")
    return found


@dataclass(frozen=True)
class Pool:
    """The queue, and one line per source that ranked questions the eval set no longer holds."""

    entries: tuple[Entry, ...]
    skipped: tuple[str, ...]


def pool(config: Config, chunks: Sequence[Chunk], questions: Sequence[Question], results: Sequence[Path],
         k: int) -> Pool:
    """Every unjudged chunk in any source's top k, in eval-set order of the questions; within a
    question by the best rank any run gave it, then by chunk id; its runs in source order, then by
    retriever name, the recorded ranking's placing before the approved one's (which is left out where it
    is the same rank). An approved ranking may be older than today's corpus: its chunks that are gone
    cannot be judged and are left out. A question removed from the eval set since a source was written
    is skipped, as the gate skips it, and said in one line: no label is queued for it."""
    by_question = {question.id: question for question in questions}
    by_chunk = {chunk.id: chunk for chunk in chunks}
    found: dict[tuple[str, str], list[Hit]] = {}
    skipped: list[str] = []
    for source in sources(config, results):
        removed = check_known(source, by_question, by_chunk, config, skip_removed=True)
        name = display(source.path)
        if removed:
            skipped.append(f"skipped {_questions(len(removed))} of {name} no longer in {display(config.evalset)}: "
                           f"{listed(removed)}")
        for retriever, recorded in sorted(source.retrievers.items()):
            for qid, entry in recorded.questions.items():
                if qid not in by_question:
                    continue
                judged = by_question[qid].relevance
                approved = recorded.approved.get(qid, ())
                for ranking, is_approved in ((entry.ranking, False), (approved, True)):
                    for rank, cid in enumerate(ranking[:k], start=1):
                        if cid in judged or cid not in by_chunk:
                            continue
                        hits = found.setdefault((qid, cid), [])
                        if not any((hit.file, hit.retriever, hit.rank) == (name, retriever, rank) for hit in hits):
                            hits.append(Hit(name, retriever, rank, is_approved))
    order = {question.id: number for number, question in enumerate(questions)}
    keys = sorted(found, key=lambda key: (order[key[0]], min(hit.rank for hit in found[key]), key[1]))
    return Pool(tuple(Entry(by_question[qid], by_chunk[cid], tuple(found[(qid, cid)])) for qid, cid in keys),
                tuple(skipped))


def _questions(count: int) -> str:
    return f"{count} question{'s' if count != 1 else ''}"


@dataclass(frozen=True)
class Label:
    """A finished line of a labelled pool: the grade, and the judge's provenance when a machine gave it."""

    where: str
    question: str
    chunk: str
    grade: int
    judge: Mapping[str, str] | None


def read_labels(path: Path) -> tuple[list[Label], int, int]:
    """(finished labels, lines still ungraded, machine lines), every problem one line naming FILE:line."""
    labels: list[Label] = []
    open_lines = machine = 0
    seen: dict[tuple[str, str], str] = {}
    for where, record in records(path):
        if not isinstance(record.get("question"), str) or not isinstance(record.get("chunk"), str) \
                or "grade" not in record:
            raise FixtureError(f"{where}: expected a pool line with 'question', 'chunk' and 'grade' "
                             "(as `ragretrieval pool` writes it)")
        key = (record["question"], record["chunk"])
        if key in seen:
            raise FixtureError(f"{where}: question {key[0]!r}, chunk {key[1]!r} is labelled twice "
                               f"(first at {seen[key]})")
        seen[key] = where
        grade = record["grade"]
        if grade is None:
            open_lines += 1
            continue
        if isinstance(grade, bool) or not isinstance(grade, int) or not 0 <= grade <= MAX_GRADE:
            raise FixtureError(f"{where}: 'grade' must be null or an integer from 0 to {MAX_GRADE}, "
                             f"got {json.dumps(grade)}")
        judge = record.get("judge")
        if judge is not None:
            if not isinstance(judge, dict) or not all(isinstance(judge.get(k), str) and judge[k] for k in JUDGE_KEYS):
                raise FixtureError(f"{where}: 'judge' must hold the strings {', '.join(JUDGE_KEYS)}")
            machine += 1
            judge = {k: judge[k] for k in JUDGE_KEYS}
        labels.append(Label(where, key[0], key[1], grade, judge))
    return labels, open_lines, machine


def apply_labels(config: Config, chunks_path: Path, path: Path, accept_machine: bool) -> list[str]:
    """Fold the finished labels into the eval set, atomically and keeping its mode; untouched lines
    stay byte for byte, a changed line is written again as one JSON line with its keys in order.
    Returns the lines that say what was applied and what was left out."""
    chunks = load_chunks(chunks_path)
    questions = {q.id: q for q in load_evalset(config.evalset, chunks)}
    known = {chunk.id for chunk in chunks}
    labels, open_lines, machine = read_labels(path)
    skipped_machine = 0 if accept_machine else machine
    taken: dict[str, list[Label]] = {}
    already = 0
    removed: dict[str, None] = {}
    for label in labels:
        if label.judge is not None and not accept_machine:
            continue
        if label.question not in questions:  # removed since the pool was written: no label for it
            removed[label.question] = None
            continue
        if label.chunk not in known:
            raise FixtureError(f"{label.where}: chunk {label.chunk!r} is not in {display(chunks_path)}")
        held = questions[label.question].relevance.get(label.chunk)
        if held is not None:
            if held != label.grade:
                raise FixtureError(f"{label.where}: chunk {label.chunk!r} is already judged for {label.question!r} "
                                 f"(grade {held} in {display(config.evalset)}); change it there or drop this line")
            already += 1
            continue
        taken.setdefault(label.question, []).append(label)
    notes = _skipped_notes(open_lines, skipped_machine, already)
    if removed:
        notes.append(f"skipped the labels of {_questions(len(removed))} no longer in {display(config.evalset)}: "
                     f"{listed(removed)}")
    if not taken:
        return [*notes, f"no labels to apply: {display(config.evalset)} left as it was"]
    data = _folded(config.evalset, taken)
    try:
        folded = load_evalset_text(config, chunks, data)
    except FixtureError as exc:
        raise FixtureError(f"--apply {display(path)}: the eval set would not load ({exc}); nothing written") from None
    compared = next_run(config, chunks, questions, folded, sorted(taken))
    write_atomic(config.evalset, data)
    count = sum(len(found) for found in taken.values())
    relevant = sum(1 for found in taken.values() for label in found if label.grade > 0)
    return [
        *notes,
        f"applied {count} label{'s' if count != 1 else ''} ({relevant} relevant, {count - relevant} not relevant) "
        f"to {len(taken)} question{'s' if len(taken) != 1 else ''} of {display(config.evalset)}; " + compared,
    ]


def next_run(config: Config, chunks: Sequence[Chunk], before: Mapping[str, Question],
             after: Sequence[Question], labelled: Sequence[str]) -> str:
    """What the next run does with the labelled questions, decided as the gate decides it (`baseline/since.py`'s
    `question_changes`, the baseline's fingerprint against the folded eval set's): a question whose graded gold
    changed is relabelled, still compared under today's labels and the baseline's, where the baseline keeps
    its labels and no chunk whose grade changed was edited since; else it is an edited question, which
    leaves the comparison. Grade-0 judgments move no metric but judged@k: those questions stay compared."""
    try:
        baseline = load(config.baseline)
    except RagError as exc:
        return f"how the next run compares them is unknown: {exc}"
    if baseline is None:
        return f"there is no baseline yet ({display(config.baseline)}): the next update records them"
    old = baseline.fingerprint
    corpus = corpus_change(_of(old, "chunks"), corpus_record(chunks))
    found = question_changes(_of(old, "questions"), questions_record(after), corpus)
    now = {question.id: question for question in after}
    changed = [q for q in labelled if question_record(before[q])["gold"] != question_record(now[q])["gold"]]
    edited = {qid for qid, _ in found.edited}
    kinds = {
        "relabelled": [q for q in changed if q in found.relabelled] if found.itemized else [],
        "edited": [q for q in changed if q in edited] if found.itemized else [],
        "added": [q for q in labelled if q in found.added] if found.itemized else [],
        "by id": [] if found.itemized else changed,
    }
    kinds["grade 0"] = [q for q in labelled if not any(q in ids for ids in kinds.values())]
    said = [(len(kinds[kind]), NEXT_RUN[kind]) for kind in NEXT_RUN if kinds[kind]]
    if len(said) == 1:
        return said[0][1][0]
    return "the next run: " + ", ".join(f"{count} {texts[1]}" for count, texts in said)


NEXT_RUN = {
    "relabelled": ("their gold changed, so the next run compares them as relabelled questions, scored under "
                   "today's labels and the baseline's",
                   "relabelled (compared under today's labels and the baseline's)"),
    "edited": ("their gold changed where the baseline cannot judge it (it keeps no labels, or a labelled chunk "
               "changed since), so the next run counts them as edited questions, not compared",
               "edited (not compared: the baseline cannot judge their new gold)"),
    "added": ("the baseline does not hold them, so the next run scores them as added questions, never judged",
              "added (scored, never judged)"),
    "by id": ("their gold changed, and the baseline does not itemize its questions (a format-1 file), so the next "
              "run compares them by id", "compared by id (the baseline does not itemize its questions)"),
    "grade 0": ("they gained only grade-0 judgments, so the next run still compares them (judged@k rises)",
                "with grade-0 judgments alone (still compared; judged@k rises)"),
}
"""What the next run does with labelled questions, by kind: said whole when all are of one kind, else counted."""


def _of(record: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    found = record.get(key)
    return found if isinstance(found, Mapping) else {}


def _skipped_notes(open_lines: int, skipped_machine: int, already: int) -> list[str]:
    """One line for each kind of label that `--apply` left out, so none is dropped silently."""
    notes = []
    if open_lines:
        notes.append(f"{open_lines} line{'s' if open_lines != 1 else ''} still without a grade skipped")
    if skipped_machine:
        notes.append(f"{skipped_machine} machine label{'s' if skipped_machine != 1 else ''} skipped "
                     "(graded by an LLM judge); pass --accept-machine-labels to apply them")
    if already:
        notes.append(f"{already} label{'s' if already != 1 else ''} already in the eval set left as they are")
    return notes


def _folded(evalset: Path, taken: Mapping[str, list[Label]]) -> bytes:
    """The eval set's bytes with each labelled question's line rewritten; every other line as it was."""
    raw = read_input(evalset)
    out: list[bytes] = []
    for number, line in enumerate(raw.splitlines(keepends=True)):
        body = line.rstrip(b"\r\n")
        ending = line[len(body):]
        bom = b"\xef\xbb\xbf" if number == 0 and body.startswith(b"\xef\xbb\xbf") else b""
        text = body[len(bom):].decode("utf-8")
        record = loads(text) if text.strip() else None
        labels = taken.get(record["id"]) if isinstance(record, dict) else None
        if record is None or labels is None:
            out.append(line)
            continue
        for label in labels:
            _fold(record, label)
        out.append(bom + json.dumps(record, ensure_ascii=False).encode("utf-8") + ending)
    return b"".join(out)


def _fold(record: dict[str, Any], label: Label) -> None:
    """A grade >= 1 joins 'relevant' (a list stays a list while every grade is 1), a grade 0 joins
    'not_relevant'; a machine label's provenance goes under 'machine_labels'."""
    if label.grade == 0:
        record.setdefault("not_relevant", []).append(label.chunk)
    else:
        relevant = record.get("relevant", [])
        if isinstance(relevant, list) and label.grade == 1:
            record["relevant"] = [*relevant, label.chunk]
        else:
            graded = dict.fromkeys(relevant, 1) if isinstance(relevant, list) else dict(relevant)
            record["relevant"] = {**graded, label.chunk: label.grade}
    if label.judge is not None:
        record.setdefault("machine_labels", {})[label.chunk] = dict(label.judge)


def load_evalset_text(config: Config, chunks: Sequence[Chunk], data: bytes) -> tuple[Question, ...]:
    """The folded eval set's questions, read through the loader itself before it replaces the file."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="rag-pool-") as folder:
        probe = Path(folder) / config.evalset.name
        probe.write_bytes(data)
        return load_evalset(probe, chunks)
