"""Both sides' bars scored here, never read: what `classify` compares (docs/approval.md, "Trust model").

A pull request can write any number into its own baseline; the base revision's file is the trust root.
So the check takes nothing the head's file says about values: per retriever x metric it scores the
base's approved rankings and the head's with the same code under both exams, today's (the work tree's
eval set, else the labels the head's file keeps) and the base's (the labels the base's file keeps), over
the questions both share with an unchanged query, and applies the removal rule to the questions that
leave (their values: the base's approved rankings under the base's exam). What is left of the head's
file is its approved rankings and which questions keep a value bar; a kept value bar's numbers are the
base's. Pure: two baselines and today's exam in, means per exam out.
"""
from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..bar.exam import Exam, Scorer
from ..bar.places import Edit, asked_alike, placed
from ..bar.rule import Replacement, replacement
from ..bar.sides import as_recorded, leaving, recorded_values
from ..bar.units import UnitDrops, unit_drops
from ..baseline.exams import BASE, TODAY
from ..baseline.fingerprint import questions_record, recorded_places
from ..baseline.format import Baseline, Recorded, RecordedQuestion
from ..baseline.since import QuestionChanges, Since, chunker_changes, paired, question_changes
from ..core.values import EPSILON
from ..evalset.records import Question, Span
from ..files.paths import display
from ..scoring.evaluate import mean
from ..scoring.metrics import METRICS, MetricSpec, metric_order, of_label


@dataclass(frozen=True)
class Today:
    """Today's exam as the work tree gives it (`diff --against REV`): its eval set's questions, the chunks'
    places (documents mode: what span metrics need), and each retriever's chunking when chunkings sit
    side by side (None: they do not)."""

    questions: tuple[Question, ...]
    source: str
    places: Mapping[str, Span] | None = field(default=None, hash=False)
    chunkings: Mapping[str, str] | None = field(default=None, hash=False)
    changed: tuple[str, ...] | None = ()
    """Chunks edited or removed between the files (None: the corpus changed, not itemized): rankings are
    scored without their places (`Scorer.without`), as the gate scores the bar."""
    documents: Mapping[str, str] | None = field(default=None, hash=False)
    """Documents mode: each document's short digest today (a recorded place in another text is none)."""
    digests: Mapping[str, str] | None = field(default=None, hash=False)
    """Today's chunks' short digests (`chunk_record`): which chunks each file's rankings saw as they are today."""
    rankings: Mapping[str, Mapping[str, Sequence[str]]] | None = field(default=None, hash=False)
    """Today's rankings (retriever -> question id -> ranking), from the gate's own `--rag-json` of the same job
    (`diff --today`), never from the head's baseline: where the head's file holds no ranking of a question as
    it is asked today (its query edited since, or added), the head's side is today's."""
    failed: frozenset[tuple[str, str]] | None = field(default=None, hash=False)
    """(retriever, metric) the gate failed in that results file (its `failures`; None: it records none): today's
    side lowers only what the gate itself failed, so the check is never red where the gate was green."""
    units: Mapping[str, tuple[str, ...]] | None = field(default=None, hash=False)
    """The relabel's mapping after a chunk-id re-chunk (`labels.relabel.unit_map`: old gold id -> the chunks its
    text went to): which lowerings only come from the changed unit (`bar.units`)."""
    chunking: Mapping[str, Any] | None = field(default=None, hash=False)
    """How the work tree cuts its documents, as a fingerprint's `chunks` records it (`chunker`, `chunkings`):
    whether the chunker changed since the base's file."""
    edits: Mapping[str, Edit] | None = field(default=None, hash=False)
    """Each document edited since the base's file recorded its places: its edit (`bar.places.edit`), through
    which the base's places are carried."""


@dataclass(frozen=True)
class Means:
    """One metric of one retriever under one exam: both sides' means over the questions both are compared on."""

    exam: str
    old: float
    new: float
    questions: int


@dataclass(frozen=True)
class Rescored:
    """One retriever's comparison, scored from the approved rankings."""

    means: Mapping[str, tuple[Means, ...]] = field(hash=False)
    """Metric label -> its means, exam by exam (today's first)."""
    replaced: Mapping[str, Replacement] = field(hash=False)
    """Metric label -> the questions that leave and lower its bar (`bar.rule.replacement`)."""
    lost: tuple[tuple[str, str], ...] = ()
    """(question, exam): a hit within k of the base's approved ranking that the head's misses."""
    unscored: tuple[str, ...] = ()
    """Labels that cannot be scored here (a metric this installation lacks, a span metric without the chunks'
    places): compared by their stored values, and said so."""
    missing: tuple[str, ...] = ()
    """Questions compared that the head's entry holds no ranking for: scored as empty rankings."""
    moved_below: tuple[str, ...] = ()
    """Questions moved out of the gate (`Exams.moved`) whose value today is below their approved one, under an
    exam, in a metric compared."""
    moved_rule: Mapping[str, Replacement] = field(default_factory=dict, hash=False)
    """Metric label -> the moved questions' leaving as the question rule reads it, where it lowers the bar."""
    units: Mapping[str, UnitDrops] = field(default_factory=dict, hash=False)
    """Metric label -> its dropping questions told apart by the relabel's mapping (a chunk-id re-chunk only)."""
    segments: Mapping[str, Mapping[str, tuple[Means, ...]]] = field(default_factory=dict, hash=False)
    """Segment value (`lang:de`) -> metric label -> its means over the segment's compared questions, exam by exam."""


@dataclass(frozen=True)
class Exams:
    """What both sides are scored under: the base's exam (the old file's labels; None: it keeps none, and
    nothing is re-scored), today's (None: neither the work tree nor the new file gives one; its `source` says
    where it comes from), and the questions compared (an unchanged query on both sides)."""

    base: Exam | None
    today: Exam | None
    comparable: frozenset[str]
    places: Mapping[str, Span] | None = field(default=None, hash=False)
    chunkings: Mapping[str, str] | None = field(default=None, hash=False)
    changed: tuple[str, ...] | None = ()
    """Chunks edited or removed between the files (None: the corpus changed, not itemized): rankings are
    scored without their places (`Scorer.without`), as the gate scores the bar."""
    head_changed: tuple[str, ...] | None = ()
    """The same for the head's rankings: the chunks edited or removed since the head's file was recorded
    (with today's chunks known; else those between the files). A ranking recorded on today's corpus is
    scored at today's places, as the gate scores today's rankings."""
    fresh: Mapping[str, Mapping[str, Sequence[str]]] = field(default_factory=dict, hash=False)
    """Per retriever, today's rankings of the questions the head's file holds no ranking of as asked today
    (`Today.rankings`), and of the `moved` ones: the question rule then sees the values they have today."""
    moved: frozenset[str] = frozenset()
    """The base's gate questions today's split puts on `tune` (a `side` edited, `[split]` changed): compared
    as any question, and each one's value today against its approved one (`Rescored.moved_below`)."""
    units: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)
    """`Today.units`, the relabel's mapping."""
    asked: frozenset[str] = frozenset()
    """Questions the base asks as today does (the same query digest), their labels changed or not."""
    cut: Cut | None = None
    """Across a chunker change: each side's places and the questions each kind of metric compares."""
    segments: Mapping[str, frozenset[str]] = field(default_factory=dict, hash=False)
    """Segment value (`lang:de`) -> its questions, as the base's exam or today's puts them there
    (`evalset.segments.members`): each compared as the whole set is."""
    min_questions: int = 0
    """A segment value with fewer compared questions under an exam is shown by the gate, not judged: no lowering."""


@dataclass(frozen=True)
class Cut:
    """A chunker change between the base's file and the head's side (the work tree's chunking, or the head's
    file's): each side's rankings at its own places, never the other chunking's (`bar/places.py`)."""

    old: Mapping[str, Span] = field(hash=False)
    """The base's file's recorded places, where its approved rankings are scored."""
    new: Mapping[str, Span] = field(hash=False)
    """The head's side's places: its file's recorded ones, over today's (`--today`'s rankings are today's)."""
    asked: frozenset[str]
    """Questions asked alike with the same gold spans: what the span metrics compare."""
    lost: frozenset[str] = frozenset()
    """The base's chunks in an edited document whose place its edit did not keep: a question whose approved
    top k holds one leaves the span metrics' comparison, as edited."""

    def mapped(self, approved: Mapping[str, Sequence[str]], k: int) -> frozenset[str]:
        """The questions asked alike whose approved top k holds no place lost to an edit."""
        return frozenset(qid for qid in self.asked if not self.lost.intersection(approved.get(qid, ())[:k]))

    def questions(self, found: QuestionChanges) -> QuestionChanges:
        """`found` as the header says it across this change: a question asked alike with the same gold spans is
        no edited one (its labels moved with the chunks)."""
        return replace(found, edited=tuple((qid, why) for qid, why in found.edited if qid not in self.asked))

    def comparable(self, label: str, comparable: Collection[str], approved: Mapping[str, Sequence[str]],
                   k: int) -> frozenset[str]:
        """A span metric's questions (`asked`), else the comparable ones whose approved top k kept its places."""
        metric = of_label(label)
        if metric is not None and metric.spans:
            return self.mapped(approved, k)
        return frozenset(qid for qid in comparable if all(
            cid in self.old and self.new.get(cid) == self.old[cid] for cid in approved.get(qid, ())[:k]))


def exams(old: Baseline, new: Baseline, today: Today | None, found: Since, moved: frozenset[str] = frozenset()
          ) -> Exams:
    """The exams of a comparison, and across a chunker change each side's places (`_cut`)."""
    return replace(_exams(old, new, today, found, moved), cut=_cut(old, new, today, found))


def _cut(old: Baseline, new: Baseline, today: Today | None, found: Since) -> Cut | None:
    """Each side's places where the chunker changed between the base's file and the head's side and the base's
    file keeps its places (format 5); a place in a document edited since is carried through its edit
    (`Today.edits`), else it is lost."""
    head: Mapping[str, Any] = new.fingerprint
    if today is not None and today.chunking is not None:
        head = {"chunks": today.chunking, "questions": questions_record(today.questions)}
    if not chunker_changes(old.fingerprint, head if today is not None else new.fingerprint):
        return None
    recorded, held = recorded_places(old.fingerprint), recorded_places(new.fingerprint)
    if not recorded:
        return None
    documents = today.documents if today is not None and today.documents is not None else {
        span.doc: digest for span, digest in held.values()}
    moved = today.edits if today is not None and today.edits is not None else {}
    base = {span.doc: digest for span, digest in recorded.values()}  # the texts `moved` starts from
    kept, gone = placed({cid: (span, digest) for cid, (span, digest) in held.items()
                         if digest in (documents.get(span.doc), base.get(span.doc))}, documents, moved)
    before, lost = placed(recorded, documents, moved)
    return Cut(before, {**(today.places or {} if today is not None else {}), **kept},
               asked_alike(old.fingerprint, head, moved), lost | gone)


def _exams(old: Baseline, new: Baseline, today: Today | None, found: Since, moved: frozenset[str]) -> Exams:
    """The exams of a comparison. With the work tree's eval set, which questions are compared is derived
    from it (a question the head's file drops while the eval set still asks it stays compared); else the
    files' own question digests decide (`found`, as `since` compared them)."""
    base = Exam.of_baseline(old.fingerprint, f"the labels {display(old.path)} was recorded under")
    comparable = found.questions.comparable
    if today is not None:
        section = old.fingerprint.get("questions", {})
        derived = question_changes(section if isinstance(section, Mapping) else {}, questions_record(today.questions),
                                   found.corpus)
        fresh = _fresh(new, today, moved)
        changed = _changed(found)
        if today.digests is not None:
            changed, head = _since(old.fingerprint, today.digests), _since(new.fingerprint, today.digests)
        else:
            head = changed
        asked = derived.comparable | {qid for qid, why in derived.edited if "query" not in why}
        return Exams(base, Exam.of_today(today.questions, today.source), derived.comparable, today.places,
                     today.chunkings, changed, head, fresh, moved, dict(today.units or {}), frozenset(asked))
    kept = Exam.of_baseline(new.fingerprint, f"the labels {display(new.path)} was recorded under")
    chunkings = None
    if isinstance(old.fingerprint.get("chunks"), Mapping) and "chunkings" in old.fingerprint["chunks"]:
        described = old.fingerprint.get("retrievers", {})
        chunkings = {name: str(entry.get("chunking", "")) for name, entry in described.items()
                     if isinstance(entry, Mapping)}
    return Exams(base, kept, frozenset(comparable), None, chunkings, _changed(found), _changed(found))


def _fresh(new: Baseline, today: Today, moved: frozenset[str]) -> dict[str, dict[str, Sequence[str]]]:
    """Today's rankings of the questions the head's file does not hold as they are asked today, and of the
    questions moved out of the gate: the head's file holds its own ranking of those, not today's."""
    if not today.rankings:
        return {}
    section = new.fingerprint.get("questions", {})
    held = question_changes(section if isinstance(section, Mapping) else {}, questions_record(today.questions),
                            None).comparable
    return {name: {qid: tuple(ranking) for qid, ranking in found.items() if qid not in held or qid in moved}
            for name, found in today.rankings.items()}


def _since(fingerprint: Mapping[str, object], today: Mapping[str, str]) -> tuple[str, ...] | None:
    """The chunks a file's rankings saw that are edited or removed today (None: its corpus is not itemized)."""
    chunks = fingerprint.get("chunks")
    recorded = chunks.get("digests") if isinstance(chunks, Mapping) else None
    if not isinstance(recorded, Mapping):
        return None
    return tuple(sorted(cid for cid, digest in recorded.items() if today.get(cid) != digest))


def _changed(found: Since) -> tuple[str, ...] | None:
    corpus = found.corpus
    if corpus is None:
        return ()
    return None if corpus.edited is None else (*corpus.edited, *corpus.removed)


def _share(name: str, exam: Exam | None, chunkings: Mapping[str, str] | None) -> Exam | None:
    """An exam as retriever `name` is scored on it: its own chunking's labels when chunkings sit side by side."""
    if exam is None:
        return None
    return exam.cut(chunkings.get(name, "") if chunkings is not None else None)


def _specs(labels: Collection[str], k: int, places: Mapping[str, Span] | None) -> tuple[list[MetricSpec], list[str]]:
    """(what can be scored here, the labels that cannot: unknown metrics, span metrics without places)."""
    specs, unscored = [], []
    for label in sorted(labels, key=metric_order):
        found = of_label(label)
        try:
            spec = MetricSpec.parse(label, k) if found is not None else None
        except ValueError:
            spec = None
        if spec is None or spec.label != label or (found is not None and found.spans and places is None):
            unscored.append(label)
        else:
            specs.append(spec)
    return specs, unscored


def _head_bar(new: Recorded, bar: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """The value bar the head keeps, with the base's numbers: an update keeps a value bar or drops it, never
    writes one, so only which questions keep it is the head's to say. `bar` is the base's bar under the exam
    (its kept value bar where it holds one, else its approved rankings scored): a base without a value bar
    still gives each question the head keeps one for its bar, as the gate reads the head's."""
    return {label: {qid: bar[qid][label] for qid in kept if label in bar.get(qid, {})}
            for label, kept in new.bar.items()}


def _floor(values: Mapping[str, Mapping[str, float]], base: Mapping[str, Mapping[str, float]],
           labels: Collection[str]) -> dict[str, dict[str, float]]:
    """The head's values with a value wherever the base's side has one: a span metric has none for a ranking
    holding a chunk the corpus cannot place, and such a ranking scores the metric's floor, not nothing."""
    found = {qid: dict(row) for qid, row in values.items()}
    for qid, row in base.items():
        for label in labels:
            metric = METRICS.get(label.partition("@")[0])
            if label in row and label not in found.setdefault(qid, {}) and metric is not None:
                found[qid][label] = metric.bounds[0]
    return found


def rescore(name: str, old: Baseline, new: Baseline, labels: Collection[str], found: Exams,
            hits: bool) -> Rescored:
    """Retriever `name`'s comparison: per label, both sides' means under today's exam and, where the labels of
    a compared question differ, the base's; the removal rule; with `hits` (the base gates questions), the
    questions whose approved ranking no longer holds a relevant chunk within the base's k."""
    before, after = old.retrievers[name], new.retrievers[name]
    base = _share(name, found.base, found.chunkings)
    assert base is not None
    today = _share(name, found.today, found.chunkings)
    cut = found.cut
    specs, unscored = _specs(labels, old.k, found.places if cut is None else cut.new)
    scorer = Scorer(tuple(specs), found.places).without(found.changed) if cut is None else Scorer(tuple(specs), cut.old)
    head_scorer = (Scorer(tuple(specs), found.places).without(found.head_changed) if cut is None
                   else Scorer(tuple(specs), cut.new))
    old_rankings = before.approved_rankings()
    new_rankings = after.approved_rankings()
    on = {label: found.comparable if cut is None else cut.comparable(label, found.comparable, old_rankings, old.k)
          for label in [*labels, ""]}  # "": a chunk-id metric's (the lost hits')
    compared = sorted(qid for qid in set().union(found.comparable, *on.values()) if qid in before.questions)
    fresh = found.fresh.get(name, {})
    missing = tuple(qid for qid in compared if qid not in after.questions and qid not in fresh
                    and (today is None or qid in today) and qid in base)
    rankings = {qid: fresh.get(qid, new_rankings.get(qid, ())) for qid in {*new_rankings, *compared, *fresh}}
    sat = [(TODAY, today)] if today is not None else []
    if today is None or today.differs(base, compared):
        sat.append((BASE, base))
    means: dict[str, list[Means]] = {spec.label: [] for spec in specs}
    parts: dict[str, dict[str, list[Means]]] = {}
    lost: list[tuple[str, str]] = []
    below: set[str] = set()
    rule: dict[str, Replacement] = {}
    for exam, questions in sat:
        ids = [qid for qid in compared if qid in questions]
        bar = recorded_values(as_recorded(questions.score(scorer, name, old_rankings, ids), before.bar))
        head_bar = _head_bar(after, bar)
        head = _floor(recorded_values(as_recorded(questions.score(head_scorer, name, rankings, ids), head_bar)), bar,
                      list(means))
        for label in means:
            pairs = paired(label, bar, head, [qid for qid in ids if qid in on[label]])
            if pairs.n:
                means[label].append(Means(exam, mean(pairs.before), mean(pairs.after), pairs.n))
        _segment_means(parts, exam, found.segments, (bar, head), ids, list(means))
        moved = [qid for qid in ids if qid in found.moved]
        below |= {qid for qid in moved for label in means if label in bar.get(qid, {})
                  and head.get(qid, {}).get(label, bar[qid][label]) < bar[qid][label] - EPSILON}
        for label in means if moved else ():
            kept = {qid: head[qid][label] for qid in ids if qid not in found.moved and label in head.get(qid, {})}
            gone = replacement({qid: bar[qid][label] for qid in ids if label in bar.get(qid, {})}, kept,
                               set(ids) - found.moved, added=())  # the moved ones leave, none joins
            if gone is not None:
                rule.setdefault(label, gone)
        if hits:
            lost += [(qid, exam) for qid in ids if qid in on[""]
                     and _hit(old_rankings.get(qid, ()), questions[qid], old.k)
                     and not _hit(rankings.get(qid, ()), questions[qid], old.k)]
    mapped = cut.mapped(old_rankings, old.k) if cut is not None else frozenset()
    replaced = _replaced(name, before, after, means, sat[0][1], base, on, (scorer, head_scorer),
                         rankings, mapped, cut.asked - mapped if cut is not None else frozenset())
    first: dict[str, str] = {}
    for qid, exam in lost:
        first.setdefault(qid, exam)
    units = {}
    if found.units and today is not None:
        units = {label: unit_drops(label, name, old_rankings, base, today, rankings, found.units, head_scorer,
                                   found.asked) for label in means}
    return Rescored({label: tuple(values) for label, values in means.items()}, replaced,
                    tuple(sorted(first.items())), tuple(unscored), missing, tuple(sorted(below)), rule, units,
                    {segment: {label: tuple(values) for label, values in found.items()}
                     for segment, found in parts.items()})


def _segment_means(parts: dict[str, dict[str, list[Means]]], exam: str, segments: Mapping[str, frozenset[str]],
                   sides: tuple[Mapping[str, Mapping[str, float]], Mapping[str, Mapping[str, float]]],
                   ids: Sequence[str], labels: Sequence[str]) -> None:
    """Adds each segment value's means under `exam` to `parts`: both sides' values (`sides`) over its questions
    among those compared (`ids`)."""
    bar, head = sides
    for segment, members in segments.items():
        for label in labels:
            pairs = paired(label, bar, head, [qid for qid in ids if qid in members])
            if pairs.n:
                parts.setdefault(segment, {}).setdefault(label, []).append(
                    Means(exam, mean(pairs.before), mean(pairs.after), pairs.n))


def _hit(ranking: Sequence[str], question: Question, k: int) -> bool:
    return any(question.relevance.get(chunk_id, 0) >= 1 for chunk_id in ranking[:k])


def _replaced(name: str, before: Recorded, after: Recorded, labels: Collection[str], exam: Exam,
              base: Exam, on: Mapping[str, Collection[str]], scorers: tuple[Scorer, Scorer],
              rankings: Mapping[str, Sequence[str]], asked: Collection[str], stale: Collection[str] = (),
              ) -> dict[str, Replacement]:
    """Metric label -> what lowers its bar among the questions that leave: the base's approved values of the
    compared questions (`on` the label) under `exam` (today's, else the base's), of those that leave under the
    base's exam, against the head's approved values under `exam`; `scorers` score the base's rankings and the
    head's. Across a chunker change a question `asked` alike with the same gold spans stays, compared or not;
    one whose approved place an edit lost (`stale`) leaves at the value approved on the text as it was."""
    scorer, head_scorer = scorers
    kept_ids = [qid for qid in sorted(set().union(*on.values())) if qid in before.questions and qid in exam]
    kept = recorded_values(as_recorded(exam.score(scorer, name, before.approved_rankings(), kept_ids), before.bar))
    held = sorted({*after.questions, *kept_ids, *rankings})
    head = recorded_values(as_recorded(exam.score(head_scorer, name, rankings, held), _head_bar(after, kept)))
    found = {}
    for label in labels:
        comparable = on[label]
        leaves = set(before.questions) - set(comparable) - set(asked)
        left = {**leaving(before, base, label, leaves, scorer, name),
                **{qid: value for qid, value in before.bar_values(label).items() if qid in stale}}
        bar = {qid: row[label] for qid, row in kept.items() if label in row and qid in comparable}
        lowered = replacement({**bar, **left}, {qid: row[label] for qid, row in head.items() if label in row
                                                and (qid in comparable or qid not in asked)}, comparable)
        if lowered is not None:
            found[label] = lowered
    return found


def scored_view(side: Baseline, found: Exams, places: Mapping[str, Span] | None = None) -> Baseline:
    """`side` with every entry's values scored here from its recorded rankings under today's exam (the base's
    where there is none): what the review view shows of a file, never the values it stores. A label that
    cannot be scored here keeps its stored values; a question the exam does not ask is left out. `places`:
    the side's own (across a chunker change), else today's."""
    places = found.places if places is None else places
    entries = {}
    for name, entry in side.retrievers.items():
        exam = _share(name, found.today if found.today is not None else found.base, found.chunkings)
        if exam is None:
            return side
        specs, unscored = _specs(entry.metrics, side.k, places)
        result = exam.score(Scorer(tuple(specs), places), name,
                            {qid: q.ranking for qid, q in entry.questions.items()}, sorted(entry.questions))
        questions = {q.id: RecordedQuestion(q.ranking, {**{label: value for label, value in entry.questions[
            q.id].metrics.items() if label in unscored}, **q.values}) for q in result.questions}
        metrics = {**{label: entry.metrics[label] for label in unscored}, **result.metrics}
        entries[name] = replace(entry, metrics=metrics, questions=questions, bar={}, approved={})
    return replace(side, retrievers=entries)
