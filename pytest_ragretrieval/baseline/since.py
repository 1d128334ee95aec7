"""What changed since the baseline was recorded, sorted into the two kinds of change the gate knows.

The yardstick (`k`, the metric definitions' version, the grading rules' version) decides what a
value means: when it changed nothing is comparable and the baseline must be re-recorded. Every
other change is to the system under test (a retriever's parameters or sources, the embedder,
the tokenizer, the corpus) and is judged: values are compared across it and the change is named.
Questions are compared on what both sides share: a question is comparable when its id, query and
graded gold are unchanged (a tag change is listed, never a reason). Pure: it reads two
fingerprints as `fingerprint` writes them (or as `format` reads a format-1 one).
"""
from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.values import DIGITS, listed
from ..evalset.records import Question
from ..record.exam import kept_questions, spans_of
from ..scoring.evaluate import mean
from .fingerprint import ITEMIZE_LIMIT
from .format import Baseline, Recorded

YARDSTICK = ("k", "metrics_version", "grading_version")
SHARED = ("tokenizer",)
LATER = ("engine.session",)
"""Fingerprint keys a retriever's record gained within the format (the search settings in effect): a
record written before holds none, and its absence there is no change."""
"""Inputs of the system under test that every retriever shares, besides the corpus."""
LISTED = 10
"""Ids listed per kind of change (edited, added, removed); the rest are counted."""
SHOWN = 60
"""Characters of one value shown in a change; longer ones are cut with an ellipsis."""
ABSENT = object()
"""A key one side does not hold."""
Z_POWER = 1.959963984540054 + 0.8416212335729143
"""z(0.975) + z(0.80): a two-sided 5% test with 80% power."""


def show(value: Any) -> str:
    """A recorded value as JSON, cut to SHOWN characters: `[1.0, 0.5]`, `"jieba 0.42.1"`, `(none)`."""
    if value is ABSENT or value is None:
        return "(none)"
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


@dataclass(frozen=True)
class Change:
    """One recorded value that differs: `hybrid.weights [1.0, 0.5] -> [0.2, 1.0]`."""

    path: str
    old: Any = field(default=None, hash=False, compare=False)
    new: Any = field(default=None, hash=False, compare=False)

    def __str__(self) -> str:
        return f"{self.path} {show(self.old)} -> {show(self.new)}"


def changes(old: Any, new: Any, prefix: str) -> list[Change]:
    """Every value that differs between two nested mappings, by dotted path, in sorted order."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        found: list[Change] = []
        for key in sorted(set(old) | set(new)):
            found.extend(changes(old.get(key, ABSENT), new.get(key, ABSENT), f"{prefix}.{key}"))
        return found
    return [] if old == new else [Change(prefix, old, new)]


def _counted(count: int, what: str, ids: Sequence[str]) -> str:
    return f"{count} {what} ({listed(ids, limit=LISTED)})" if ids else f"{count} {what}"


@dataclass(frozen=True)
class CorpusChange:
    """The corpus, chunk by chunk when both sides itemize it; `edited` None: not itemized."""

    old_count: int | None
    new_count: int
    edited: tuple[str, ...] | None = None
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    table: str | None = None
    """The team's table the corpus was read from (its digest computed there), for a run without a chunks file."""
    digests: tuple[str, str] = ("", "")
    """The table's digest before and after."""
    old_table: str | None = None
    """The table the baseline's corpus was read from, when it names one."""

    def __str__(self) -> str:
        if self.table is not None:
            was = f"{self.old_count:,} -> " if self.old_count is not None else ""
            before = self.digests[0] or "(none)"
            if self.old_table is not None and self.old_table != self.table:
                same = ", the same digest" if self.digests[0] == self.digests[1] else ""
                return (f"chunks: changed (read from {self.old_table}, now from {self.table}; {was}{self.new_count:,} "
                        f"chunks; {before} -> {self.digests[1]}{same})")
            return f"chunks: changed ({was}{self.new_count:,} chunks in {self.table}; {before} -> {self.digests[1]})"
        if self.edited is None and self.old_count is None:
            return (f"chunks: changed ({self.new_count:,} chunks now; not itemized: a format-1 baseline records "
                    "one digest for the whole corpus)")
        if self.edited is None:
            return (f"chunks: changed ({self.old_count:,} -> {self.new_count:,} chunks; not itemized above "
                    f"{ITEMIZE_LIMIT:,} chunks; `git diff` on the chunks file names them)")
        return (f"chunks: {_counted(len(self.edited), 'edited', self.edited)}, "
                f"{_counted(len(self.added), 'added', self.added)}, "
                f"{_counted(len(self.removed), 'removed', self.removed)}")


def corpus_change(old: Mapping[str, Any], new: Mapping[str, Any]) -> CorpusChange | None:
    """None when the corpus is unchanged."""
    if old.get("sha256") == new.get("sha256"):
        return None
    before, after = old.get("digests"), new.get("digests")
    count = old.get("count")
    old_count = count if isinstance(count, int) and not isinstance(count, bool) else None
    if isinstance(new.get("table"), str):
        digests = (str(old.get("digest", "")), str(new.get("digest", "")))
        old_table = old["table"] if isinstance(old.get("table"), str) else None
        return CorpusChange(old_count, int(new.get("count", 0)), table=new["table"], digests=digests,
                            old_table=old_table)
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        return CorpusChange(old_count, int(new.get("count", 0)))
    return CorpusChange(
        old_count, len(after),
        edited=tuple(sorted(cid for cid in set(before) & set(after) if before[cid] != after[cid])),
        added=tuple(sorted(set(after) - set(before))),
        removed=tuple(sorted(set(before) - set(after))),
    )


@dataclass(frozen=True)
class QuestionChanges:
    """Which questions both sides share (`comparable`), and how the others differ."""

    comparable: frozenset[str]
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    edited: tuple[tuple[str, str], ...] = ()
    """(id, what changed) of questions both hold whose query or graded gold differ."""
    retagged: tuple[tuple[str, str], ...] = ()
    """(id, `old tags -> new tags`) of comparable questions whose tags changed."""
    relabelled: tuple[str, ...] = ()
    """Comparable questions whose labels changed (query unchanged, the baseline keeps its labels): judged
    under today's exam and the base's."""
    note: str = ""
    """How comparability was decided when the baseline cannot itemize its questions (format 1)."""
    itemized: bool = True
    """Both sides hold per-question digests; else `comparable` is whatever the caller's fallback named."""

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed or self.edited or self.retagged or self.relabelled or self.note)

    def lines(self) -> list[str]:
        if not self.changed:
            return []
        edited = [f"{qid}: {why}" for qid, why in self.edited]
        parts = [f"{len(self.comparable)} comparable", _counted(len(self.added), "added", self.added),
                 _counted(len(self.removed), "removed", self.removed),
                 _counted(len(self.edited), "edited", edited)]
        notes = (["added ones are scored, never judged"] if self.added else []) + (
            ["edited ones are not compared"] if self.edited else []) + ([self.note] if self.note else [])
        if self.relabelled:
            parts[0] += (f" ({len(self.relabelled)} relabelled: {listed(self.relabelled, limit=LISTED)}; "
                         "judged under today's exam and the base's)")
        found = ["questions: " + ", ".join(parts) + "".join(f"; {note}" for note in notes)]
        if self.retagged:
            retagged = [f"{q} {t}" for q, t in self.retagged]
            found.append("questions retagged (still compared): " + listed(retagged, limit=LISTED))
        return found


def _tags(tags: Any) -> str:
    return ", ".join(tags) if isinstance(tags, list) and tags else "(none)"


def _edit(old: Mapping[str, Any], new: Mapping[str, Any], qid: str, corpus: CorpusChange | None) -> str:
    """What changed in one question both sides hold: its query, its graded gold, and which chunks
    its `relevant_text` snippets no longer match."""
    parts = []
    if old.get("query") != new.get("query"):
        parts.append("query")
    if old.get("gold") != new.get("gold"):
        lost = sorted(set(old.get("snippets", [])) - set(new.get("snippets", [])))
        edited = set(corpus.edited or ()) if corpus is not None else set()
        if lost:
            named = listed(f"{cid} (edited)" if cid in edited else cid for cid in lost)
            parts.append(f"graded gold: its relevant_text no longer matches {named}")
        else:
            parts.append("graded gold")
    return " and ".join(parts)


def _label_work(old: Question | None, new: Question | None, corpus: CorpusChange | None) -> bool:
    """A change of a question's labels that is label work alone: every chunk whose grade changed is the same
    chunk on both sides, and its gold spans (documents mode) moved only where the corpus did not change. A
    label moved to a chunk that was edited, added or removed (a re-chunk and its relabel, a document edited
    in documents mode), or a span whose offsets moved with an edited document, changes what the ids and
    offsets mean: the base's labels cannot judge today's chunks, so the question is edited."""
    before = old.relevance if old is not None else {}
    after = new.relevance if new is not None else {}
    spans = [spans_of(question) if question is not None else [] for question in (old, new)]
    if spans[0] != spans[1] and corpus is not None:
        return False
    moved = {cid for cid in set(before) | set(after) if before.get(cid) != after.get(cid)}
    if corpus is None or not moved:
        return True
    if corpus.edited is None:
        return False
    return not moved & {*corpus.edited, *corpus.added, *corpus.removed}


def question_changes(
    old: Mapping[str, Any], new: Mapping[str, Any], corpus: CorpusChange | None,
    fallback: Collection[str] | None = None, rule: str = "by id",
) -> QuestionChanges:
    """Compare two `questions` records. Where a side holds no per-question digests (format 1), which
    questions changed cannot be told: `fallback` then names the comparable ones (how: `rule`; default
    the ids of today's record), and a note says so when the eval sets differ. A question whose query is
    unchanged stays comparable whatever happened to its labels when both sides keep them (format 4:
    `relabelled`, judged under both exams), unless a chunk whose grade changed was itself edited, added or
    removed (`_label_work`); else a change of its graded gold is an edit."""
    after, before = new.get("digests"), old.get("digests")
    same = old.get("sha256") == new.get("sha256")
    if not (isinstance(after, Mapping) and isinstance(before, Mapping)):
        ids = frozenset(fallback) if fallback is not None else frozenset(after or ())
        note = f"questions not itemized (a format-1 file): compared {rule}"
        return QuestionChanges(ids, itemized=False) if same else QuestionChanges(ids, note=note, itemized=False)
    if same:  # the same ids, queries, grades and tags
        return QuestionChanges(frozenset(after))
    old_exam, new_exam = kept_questions(old), kept_questions(new)
    same, edited, retagged, relabelled = [], [], [], []
    for qid in sorted(set(before) & set(after)):
        was, now = before[qid], after[qid]
        same_query = was.get("query") == now.get("query")
        if same_query and (was.get("gold") == now.get("gold") or (
                old_exam is not None and new_exam is not None and _label_work(old_exam.get(qid), new_exam.get(qid),
                                                                              corpus))):
            same.append(qid)
            if was.get("gold") != now.get("gold"):
                relabelled.append(qid)
            if was.get("tags") != now.get("tags"):
                retagged.append((qid, f"{_tags(was.get('tags'))} -> {_tags(now.get('tags'))}"))
        else:
            edited.append((qid, _edit(was, now, qid, corpus)))
    return QuestionChanges(
        frozenset(same), added=tuple(sorted(set(after) - set(before))),
        removed=tuple(sorted(set(before) - set(after))), edited=tuple(edited), retagged=tuple(retagged),
        relabelled=tuple(relabelled),
    )


@dataclass(frozen=True)
class Since:
    """Everything that changed between a recorded fingerprint and this run's."""

    yardstick: tuple[Change, ...]
    shared: tuple[Change, ...]
    corpus: CorpusChange | None
    questions: QuestionChanges
    retrievers: Mapping[str, tuple[Change, ...]] = field(hash=False)
    labels: str = ""
    """`labels to review: ...`: the questions whose gold chunk's text was edited (`gold.py`); the judge adds it."""
    chunker: tuple[Change, ...] = ()
    """Documents mode: the chunker's (and each named chunking's) parameters that changed: a re-chunk, judged by
    the gold spans at each side's places (`bar/places.py`)."""
    rechunk: str = ""
    """The header's line on how a chunker change is judged (the judge adds it)."""

    @property
    def comparable(self) -> bool:
        return not self.yardstick

    @property
    def data_changed(self) -> bool:
        """A shared input changed: the baseline's entries must then all be recorded together."""
        return bool(self.shared or self.corpus is not None or self.questions.changed)

    def of(self, name: str) -> list[str]:
        """What changed for one retriever: its own parameters, its sources' (`reads`), the shared inputs."""
        found = [str(change) for change in self.retrievers.get(name, ())]
        return found + [str(change) for change in self.shared] + ([str(self.corpus)] if self.corpus else [])

    def paths(self, name: str) -> list[str]:
        """What changed for one retriever, by short path (`hybrid.weights`, `tokenizer`, `chunks`), each
        once: what an item names, the header having said once how each changed (`lines`)."""
        found = [c.path for c in self.retrievers.get(name, ())] + [c.path for c in self.shared]
        found += [c.path for c in self.chunker]  # the chunks changed with the chunker: it names the change
        return list(dict.fromkeys(found + (["chunks"] if self.corpus is not None and not self.chunker else [])))

    def system(self) -> list[str]:
        """Every change of the system under test, once: a source's change is named under the source's
        own name, and under a reader's `reads` only when the source itself does not name it."""
        own = {(c.path, show(c.old), show(c.new)) for cs in self.retrievers.values() for c in cs}
        found = []
        for name in sorted(self.retrievers):
            for change in self.retrievers[name]:
                source = change.path.partition(".reads.")[2]
                if not (source and (source, show(change.old), show(change.new)) in own):
                    found.append(str(change))
        found += [str(change) for change in (*self.shared, *self.chunker)]
        return found + ([str(self.corpus)] if self.corpus else [])

    def lines(self) -> list[str]:
        """The header's lines: what the values were compared across, and the questions' changes."""
        found = []
        if self.yardstick:
            found.append("not comparable: the yardstick changed: " + "; ".join(map(str, self.yardstick)))
        system = self.system()
        if system and not self.yardstick:
            found.append("compared across changes: " + "; ".join(system))
        return (found + ([self.rechunk] if self.rechunk else []) + self.questions.lines()
                + ([self.labels] if self.labels else []))


def retriever_changes(old: Mapping[str, Any], new: Mapping[str, Any], name: str) -> tuple[Change, ...]:
    """What changed in one retriever's fingerprint, by dotted path from its name (a file's entry without
    its fingerprint is damage: `format.parse` refuses it)."""
    before, after = old.get("retrievers", {}), new.get("retrievers", {})
    later = {f"{name}.{key}" for key in LATER}
    return tuple(change for change in changes(before.get(name, {}), after.get(name, {}), name)
                 if not (change.old is ABSENT and change.path in later))


def since(
    old: Mapping[str, Any], new: Mapping[str, Any], names: Collection[str] = (),
    fallback: Collection[str] | None = None, rule: str = "by id",
) -> Since:
    """Compare a recorded fingerprint with this run's (or two files'), for the retrievers `names`;
    `fallback` and `rule` as in `question_changes`."""
    was, now = old.get("yardstick", {}), new.get("yardstick", {})
    yardstick = tuple(Change(key, was.get(key), now.get(key)) for key in YARDSTICK if was.get(key) != now.get(key))
    shared = tuple(Change(key, old.get(key), new.get(key)) for key in SHARED if old.get(key) != new.get(key))
    corpus = corpus_change(old.get("chunks", {}), new.get("chunks", {}))
    questions = question_changes(old.get("questions", {}), new.get("questions", {}), corpus, fallback, rule)
    retrievers = {name: retriever_changes(old, new, name) for name in sorted(names)}
    return Since(yardstick, shared, corpus, questions, {k: v for k, v in retrievers.items() if v},
                 chunker=chunker_changes(old, new))


CHUNKING = ("chunker", "chunkings")
"""The keys of a fingerprint's `chunks` that say how documents were cut."""


def chunker_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[Change, ...]:
    """Documents mode on both sides: each parameter of the chunker (and of a named chunking) that changed,
    `chunker.size 512 -> 256`; nothing where either side read a chunks file."""
    before, after = old.get("chunks", {}), new.get("chunks", {})
    if not (isinstance(before, Mapping) and isinstance(after, Mapping)
            and isinstance(before.get("chunker"), Mapping) and isinstance(after.get("chunker"), Mapping)):
        return ()
    return tuple(change for key in CHUNKING
                 for change in changes(before.get(key, ABSENT), after.get(key, ABSENT), key))


# Values over the questions both sides share.


@dataclass(frozen=True)
class Paired:
    """One metric's per-question values on both sides over the comparable questions both scored."""

    ids: tuple[str, ...]
    before: tuple[float, ...]
    after: tuple[float, ...]
    whole: bool
    """Both sides scored exactly these questions: their recorded means are the means over this set."""

    @property
    def n(self) -> int:
        return len(self.ids)


def paired(
    label: str, old: Mapping[str, Mapping[str, float]], new: Mapping[str, Mapping[str, float]],
    comparable: Collection[str],
) -> Paired:
    """Per-question (before, after) values of `label`, in question-id order."""
    ids = tuple(sorted(q for q in comparable if label in old.get(q, {}) and label in new.get(q, {})))
    whole = set(ids) == {q for q, v in old.items() if label in v} == {q for q, v in new.items() if label in v}
    return Paired(ids, tuple(old[q][label] for q in ids), tuple(new[q][label] for q in ids), whole)


def detectable(values: Sequence[float]) -> float | None:
    """The minimum detectable effect of a paired two-sided 5% test with 80% power over these
    questions: (z0.975 + z0.80) · sd / sqrt(n), sd the sample standard deviation of the baseline's
    per-question values (as if the paired differences spread as widely as the values). None below 2."""
    n = len(values)
    if n < 2:
        return None
    average = math.fsum(values) / n
    sd = math.sqrt(math.fsum((v - average) ** 2 for v in values) / (n - 1))
    return round(Z_POWER * sd / math.sqrt(n), DIGITS)


def common_means(
    old: Recorded, new: Recorded, comparable: Collection[str]
) -> tuple[dict[str, float], dict[str, float]]:
    """Each side's mean of every metric both hold, over the comparable questions both scored: the
    recorded means where both scored exactly those questions."""
    before: dict[str, float] = {}
    after: dict[str, float] = {}
    old_values = {qid: q.metrics for qid, q in old.questions.items()}
    new_values = {qid: q.metrics for qid, q in new.questions.items()}
    for label in set(old.metrics) & set(new.metrics):
        pairs = paired(label, old_values, new_values, comparable)
        if pairs.whole:
            before[label], after[label] = old.metrics[label], new.metrics[label]
        elif pairs.n:
            before[label], after[label] = mean(pairs.before), mean(pairs.after)
    return before, after


def asked_alike(old: Mapping[str, Any], new: Mapping[str, Any]) -> frozenset[str]:
    """Questions both fingerprints itemize asked as before (the same query digest): one of them that left the
    comparison changed its gold."""
    was, now = old.get("questions", {}).get("digests"), new.get("questions", {}).get("digests")
    if not isinstance(was, Mapping) or not isinstance(now, Mapping):
        return frozenset()
    return frozenset(qid for qid, entry in was.items() if isinstance(entry, Mapping)
                     and isinstance(now.get(qid), Mapping) and entry.get("query") == now[qid].get("query"))


def held(old: Baseline, new: Baseline) -> frozenset[str]:
    """The question ids two baselines (or results files) both hold values for, in any entry: what a file
    that does not itemize its questions is compared on."""
    def ids(side: Baseline) -> set[str]:
        return {qid for entry in side.retrievers.values() for qid in entry.questions}
    return frozenset(ids(old) & ids(new))
