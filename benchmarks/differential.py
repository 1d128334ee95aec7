"""The differential test of issue 48: the gate, the update and `diff --against BASE --fail-on-lower`
judge generated pull requests alike.

Each case is a git repository holding a small knowledge base (chunks, or documents cut one sentence a
chunk), an eval set and a `[tool.ragretrieval]` with a `bm25` and a `run`-file retriever (no database,
no embedder). The base is recorded with `pytest --rag-update-baseline`, rewritten to format 2 or 3
where the case asks (or kept as the tree writes it: 4 on 577255f), and committed; a seeded pull
request edits it (chunk and document edits, gold moved, answerability flipped, the head baseline's
kept labels edited or deleted, questions removed, added or their query edited, a retriever's
parameters or run file changed, alone or on top of a worse retriever) and is committed. Then, only
through public surfaces, so that it runs against any tree:

1. the gate: `pytest --rag-eval --rag-json gate.json` on the head (its `failures`: retriever x metric);
2. the update's plan: `pytest --rag-update-baseline --rag-json plan.json` (no `--rag-allow-regression`):
   refused or not (the baseline's bytes), its failures; both as a pull request's CI runs them (`CI`: the
   base's exam read from the base revision, as `diff --against` reads it);
3. the head re-recorded with `--rag-update-baseline --rag-allow-regression` and committed, then
   `ragretrieval diff --against BASE --fail-on-lower --json changes.json`: what it lowers.

A case agrees when every item the gate fails is one `diff` reports lowered, `diff` lowers nothing that
the gate and the update passed, and the update refuses only where the gate fails. A pull request whose
label or query edits ride on a worse retriever is also judged without those edits (the edits may add a
failure, never remove one: issue 48, items 5 and 6). Each disagreement is classified:

- `gate-fails-diff-silent`: an item the gate fails, not lowered by `diff`;
- `diff-lowers-gate-passed`: `diff` lowers a retriever x metric while the gate and the update pass
  (`diff-lowers-other`: something that is no item: a removed entry, a loosened setting, a lost hit);
- `update-refuses-gate-passes`: the gate is green where the update (and so the pull-request check) is red;
- `edit-hides-gate-failure`, `edit-hides-diff-lowering`: an item the gate fails without the label or
  query edits passes the gate, or is not lowered by `diff`, with them;
- `refusals-differ`: a judge refuses the head's baseline (one line, exit 4 or 2) where another does not,
  or for another reason. A file all three refuse alike (kept labels edited or deleted: damage) is a case
  they agree on, `refused`, and nothing is recorded or diffed.

Counted beside them, `gate-fails-update-takes`. Each kind's first disagreeing cases are minimised: the
case's edits dropped one at a time while its disagreements remain.

Usage: python benchmarks/differential.py [--cases 500] [--seed 48] [--workers 2] [--json PATH]
       [--minimise 3] [--work DIR] [--sample]
Prints counts per edit kind, the gate-failing count, the label-edit count and the disagreements by
kind with one minimal reproduction each; writes every case's outcome to the JSON.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import multiprocessing
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

TOPICS = 12
"""Topics of the knowledge base: a gold chunk (sentence) and two distractors each, 2 questions each."""
NO_ANSWER = 2
K = 3
KINDS = ("chunk_edit", "document_edit", "label_edit", "answerability", "kept_label_edit", "kept_label_delete",
         "question_removed", "question_added", "query_edited", "retriever_param")
LABEL_KINDS = frozenset({"label_edit", "answerability", "kept_label_edit", "kept_label_delete"})
ORACLE_KINDS = LABEL_KINDS | {"query_edited"}
"""Edits that may add a failure, never remove one (issue 48, items 5 and 6): the same pull request without
them is judged too, and what its gate fails the edited one's gate must fail and `diff` must lower."""
FORMATS = ("2", "3", "current")
"""Base formats: rewritten to 2 or 3, or as the tree under test records it (4 on 577255f, 5 after issue 48)."""
DISAGREEMENTS = ("gate-fails-diff-silent", "diff-lowers-gate-passed", "diff-lowers-other",
                 "update-refuses-gate-passes", "edit-hides-gate-failure", "edit-hides-diff-lowering",
                 "refusals-differ")


# The knowledge base -------------------------------------------------------------------------------

def topic(t: int) -> str:
    return f"t{t:02d}"


def sentences(t: int) -> list[str]:
    """Topic t's three sentences: the gold one first, then two distractors sharing some of its words."""
    w = topic(t)
    return [f"{w}alpha {w}beta {w}gamma {w}gold", f"{w}alpha {w}beta {w}noise", f"{w}alpha {w}delta {w}other"]


def chunk_id(mode: str, t: int, n: int) -> str:
    return f"kb-{topic(t)}-{n}" if mode == "chunks" else f"{topic(t)}.txt#{n}"


def base_questions(mode: str) -> list[dict[str, Any]]:
    """Two questions per topic: one that bm25 answers with the gold sentence, one nearer a distractor;
    and the no-answer ones."""
    rows: list[dict[str, Any]] = []
    for t in range(1, TOPICS + 1):
        w = topic(t)
        for j, query in ((1, f"{w}alpha {w}gamma {w}gold"), (2, f"{w}alpha {w}beta")):
            rows.append({"id": f"{w}-q{j}", "query": query, **gold_of(mode, t, 0)})
    rows += [{"id": f"none-{j}", "query": f"unrelated{j} words{j}", **no_gold(mode)} for j in range(1, NO_ANSWER + 1)]
    return rows


def gold_of(mode: str, t: int, n: int) -> dict[str, Any]:
    if mode == "chunks":
        return {"relevant": {chunk_id(mode, t, n): 1}}
    return {"relevant_text": [sentences(t)[n]]}


def no_gold(mode: str) -> dict[str, Any]:
    return {"relevant": []} if mode == "chunks" else {"relevant_text": []}


def base_run(mode: str, rng: random.Random) -> dict[str, list[str]]:
    """The `run` retriever's rankings: each answerable question's gold at rank 1 (most), 2 or 3, the
    topic's distractors and another topic's chunk around it; no-answer questions get nothing."""
    rankings: dict[str, list[str]] = {}
    for t in range(1, TOPICS + 1):
        for j in (1, 2):
            other = rng.choice([u for u in range(1, TOPICS + 1) if u != t])
            ranking = [chunk_id(mode, t, 1), chunk_id(mode, t, 2), chunk_id(mode, other, 0)]
            ranking.insert(rng.choice((0, 0, 0, 1, 2)), chunk_id(mode, t, 0))
            rankings[f"{topic(t)}-q{j}"] = ranking
    return rankings


def config(mode: str, significance: bool, bm25: Mapping[str, object]) -> str:
    corpus = ('chunks = "fixtures/chunks.jsonl"\n' if mode == "chunks"
              else 'documents = "kb"\n')
    metrics = '["ndcg", "recall"]' if mode == "chunks" else '["ndcg", "recall", "char_recall"]'
    lines = [
        "[tool.ragretrieval]", corpus.rstrip("\n"), 'evalset = "fixtures/evalset.jsonl"',
        'baseline = "baselines/retrieval.json"', f"k = {K}", f"metrics = {metrics}", 'tokenizer = "whitespace"',
        "min_questions = 5", "reuse_rankings = false",
    ]
    if significance:
        lines.append('significance = "randomization"')
    if mode == "documents":
        lines += ["", "[tool.ragretrieval.chunker]", 'type = "sentences"', "size = 1"]
    lines += ["", "[tool.ragretrieval.retrievers.bm25]", 'type = "bm25"']
    lines += [f"{key} = {value!r}" for key, value in sorted(bm25.items())]
    lines += ["", "[tool.ragretrieval.retrievers.run]", 'type = "run"', 'path = "runs/search.jsonl"', ""]
    return "\n".join(lines)


def jsonl(rows: Sequence[Mapping[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows)


@dataclass
class Tree:
    """A project's files as data, written out whole: what the base holds and each edit changes."""

    mode: str
    significance: bool
    bm25: dict[str, object]
    chunks: list[dict[str, Any]]
    documents: dict[str, list[str]]
    questions: list[dict[str, Any]]
    run: dict[str, list[str]]

    def write(self, folder: Path) -> None:
        (folder / "fixtures").mkdir(parents=True, exist_ok=True)
        (folder / "runs").mkdir(exist_ok=True)
        if self.mode == "chunks":
            (folder / "fixtures" / "chunks.jsonl").write_text(jsonl(self.chunks), encoding="utf-8")
        else:
            shutil.rmtree(folder / "kb", ignore_errors=True)
            (folder / "kb").mkdir()
            for name, parts in self.documents.items():
                (folder / "kb" / name).write_text("".join(f"{part}. " for part in parts).rstrip() + "\n",
                                                  encoding="utf-8")
        (folder / "fixtures" / "evalset.jsonl").write_text(jsonl(self.questions), encoding="utf-8")
        (folder / "runs" / "search.jsonl").write_text(
            jsonl([{"id": qid, "ranking": ranking} for qid, ranking in sorted(self.run.items())]), encoding="utf-8")
        (folder / "pyproject.toml").write_text(config(self.mode, self.significance, self.bm25), encoding="utf-8")


def base_tree(mode: str, significance: bool) -> Tree:
    rng = random.Random(f"kb-{mode}")
    chunks = [{"id": chunk_id(mode, t, n), "doc": f"{topic(t)}.md", "text": text}
              for t in range(1, TOPICS + 1) for n, text in enumerate(sentences(t))]
    documents = {f"{topic(t)}.txt": sentences(t) for t in range(1, TOPICS + 1)}
    return Tree(mode, significance, {}, chunks, documents, base_questions(mode), base_run(mode, rng))


# The cases ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Edit:
    """One change of the pull request: what it does, as data, and in words."""

    kind: str
    what: str
    args: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Case:
    index: int
    mode: str
    base_format: str
    significance: bool
    kind: str
    edits: tuple[Edit, ...]

    @property
    def name(self) -> str:
        return f"{self.index:04d}-{self.kind}-{self.mode}-f{self.base_format}{'-sig' if self.significance else ''}"


def worse(rng: random.Random, adversarial: bool) -> Edit:
    """A worse retriever: bm25 cut by `min_score`, or the run file pushing n questions' gold out of the top
    k (its distractor first); the pull requests that hide a drop behind an edit take the latter more often."""
    if rng.random() < (0.25 if adversarial else 0.5):
        value = rng.choice((3.0, 5.0, 6.0, 9.0))
        return Edit("worse", f"bm25 min_score = {value}", ("min_score", value))
    questions = sorted(rng.sample(ANSWERABLE, rng.choice((2, 4, 6, 8))))
    return Edit("worse", f"run file: gold below k for {', '.join(questions)}", ("run_drop", tuple(questions)))


ANSWERABLE = [f"{topic(t)}-q{j}" for t in range(1, TOPICS + 1) for j in (1, 2)]


def targets(rng: random.Random, dropped: Sequence[str], counts: Sequence[int]) -> list[str]:
    """Questions to edit: mostly among those the worse retriever dropped (the edit that hides the drop),
    else any."""
    pool = list(dropped) if dropped and rng.random() < 0.8 else ANSWERABLE
    return sorted(rng.sample(pool, min(len(pool), rng.choice(counts))))


def primary(rng: random.Random, kind: str, mode: str, dropped: Sequence[str]) -> list[Edit]:
    """The edits of `kind`, their arguments drawn from `rng`; `dropped`: the questions a worse retriever
    drops in this pull request (none without one)."""
    if kind in ("chunk_edit", "document_edit"):
        t = rng.randint(1, TOPICS)
        choice = rng.choice(("edit_gold", "edit_other", "append", "prepend" if mode == "documents" else "copy_gold",
                             "delete_other"))
        return [Edit(kind, f"{choice} in topic {topic(t)}", (choice, t))]
    if kind == "label_edit":
        qids = targets(rng, dropped, (1, 2, 4))
        move = "to_distractor" if dropped and rng.random() < 0.7 else rng.choice(
            ("to_distractor", "add_second", "to_other_topic"))
        return [Edit(kind, f"gold {move} for {', '.join(qids)}", (move, tuple(qids)))]
    if kind == "answerability":
        if rng.random() < 0.5:
            t = rng.randint(1, TOPICS)
            return [Edit(kind, f"no-answer none-1 given gold {chunk_id(mode, t, 1)}", ("give_gold", t))]
        qid = targets(rng, dropped, (1,))[0]
        return [Edit(kind, f"{qid} made no-answer", ("make_none", qid))]
    if kind == "kept_label_edit":
        qids = targets(rng, dropped, (1, 2, 4))
        moved = Edit("label_edit", f"gold to_distractor for {', '.join(qids)}", ("to_distractor", tuple(qids)))
        if rng.random() < 0.5:
            return [moved, Edit(kind, f"head baseline's kept labels moved to the distractor for {', '.join(qids)}",
                                ("hand", tuple(qids)))]
        return [Edit(kind, f"gold to_distractor for {', '.join(qids)}, recorded by an update before the other "
                           "edits", ("recorded", tuple(qids)))]
    if kind == "kept_label_delete":
        key = "labels" if mode == "chunks" or rng.random() < 0.5 else "spans"
        deleted = Edit(kind, f"head baseline's kept `{key}` deleted", (key,))
        if not dropped:
            return [deleted]
        qids = targets(rng, dropped, (1, 2, 4))
        return [Edit("label_edit", f"gold to_distractor for {', '.join(qids)}", ("to_distractor", tuple(qids))),
                deleted]
    if kind == "question_removed":
        qids = targets(rng, dropped, (1, 2, 3))
        return [Edit(kind, f"removed {', '.join(qids)}", tuple(qids))]
    if kind == "question_added":
        t = rng.randint(1, TOPICS)
        return [Edit(kind, f"added a question on {topic(t)}", (t, rng.random() < 0.5))]
    if kind == "query_edited":
        qids = targets(rng, dropped, (1, 2, 3, 5))
        return [Edit(kind, f"query edited for {', '.join(qids)}", tuple(qids))]
    if rng.random() < 0.5:
        key, value = rng.choice((("k1", 0.5), ("k1", 2.5), ("b", 0.0), ("b", 1.0), ("min_score", 1.0),
                                 ("min_score", 3.0)))
        return [Edit(kind, f"bm25 {key} = {value}", ("bm25", key, value))]
    qids = sorted(rng.sample(ANSWERABLE, rng.choice((1, 3, 6))))
    return [Edit(kind, f"run file: gold to rank 1 for {', '.join(qids)}", ("run_up", tuple(qids)))]


def generate(count: int, seed: int) -> list[Case]:
    """`count` cases, kinds in turn, each drawn from its own generator (seed, index)."""
    cases = []
    for index in range(count):
        rng = random.Random(f"{seed}-{index}")
        kind = KINDS[index % len(KINDS)]
        mode = "chunks" if kind == "chunk_edit" else "documents" if kind == "document_edit" else rng.choice(
            ("chunks", "documents"))
        base_format = "current" if kind in ("kept_label_edit", "kept_label_delete") else rng.choice(FORMATS)
        adversarial = kind in ORACLE_KINDS or kind == "question_removed"
        edits = [worse(rng, adversarial)] if rng.random() < (0.7 if adversarial else 0.4) else []
        dropped = edits[0].args[1] if edits and edits[0].args[0] == "run_drop" else ()
        edits += primary(rng, kind, mode, dropped)
        significance = rng.random() < (0.6 if kind == "answerability" else 0.3)
        cases.append(Case(index, mode, base_format, significance, kind, tuple(edits)))
    return cases


SAMPLE = (0, 1, 2, 3, 5, 6, 7, 9, 16, 18, 34, 43, 63, 202, 254, 311, 453)
"""The suite's fixed sample, indices into `generate(_, 48)` (a case depends on its index and the seed
alone): every edit kind, both modes, every base format, gates that fail and pass, and on 0e2421b both
agreeing cases and each kind of disagreement; 254 (a label-only update, then a worse run file: green
locally, red in a pull request's CI) and 311 (a sentence prepended, a stale run file) disagreed on b30c1d3;
202 (gold moved to a distractor) and 453 (a question made no-answer), each over a worse run file on a format-2
base in documents mode, passed the gate on 7a6b1e0, whose failures without the label edit were one cluster
from the floor (tests/plugin/test_differential.py)."""


def sample() -> list[Case]:
    return [case for case in generate(max(SAMPLE) + 1, 48) if case.index in SAMPLE]


# Applying edits -----------------------------------------------------------------------------------

def apply(tree: Tree, edit: Edit) -> None:
    """`edit` on the project's files (the head baseline's edits are `apply_baseline`'s)."""
    mode = tree.mode
    if edit.kind == "worse" or (edit.kind == "retriever_param" and edit.args[0] in ("bm25",)):
        if edit.args[0] == "min_score":
            tree.bm25["min_score"] = edit.args[1]
        elif edit.args[0] == "bm25":
            tree.bm25[edit.args[1]] = edit.args[2]
        else:
            for qid in edit.args[1]:
                t = int(qid[1:3])
                tree.run[qid] = [chunk_id(mode, t, 1), chunk_id(mode, t, 2), chunk_id(mode, t % TOPICS + 1, 1)]
        return
    if edit.kind == "retriever_param":
        for qid in edit.args[1]:
            t = int(qid[1:3])
            tree.run[qid] = [chunk_id(mode, t, 0)] + [c for c in tree.run[qid] if c != chunk_id(mode, t, 0)]
        return
    if edit.kind in ("chunk_edit", "document_edit"):
        choice, t = edit.args
        w = topic(t)
        if mode == "chunks":
            ids = {c["id"]: c for c in tree.chunks}
            if choice == "edit_gold":
                ids[chunk_id(mode, t, 0)]["text"] = f"{w}alpha {w}gold"
            elif choice == "edit_other":
                ids[chunk_id(mode, t, 2)]["text"] = f"{w}alpha {w}gamma {w}gold {w}other"
            elif choice == "append":
                tree.chunks.append({"id": f"kb-{w}-9", "doc": f"{w}.md", "text": f"{w}alpha {w}gamma {w}gold"})
            elif choice == "copy_gold":
                tree.chunks.append({"id": f"kb-{w}-0a", "doc": f"{w}.md", "text": ids[chunk_id(mode, t, 0)]["text"]})
            else:
                tree.chunks.remove(ids[chunk_id(mode, t, 2)])
                drop_from_run(tree, chunk_id(mode, t, 2))
            return
        parts = tree.documents[f"{w}.txt"]
        if choice == "edit_gold":
            parts[0] = f"{w}alpha {w}beta {w}gamma {w}gold {w}extra"
        elif choice == "edit_other":
            parts[2] = f"{w}alpha {w}gamma {w}gold {w}other"
        elif choice == "append":
            parts.append(f"{w}alpha {w}gamma {w}gold again")
        elif choice == "prepend":
            parts.insert(0, f"{w}alpha {w}preface")
        else:
            del parts[2]
            drop_from_run(tree, chunk_id(mode, t, 2))
        return
    if edit.kind == "label_edit" or (edit.kind == "kept_label_edit" and edit.args[0] == "recorded"):
        move, qids = edit.args if edit.kind == "label_edit" else ("to_distractor", edit.args[1])
        for row in tree.questions:
            if row["id"] not in qids:
                continue
            t = int(row["id"][1:3])
            target = 1 if move == "to_distractor" else 0
            other_t = t % TOPICS + 1 if move == "to_other_topic" else t
            if mode == "chunks":
                if move == "add_second":
                    row["relevant"] = {chunk_id(mode, t, 0): 1, chunk_id(mode, t, 1): 1}
                else:
                    row["relevant"] = {chunk_id(mode, other_t, target): 1}
            elif move == "add_second":
                row["relevant_text"] = [sentences(t)[0], sentences(t)[1]]
            else:
                row["relevant_text"] = [sentences(other_t)[target]]
        return
    if edit.kind == "answerability":
        if edit.args[0] == "give_gold":
            t = edit.args[1]
            for row in tree.questions:
                if row["id"] == "none-1":
                    row.update(gold_of(mode, t, 1))
        else:
            for row in tree.questions:
                if row["id"] == edit.args[1]:
                    row.update(no_gold(mode))
        return
    if edit.kind == "question_removed":
        tree.questions = [row for row in tree.questions if row["id"] not in edit.args]
        tree.run = {qid: ranking for qid, ranking in tree.run.items() if qid not in edit.args}
        return
    if edit.kind == "question_added":
        t, good = edit.args
        w = topic(t)
        tree.questions.append({"id": f"{w}-q9", "query": f"{w}gamma {w}gold" if good else f"{w}delta",
                               **gold_of(mode, t, 0)})
        tree.run[f"{w}-q9"] = [chunk_id(mode, t, 0 if good else 2), chunk_id(mode, t, 1)]
        return
    if edit.kind == "query_edited":
        for row in tree.questions:
            if row["id"] in edit.args:
                row["query"] = f"{topic(int(row['id'][1:3]))}delta unrelated"
        return
    # kept labels: the baseline's, applied after the files are written


def drop_from_run(tree: Tree, chunk: str) -> None:
    """The run file as its system would write it once `chunk` is gone."""
    tree.run = {qid: [c for c in ranking if c != chunk] for qid, ranking in tree.run.items()}


def apply_baseline(path: Path, edit: Edit, mode: str) -> bool:
    """The head baseline's kept labels edited or deleted by hand; False where the file keeps none."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    questions = doc.get("fingerprint", {}).get("questions", {})
    if edit.kind == "kept_label_delete":
        if not isinstance(questions.get(edit.args[0]), dict):
            return False
        del questions[edit.args[0]]
    else:
        keys = [key for key in ("labels", "spans") if isinstance(questions.get(key), dict)]
        if not keys:
            return False
        for key in keys:
            for qid in edit.args[1]:
                if qid in questions[key]:
                    questions[key][qid] = distractor_label(questions[key][qid], mode, key, int(qid[1:3]))
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return True


def distractor_label(entry: Any, mode: str, key: str, t: int) -> Any:
    """A kept label entry (`labels`: chunk id -> grade; `spans`: [doc, start, end, grade]) pointed at
    topic t's first distractor."""
    if key == "labels":
        return {chunk_id(mode, t, 1): 1}
    start = len(sentences(t)[0]) + 2
    return [[f"{topic(t)}.txt", start, start + len(sentences(t)[1]), 1]]


def downgrade(path: Path, version: str) -> None:
    """The recorded base as a format-2 or format-3 file wrote it: no kept labels, no approved rankings;
    format 2 without a bar either."""
    if version == "current":
        return
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["format_version"] = int(version)
    questions = doc["fingerprint"].get("questions", {})
    for key in ("labels", "spans"):
        questions.pop(key, None)
    for entry in doc["retrievers"].values():
        entry.pop("approved", None)
        entry.pop("bar", None)
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=2, sort_keys=True) + "\n", encoding="utf-8")


# Running ------------------------------------------------------------------------------------------

@contextlib.contextmanager
def inside(folder: Path) -> Iterator[None]:
    old = Path.cwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(old)


CI = {"GITHUB_ACTIONS": "true", "GITHUB_BASE_REF": "base", "GITHUB_EVENT_NAME": "pull_request"}
"""The environment of a pull request's CI whose base is the tag `base`: the gate and the update's plan read
the base's exam from the base revision, as `diff --against base` does (locally they read the work tree's,
and say so: a label-only update recorded in the pull request is green there by design)."""


@contextlib.contextmanager
def environment(values: Mapping[str, str]) -> Iterator[None]:
    old = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in old.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def pytest_run(folder: Path, *args: str, ci: bool = False) -> tuple[int, str]:
    """`pytest ARGS` in `folder`, in this process (`ci`: as a pull request's CI runs it): its exit code and
    what it printed."""
    import pytest

    out = io.StringIO()
    with inside(folder), environment(CI if ci else {}), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(out):
        code = pytest.main([*args, "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-q",
                            "--rootdir", str(folder)])
    return int(code), out.getvalue()


def cli_run(folder: Path, *args: str) -> tuple[int, str]:
    from pytest_ragretrieval.cli import main

    out = io.StringIO()
    with inside(folder), contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            code = main(list(args))
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 2
    return int(code or 0), out.getvalue()


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True, text=True,
                          env={**os.environ, "GIT_AUTHOR_NAME": "d", "GIT_AUTHOR_EMAIL": "d@example.com",
                               "GIT_COMMITTER_NAME": "d", "GIT_COMMITTER_EMAIL": "d@example.com"}).stdout


def commit(folder: Path, message: str) -> None:
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "--allow-empty", "-m", message)


_BASES: dict[tuple[str, str, bool], Path] = {}


def base(work: Path, mode: str, base_format: str, significance: bool) -> Path:
    """The base repository (recorded, downgraded, committed, tagged `base`), made once per process."""
    key = (mode, base_format, significance)
    if key not in _BASES:
        folder = work / f"base-{mode}-{base_format}-{int(significance)}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        base_tree(mode, significance).write(folder)
        (folder / ".gitignore").write_text(".rag-cache/\n*.out.json\n", encoding="utf-8")
        git(folder, "init", "-q", "-b", "main")
        code, out = pytest_run(folder, "--rag-update-baseline")
        if code != 0:
            raise RuntimeError(f"recording the base failed ({code}):\n{out}")
        downgrade(folder / "baselines" / "retrieval.json", base_format)
        commit(folder, "base")
        git(folder, "tag", "base")
        _BASES[key] = folder
    return _BASES[key]


def failures(path: Path) -> list[tuple[str, str]]:
    if not path.exists():
        return []
    found = json.loads(path.read_text(encoding="utf-8"))
    return sorted({(f["retriever"], f["metric"]) for f in found.get("failures", [])})


@dataclass
class Outcome:
    case: str
    kind: str
    mode: str
    base_format: str
    significance: bool
    edits: list[str]
    gate_rc: int = 0
    gate_failed: list[tuple[str, str]] = field(default_factory=list)
    unedited_failed: list[tuple[str, str]] = field(default_factory=list)
    """The gate's failures on the same pull request without its label and query edits."""
    update_rc: int = 0
    update_refused: bool = False
    update_failed: list[tuple[str, str]] = field(default_factory=list)
    record_rc: int = 0
    refused: str = ""
    """The one line all three judges refused the head's baseline with (damage), where they did."""
    diff_rc: int = 0
    lowered: list[tuple[str, str, str]] = field(default_factory=list)
    lowered_other: list[str] = field(default_factory=list)
    disagreements: list[str] = field(default_factory=list)
    also: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    skipped: str = ""
    seconds: float = 0.0
    minimal: list[str] = field(default_factory=list)
    reproduction: str = ""


def head(work: Path, case: Case, edits: Sequence[Edit]) -> tuple[Path, bool]:
    """The case's head: a clone of its base with `edits` applied and committed. False where a kept-label
    edit found no kept labels."""
    origin = base(work, case.mode, case.base_format, case.significance)
    folder = work / f"case-{os.getpid()}"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(origin, folder, symlinks=True)
    tree = base_tree(case.mode, case.significance)
    recorded = [e for e in edits if e.kind == "kept_label_edit" and e.args[0] == "recorded"]
    for edit in recorded:
        apply(tree, edit)
    if recorded:  # a label-only update, gone through, then the rest of the pull request
        tree.write(folder)
        pytest_run(folder, "--rag-update-baseline")
        commit(folder, "labels")
    for edit in edits:
        if edit not in recorded:
            apply(tree, edit)
    tree.write(folder)
    kept = True
    for edit in edits:
        if edit.kind == "kept_label_delete" or (edit.kind == "kept_label_edit" and edit.args[0] == "hand"):
            kept = apply_baseline(folder / "baselines" / "retrieval.json", edit, case.mode) and kept
    commit(folder, "head")
    return folder, kept


def judge(work: Path, case: Case, edits: Sequence[Edit] | None = None) -> Outcome:
    """The three judges on one case's head, and how they agree."""
    started = time.perf_counter()
    edits = case.edits if edits is None else tuple(edits)
    outcome = Outcome(case.name, case.kind, case.mode, case.base_format, case.significance,
                      [f"{e.kind}: {e.what}" for e in edits])
    unedited = [e for e in edits if e.kind not in ORACLE_KINDS]
    if len(unedited) < len(edits) and unedited:
        folder, _ = head(work, case, unedited)
        pytest_run(folder, "--rag-eval", "--rag-json", "gate.out.json", ci=True)
        outcome.unedited_failed = failures(folder / "gate.out.json")
    folder, kept = head(work, case, edits)
    if not kept:
        outcome.skipped = "the base keeps no labels to edit"
    baseline = folder / "baselines" / "retrieval.json"
    outcome.gate_rc, gate_out = pytest_run(folder, "--rag-eval", "--rag-json", "gate.out.json", ci=True)
    outcome.gate_failed = failures(folder / "gate.out.json")
    before = baseline.read_bytes()
    outcome.update_rc, update_out = pytest_run(folder, "--rag-update-baseline", "--rag-json", "plan.out.json",
                                               ci=True)
    outcome.update_failed = failures(folder / "plan.out.json")
    outcome.update_refused = outcome.update_rc != 0 and "refus" in update_out
    if outcome.update_rc not in (0, 1):
        outcome.details.append("update: " + last_lines(update_out))
    if outcome.gate_rc not in (0, 1):
        outcome.details.append("gate: " + last_lines(gate_out))
    baseline.write_bytes(before)
    refusals = [refusal(gate_out) if outcome.gate_rc == 4 else None,
                refusal(update_out) if outcome.update_rc == 4 else None]
    if any(refusals):
        diff_rc, diff_out = cli_run(folder, "diff", "--against", "base", "--fail-on-lower")
        refusals.append(refusal(diff_out) if diff_rc == 2 else None)
        if len(set(refusals)) == 1:
            outcome.refused = str(refusals[0])
        else:
            outcome.disagreements.append("refusals-differ")
            outcome.details.append("refused by " + ", ".join(
                f"{judge}: {line or 'none'}" for judge, line in zip(("gate", "update", "diff"), refusals, strict=True)))
        outcome.seconds = round(time.perf_counter() - started, 2)
        return outcome
    outcome.record_rc, record_out = pytest_run(folder, "--rag-update-baseline", "--rag-allow-regression")
    if outcome.record_rc != 0:
        outcome.skipped = "the head could not be recorded: " + last_lines(record_out)
    commit(folder, "head recorded")
    outcome.diff_rc, diff_out = cli_run(folder, "diff", "--against", "base", "--fail-on-lower", "--json",
                                        "changes.out.json")
    changes_path = folder / "changes.out.json"
    if changes_path.exists():
        changes = json.loads(changes_path.read_text(encoding="utf-8"))
        outcome.lowered = sorted({(c["retriever"], c["metric"], c.get("exam", "")) for c in changes.get("lowered", [])})
        outcome.lowered_other = (
            [f"removed {e['retriever'] or '*'} {e['metric']}".rstrip() for e in changes.get("removed", [])]
            + [f"loosened {s['setting']} of {s['subject']}" for s in changes.get("loosened", [])]
            + [f"lost hit {h['question']} of {h['retriever']}" for h in changes.get("lost_hits", [])]
            + [f"unreadable: {u}" for u in changes.get("unreadable", [])])
    elif outcome.diff_rc not in (0, 1):
        outcome.details.append("diff: " + last_lines(diff_out))
    classify(outcome)
    if outcome.disagreements:
        outcome.details.append("diff said: " + " | ".join(
            line.strip() for line in diff_out.splitlines() if "lowered" in line or "lower the bar" in line)[:600])
    outcome.seconds = round(time.perf_counter() - started, 2)
    return outcome


def refusal(text: str) -> str | None:
    """The one line a judge refused its inputs with (pytest's `ERROR: ...`, the command's `ragretrieval:
    error: ...`), from the file it names on; None where it printed none."""
    for line in text.splitlines():
        for prefix in ("ERROR: ", "ragretrieval: error: "):
            if line.startswith(prefix):
                return line.removeprefix(prefix).strip()
    return None


def last_lines(text: str, count: int = 3) -> str:
    return " | ".join(line.strip() for line in text.strip().splitlines()[-count:])[:600]


def classify(outcome: Outcome) -> None:
    """The case's disagreements by kind (see the module's docstring)."""
    lowered = {(r, m) for r, m, _ in outcome.lowered}
    gate = set(outcome.gate_failed)
    update = set(outcome.update_failed)
    silent = sorted(gate - lowered)
    if silent:
        outcome.disagreements.append("gate-fails-diff-silent")
        outcome.details.append("gate fails, diff does not lower: " + ", ".join(f"{m} of {r}" for r, m in silent))
    passed = sorted(item for item in lowered - gate - update
                    if not (outcome.update_refused and item[0] in {r for r, _ in update}))
    if passed and not outcome.update_refused:
        outcome.disagreements.append("diff-lowers-gate-passed")
        outcome.details.append("diff lowers, gate and update pass: " + ", ".join(f"{m} of {r}" for r, m in passed))
    if outcome.lowered_other and outcome.gate_rc == 0 and not outcome.update_refused:
        outcome.disagreements.append("diff-lowers-other")
        outcome.details.append("diff lowers, gate and update pass: " + "; ".join(outcome.lowered_other))
    if outcome.update_refused and outcome.gate_rc == 0:
        outcome.disagreements.append("update-refuses-gate-passes")
        outcome.details.append("the update refuses, the gate passes: " + ", ".join(
            f"{m} of {r}" for r, m in outcome.update_failed))
    hidden = sorted(set(outcome.unedited_failed) - gate)
    if hidden:
        outcome.disagreements.append("edit-hides-gate-failure")
        outcome.details.append("the gate fails without the label/query edits, passes with them: "
                               + ", ".join(f"{m} of {r}" for r, m in hidden))
    unlowered = sorted(set(outcome.unedited_failed) - lowered)
    if unlowered:
        outcome.disagreements.append("edit-hides-diff-lowering")
        outcome.details.append("the gate fails without the label/query edits, diff does not lower with them: "
                               + ", ".join(f"{m} of {r}" for r, m in unlowered))
    if outcome.gate_rc != 0 and not outcome.update_refused:
        outcome.also.append("gate-fails-update-takes")


def minimise(work: Path, case: Case, outcome: Outcome) -> None:
    """Drop edits one at a time while every disagreement of `outcome` remains; then the reproduction."""
    edits = list(case.edits)
    for edit in list(edits):
        if len(edits) == 1:
            break
        trial = [e for e in edits if e is not edit]
        again = judge(work, case, trial)
        if set(outcome.disagreements) <= set(again.disagreements):
            edits = trial
    outcome.minimal = [f"{e.kind}: {e.what}" for e in edits]
    outcome.reproduction = reproduction(work, case, edits)


def reproduction(work: Path, case: Case, edits: Sequence[Edit]) -> str:
    """The commands and the pull request's diff of files, for the report."""
    folder, _ = head(work, case, edits)
    patch = git(folder, "diff", "base", "HEAD", "--", ".", ":!baselines/retrieval.json")
    baseline_patch = git(folder, "diff", "base", "HEAD", "--stat", "--", "baselines/retrieval.json")
    if any(e.kind == "kept_label_edit" and e.args[0] == "hand" for e in edits):
        baseline_patch = git(folder, "diff", "-U0", "base", "HEAD", "--", "baselines/retrieval.json")
    shown = config(case.mode, case.significance, {})
    return "\n".join([
        f"# base: {case.mode} mode, base format {case.base_format}, significance "
        f"{'randomization' if case.significance else 'none'}; pyproject.toml at the base:", shown,
        "# base: pytest --rag-update-baseline" + (f", rewritten to format {case.base_format}"
                                                  if case.base_format != "current" else "") + "; git commit; git tag base",
        "# head: the pull request's files, committed:", patch.strip(), baseline_patch.strip(),
        "export GITHUB_ACTIONS=true GITHUB_BASE_REF=base GITHUB_EVENT_NAME=pull_request  # as a PR's CI",
        "pytest --rag-eval --rag-json gate.json",
        "pytest --rag-update-baseline            # the plan (baseline restored after)",
        "unset GITHUB_ACTIONS GITHUB_BASE_REF GITHUB_EVENT_NAME",
        "pytest --rag-update-baseline --rag-allow-regression && git commit -am recorded",
        "ragretrieval diff --against base --fail-on-lower --json changes.json",
    ])


_WORK: Path | None = None


def _init(work: str) -> None:
    global _WORK
    _WORK = Path(work) / f"w{os.getpid()}"
    _WORK.mkdir(parents=True, exist_ok=True)


def _one(case: Case) -> Outcome:
    assert _WORK is not None
    try:
        return judge(_WORK, case)
    except Exception as error:  # one case's crash is a finding, not the end of the run
        outcome = Outcome(case.name, case.kind, case.mode, case.base_format, case.significance,
                          [f"{e.kind}: {e.what}" for e in case.edits])
        outcome.skipped = f"harness error: {type(error).__name__}: {str(error)[:400]}"
        return outcome


def _minimised(pair: tuple[Case, Outcome]) -> Outcome:
    assert _WORK is not None
    case, outcome = pair
    minimise(_WORK, case, outcome)
    return outcome


def run_all(cases: Sequence[Case], work: Path, workers: int, minimise_each: int) -> list[Outcome]:
    """Every case on a pool of `workers` processes, then up to `minimise_each` disagreeing cases of each
    kind minimised."""
    for case in cases:  # recorded here once, before the pool forks, so no worker records one again
        base(work / "bases", case.mode, case.base_format, case.significance)
    with ProcessPoolExecutor(workers, multiprocessing.get_context("fork"), initializer=_init,
                             initargs=(str(work),)) as pool:
        outcomes = list(pool.map(_one, cases, chunksize=1))
        chosen: list[tuple[Case, Outcome]] = []
        taken: Counter[str] = Counter()
        for case, outcome in zip(cases, outcomes, strict=True):
            for kind in outcome.disagreements:
                if taken[kind] < minimise_each:
                    taken[kind] += 1
                    chosen.append((case, outcome))
                    break
        minimal = {o.case: o for o in pool.map(_minimised, chosen)}
    return [minimal.get(o.case, o) for o in outcomes]


# The summary --------------------------------------------------------------------------------------

def summary(outcomes: Sequence[Outcome], seconds: float, workers: int, load: Sequence[float] = ()) -> dict[str, Any]:
    judged = [o for o in outcomes if not o.skipped]
    by_kind: dict[str, dict[str, int]] = {}
    for kind in KINDS:
        mine = [o for o in judged if o.kind == kind]
        by_kind[kind] = {"cases": len(mine), "gate_fails": sum(o.gate_rc != 0 for o in mine),
                         "disagree": sum(bool(o.disagreements) for o in mine)}
    disagreements = Counter(kind for o in judged for kind in o.disagreements)
    also = Counter(kind for o in judged for kind in o.also)
    return {
        "cases": len(outcomes), "judged": len(judged), "skipped": len(outcomes) - len(judged),
        "gate_fails": sum(o.gate_rc != 0 for o in judged),
        "label_edits": sum(o.kind in LABEL_KINDS for o in judged),
        "refused": sum(bool(o.refused) for o in judged),
        "agree": sum(not o.disagreements for o in judged),
        "by_kind": by_kind, "disagreements": dict(disagreements), "also": dict(also),
        "by_format": dict(Counter(o.base_format for o in judged)), "by_mode": dict(Counter(o.mode for o in judged)),
        "seconds": round(seconds, 1), "workers": workers,
        "load": [round(value, 2) for value in (*load, *os.getloadavg())],
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
    }


def print_summary(found: Mapping[str, Any], outcomes: Sequence[Outcome]) -> None:
    print(f"{found['cases']} cases ({found['judged']} judged, {found['skipped']} skipped) in {found['seconds']} s "
          f"on {found['workers']} processes; {found['machine']}; load average at the start (1 min) "
          f"{found['load'][0]}, at the end (1, 5, 15 min) {', '.join(map(str, found['load'][1:]))}")
    print(f"gate fails: {found['gate_fails']} (of them refused alike as damage: {found['refused']}); "
          f"label or kept-label edits: {found['label_edits']}; agree: {found['agree']}")
    print(f"bases by format: {found['by_format']}; by mode: {found['by_mode']}")
    print(f"{'edit kind':<20} {'cases':>6} {'gate fails':>11} {'disagree':>9}")
    for kind, row in found["by_kind"].items():
        print(f"{kind:<20} {row['cases']:>6} {row['gate_fails']:>11} {row['disagree']:>9}")
    print("disagreements by kind: " + (", ".join(f"{k} {v}" for k, v in found["disagreements"].items()) or "none"))
    print("counted beside them: "
          + (", ".join(f"{k} {v}" for k, v in found["also"].items()) or "none"))
    for kind in DISAGREEMENTS:
        for outcome in outcomes:
            if kind in outcome.disagreements and outcome.minimal:
                print(f"\n== {kind}: {outcome.case}, minimal edits: {'; '.join(outcome.minimal)}")
                print("\n".join(outcome.details))
                break
    skipped = Counter(o.skipped for o in outcomes if o.skipped)
    for reason, count in skipped.items():
        print(f"skipped {count}: {reason}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--sample", action="store_true", help="only the suite's fixed sample, none minimised")
    parser.add_argument("--seed", type=int, default=48)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--minimise", type=int, default=3, help="disagreeing cases minimised per kind")
    parser.add_argument("--json", default=str(HERE / ".work" / "differential.json"))
    parser.add_argument("--work", default="")
    args = parser.parse_args(argv)
    # Run as a script, this folder leads sys.path, and its xdist.py would shadow pytest-xdist's plugin.
    sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != HERE]
    cases = sample() if args.sample else generate(args.cases, args.seed)
    started, load = time.perf_counter(), os.getloadavg()[:1]
    with tempfile.TemporaryDirectory(prefix="differential-") as scratch:
        outcomes = run_all(cases, Path(args.work or scratch), args.workers, 0 if args.sample else args.minimise)
    found = summary(outcomes, time.perf_counter() - started, args.workers, load)
    print_summary(found, outcomes)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps({"seed": args.seed, "summary": found,
                                           "cases": [asdict(o) for o in outcomes]}, indent=1) + "\n",
                               encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
