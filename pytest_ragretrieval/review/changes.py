"""What a change of baseline (and of the gate's settings) does to the bar a pull request is judged by.

A pull request can lower its own bar: `--rag-update-baseline --rag-allow-regression` and a
commit make any regression pass, and a raised tolerance does the same without touching the
baseline. `classify` compares the base branch's baseline and settings with the pull request's
and sorts every difference into what lowers the bar (lowered bars, edited or removed questions
replaced by lower values, removed entries, loosened settings, lost hits under per-question
gating) and what does not. It compares bars, never a value the head's file stores: both sides' approved rankings
scored here under today's exam and the base's (`rescore`; docs/approval.md, "Trust model"); a base file
that keeps no labels (format 3) has its stored bars compared at the stored precision (`bar.bar_means`).
Each segment value either config judges (`segments`) is compared as the whole set, over its questions, and
lowers the bar as it does; per-tag values (stored ones) are listed but never lower the bar: the gate does not
judge them. Pure.
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from ..bar.rule import Replacement, bar_means, replaced_bars
from ..bar.units import RETRIEVER, UNIT_ONLY
from ..baseline.exams import BASE, TODAY, approved_digest, labels_digest
from ..baseline.format import Baseline, Recorded
from ..baseline.since import Since, held, since
from ..config.settings import REPORT_LANGUAGES
from ..core.errors import BaselineError
from ..core.values import EPSILON
from ..evalset.segments import members
from ..files.jsonshape import Node, ShapeProblem, decode
from ..files.jsontext import JSONProblem
from ..files.paths import Unreadable, display, read_input
from ..scoring.metrics import METRICS, metric_order
from .moves import SettingChange as SettingChange  # where every reader imports it from
from .moves import moved_questions, moves
from .notes import exam_notes, rescore_notes
from .rescore import Exams, Rescored, Today, exams, rescore
from .settings import GateSettings, setting_moves
from .today import SIDE, dropped, today_side, unchecked

KIND = "ragretrieval-baseline-changes"
VERSION = 1
DIGESTS = ("approved_digest", "labels_digest")
"""The head's digests an approval binds (`review/approved.py`); files written before approvals bound them lack them."""
DIGEST = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class ValueChange:
    """One bar that moved (a recorded value when `tag` is set): means over the questions both sides share,
    or over questions whose bar values were replaced, `scope` saying which (`the 12 edited questions ...`);
    `exam` the exam both sides' approved rankings were scored under (`today`, `base`, `both`: lowered under
    each, today's means given), empty where stored values were compared; across a chunk-id re-chunk, `unit`
    says whether the lowering only comes from the changed unit (`unit-only`) or not (`retriever`), and `why`
    which questions dropped (`bar.units`); `segment` the segment value (`lang:de`) whose questions' means moved,
    empty for the whole set (docs/verdicts.md, "Segments"); `side` is `today` where the new side is today's
    rankings (the gate's own run, `review/today.py`), not the head's approved ones."""

    retriever: str
    metric: str
    old: float
    new: float
    tag: str = ""
    scope: str = ""
    exam: str = ""
    unit: str = ""
    why: str = ""
    segment: str = ""
    side: str = ""

    @property
    def delta(self) -> float:
        return self.new - self.old


@dataclass(frozen=True)
class Entry:
    """A retriever (`metric` empty) or one of its metrics (`retriever` empty: every retriever's)."""

    retriever: str
    metric: str
    reason: str


@dataclass(frozen=True)
class LostHit:
    """Under `fail_on = ["question"]`: a question the base's approved ranking hits within k, the head's not
    (`exam`: under which; empty where stored values were compared)."""

    retriever: str
    question: str
    exam: str = ""


@dataclass(frozen=True)
class Changes:
    old_path: str  # "" when the base branch has no baseline yet
    new_path: str
    fingerprint: tuple[str, ...] = ()
    """The changes of the system under test the values were compared across (`hybrid.weights [1.0, 0.5] -> ...`)."""
    lowered: tuple[ValueChange, ...] = ()
    raised: tuple[ValueChange, ...] = ()
    removed: tuple[Entry, ...] = ()
    added: tuple[Entry, ...] = ()
    loosened: tuple[SettingChange, ...] = ()
    tightened: tuple[SettingChange, ...] = ()
    lost_hits: tuple[LostHit, ...] = ()
    tags_lowered: tuple[ValueChange, ...] = ()
    tags_raised: tuple[ValueChange, ...] = ()
    notes: tuple[str, ...] = ()
    yardstick: tuple[str, ...] = ()
    """Changes of the yardstick (k, metric definitions, grading rules): the values are compared as recorded."""
    questions: tuple[str, ...] = ()
    """How the questions differ; values are compared over the questions both sides share."""
    unreadable: tuple[str, ...] = ()
    """Why the base's config or baseline, which the base holds, cannot be read (`diff --against`):
    its bar cannot be compared, so the check fails closed and the label must approve, as for a lowering."""
    approved_digest: str = ""
    """The head's approved rankings, every retriever's, as one digest (`baseline.exams.approved_digest`):
    what an approval given now approves; "" in files written before approvals bound them."""
    labels_digest: str = ""
    """The exam the head's baseline was recorded under, as one digest (`baseline.exams.labels_digest`)."""
    rescored: tuple[str, ...] = ()
    """The exams both sides' approved rankings were scored under (`today`, `base`); empty: stored values compared."""
    language: str = "both"
    """The head's `report_language` (`diff` knew its config): what the job summary and a comment rendered
    without a results file are written in; "both" (and left out of the file) when no config was read."""

    @property
    def lowers_the_bar(self) -> bool:
        """What `--fail-on-lower` exits 1 for, and what the pull-request label must approve."""
        return bool(self.lowered or self.removed or self.loosened or self.lost_hits or self.unreadable)

    @property
    def unit_counts(self) -> str:
        """`4 unit-only, 16 real drops` across a chunk-id re-chunk (`ValueChange.unit`); "" elsewhere."""
        unit = sum(change.unit == UNIT_ONLY for change in self.lowered)
        real = sum(change.unit == RETRIEVER for change in self.lowered)
        if not unit and not real:
            return ""
        return f"{unit} unit-only, {real} real drop{'' if real == 1 else 's'}"

    @property
    def unchanged(self) -> bool:
        return not (self.lowers_the_bar or self.raised or self.added or self.tightened or self.fingerprint
                    or self.tags_lowered or self.tags_raised or self.yardstick or self.questions)


def _values(
    old: Mapping[str, float], new: Mapping[str, float], retriever: str, tag: str = ""
) -> tuple[list[ValueChange], list[ValueChange]]:
    """(lowered, raised) among the labels both sides hold; a move within EPSILON is no move."""
    lowered, raised = [], []
    for label in sorted(set(old) & set(new), key=metric_order):
        change = ValueChange(retriever, label, old[label], new[label], tag)
        if change.delta < -EPSILON:
            lowered.append(change)
        elif change.delta > EPSILON:
            raised.append(change)
    return lowered, raised


def _hit(values: Mapping[str, float], k: int) -> bool | None:
    """Whether a question's recorded values say a relevant chunk was within k; None when none says.
    Any metric flagged `hit` in the registry says it, each the same way."""
    for name in (name for name, metric in METRICS.items() if metric.hit):
        if f"{name}@{k}" in values:
            return values[f"{name}@{k}"] > EPSILON
    return None


def _lost_hits(name: str, old: Recorded, new: Recorded, old_k: int, new_k: int, shared: set[str]) -> list[LostHit]:
    lost = []
    for qid in sorted(set(old.questions) & set(new.questions) & shared):
        if _hit(old.questions[qid].metrics, old_k) and _hit(new.questions[qid].metrics, new_k) is False:
            lost.append(LostHit(name, qid))
    return lost


def _stored(name: str, old: Baseline, new: Baseline, found: Since, labels: Sequence[str], hits: bool
            ) -> tuple[list[ValueChange], list[ValueChange], list[LostHit]]:
    """(lowered, raised, lost hits) of `labels` from the values both files store, at the stored precision:
    for a base that keeps no labels, whose approved rankings have no exam to be scored under."""
    before, after = old.retrievers[name], new.retrievers[name]
    shared = set(before.questions) & set(after.questions)
    if found.comparable:
        shared &= found.questions.comparable
    # after another yardstick the bars are compared whole, and lowered ones still need the label
    old_bar, new_bar = bar_means(before, after, shared if found.comparable else None)
    down, up = _values({label: value for label, value in old_bar.items() if label in labels},
                       {label: value for label, value in new_bar.items() if label in labels}, name)
    down += [ValueChange(name, label, r.before, r.after, scope=r.text()) for label, r in replaced_bars(
        before, after, found.questions.comparable)
        if found.comparable and label in labels and label not in {c.metric for c in down}]
    lost = _lost_hits(name, before, after, old.k, new.k, shared) if hits else []
    return down, up, lost


def _scored(name: str, result: Rescored, min_questions: int = 0
            ) -> tuple[list[ValueChange], list[ValueChange], list[LostHit]]:
    """(lowered, raised, lost hits) from both sides' approved rankings scored here: a metric is lowered when
    under either exam the head's mean is below the base's by more than EPSILON, or when the questions that
    leave are replaced by lower values; one change per metric, its exam named. A segment value's metric is
    lowered as the whole set's, under an exam where it has at least `min_questions` questions compared (the
    gate judges no fewer)."""
    lowered, raised = [], []
    for label, means in sorted(result.means.items(), key=lambda item: metric_order(item[0])):
        low = [m for m in means if m.new < m.old - EPSILON]
        if low:
            exam = low[0].exam if len(low) == 1 else "both"
            lowered.append(ValueChange(name, label, low[0].old, low[0].new, exam=exam))
        elif label in result.replaced:
            r = result.replaced[label]
            lowered.append(ValueChange(name, label, r.before, r.after, scope=r.text()))
        elif means and means[0].new > means[0].old + EPSILON:
            raised.append(ValueChange(name, label, means[0].old, means[0].new, exam=means[0].exam))
    drops = {label: found for label, found in result.units.items() if found.kind}  # a chunk-id re-chunk's kinds
    lowered = [replace(c, unit=drops[c.metric].kind, why=drops[c.metric].text()) if c.metric in drops else c
               for c in lowered]
    for segment, found in result.segments.items():
        for label, means in sorted(found.items(), key=lambda item: metric_order(item[0])):
            low = [m for m in means if m.new < m.old - EPSILON and m.questions >= min_questions]
            if low:
                lowered.append(ValueChange(name, label, low[0].old, low[0].new, exam=low[0].exam if len(low) == 1
                                           else "both", segment=segment))
    return lowered, raised, [LostHit(name, qid, exam) for qid, exam in result.lost]


def _today(name: str, files: tuple[Baseline, Baseline], labels: Sequence[str], scored: Exams, today: Today | None,
           settings: GateSettings | None, head: Sequence[ValueChange]) -> list[ValueChange]:
    """Today's rankings of `name` (`diff --today`, the gate's own run) lowered against the base's bar beyond the
    base's tolerance (`review/today.py`), where the gate's own results fail it (the check is never red where the
    gate was green); none without them. A metric the head's approved rankings already lower is named once, by the
    head's side, unless today's mean is lower still beyond the tolerance."""
    if today is None or today.rankings is None or name not in today.rankings:
        return []
    ran = rescore(name, *files, labels, today_side(scored, name, today.rankings[name]), False)
    tolerances = settings.tolerances if settings is not None else {}
    below = {change.metric: change.new for change in head if not change.scope}
    return [ValueChange(name, label, before, after, exam=exam, side=SIDE)
            for label, before, after, exam in dropped(ran, tolerances)
            if after < below.get(label, before) - tolerances.get(label, 0.0) - EPSILON
            and (today.failed is None or (name, label) in today.failed)]


def _baseline_entries(old: Baseline, new: Baseline) -> tuple[list[Entry], list[Entry]]:
    """(removed, added) retrievers and metrics; one recorded as unavailable is removed: its items would be skipped."""
    removed, added = [], []
    for name in sorted(set(old.retrievers) - set(new.retrievers)):
        reason = f"recorded as unavailable: {new.unavailable[name]}" if name in new.unavailable else ""
        removed.append(Entry(name, "", reason or "no longer in the baseline"))
    for name in sorted(set(new.retrievers) - set(old.retrievers)):
        added.append(Entry(name, "", "new in the baseline"))
    for name in sorted(set(old.retrievers) & set(new.retrievers)):
        before, after = old.retrievers[name].metrics, new.retrievers[name].metrics
        removed += [Entry(name, m, "no longer in the baseline")
                    for m in sorted(set(before) - set(after), key=metric_order)]
        added += [Entry(name, m, "new in the baseline") for m in sorted(set(after) - set(before), key=metric_order)]
    return removed, added


def _merge(entries: Sequence[Entry]) -> tuple[Entry, ...]:
    """One entry per (retriever, metric); the config's and the baseline's reasons joined."""
    merged: dict[tuple[str, str], Entry] = {}
    for entry in entries:
        key = (entry.retriever, entry.metric)
        if key in merged and entry.reason not in merged[key].reason:
            entry = Entry(entry.retriever, entry.metric, f"{merged[key].reason}; {entry.reason}")
        merged[key] = entry
    return tuple(sorted(merged.values(), key=lambda e: (e.retriever, metric_order(e.metric))))


def _configured(old: GateSettings | None, new: GateSettings | None
                ) -> tuple[list[SettingChange], list[SettingChange], list[Entry]]:
    """(loosened, tightened, entries no longer gated) between two configurations; nothing where one is unknown."""
    if old is None or new is None:
        return [], [], []
    loosened, tightened = setting_moves(old, new)
    gone = [Entry(name, "", "no longer configured") for name in old.retrievers if name not in new.retrievers]
    gone += [Entry("", label, "no longer in the configured metrics") for label in old.metrics
             if label not in new.metrics]
    return loosened, tightened, gone


def _unlabelled(scored: Exams, today: Today | None) -> Exams:
    """A base that keeps no labels (format 3): its exam is today's on the questions whose graded gold its digests
    say is unchanged; the others leave the comparison with the values the base file stores."""
    if scored.base is None and today is not None and scored.today is not None:
        return replace(scored, base=scored.today.only([qid for qid in scored.today if qid in scored.comparable]))
    return scored


def _segmented(scored: Exams, old: GateSettings | None, new: GateSettings | None) -> Exams:
    """`scored` with the segment values either side's config judges, their questions as the base's exam or today's
    puts them there (as the gate reads membership), and the smaller `min_questions`."""
    keys = tuple(dict.fromkeys((*(old.segments if old else ()), *(new.segments if new else ()))))
    if not keys or scored.base is None:
        return scored
    exams = [exam.questions.values() for exam in (scored.base, scored.today) if exam is not None]
    least = min(settings.min_questions for settings in (old, new) if settings is not None)
    return replace(scored, segments={segment.name: ids for segment, ids in members(keys, *exams).items()},
                   min_questions=least)


def classify(
    old: Baseline | None,
    new: Baseline,
    old_settings: GateSettings | None = None,
    new_settings: GateSettings | None = None,
    notes: Sequence[str] = (),
    today: Today | None = None,
) -> Changes:
    """Sort every difference between the base's baseline and settings and the pull request's.

    `old` None means the base branch has no baseline yet: everything is new. Settings are
    compared only when both sides are given; per-question hits only when the base gates them.
    `today` is the work tree's eval set (`diff --against`): today's exam; without it, the new file's labels.
    """
    new_path = display(new.path)
    rankings, exam = approved_digest(new.retrievers), labels_digest(new.fingerprint)
    if old is None:
        added = [Entry(name, "", "new in the baseline (the base branch has none)") for name in sorted(new.retrievers)]
        return Changes("", new_path, added=tuple(added), notes=tuple(notes), approved_digest=rankings,
                       labels_digest=exam)
    lowered: list[ValueChange] = []
    raised: list[ValueChange] = []
    tags_lowered: list[ValueChange] = []
    tags_raised: list[ValueChange] = []
    lost: list[LostHit] = []
    question_gated = old_settings is not None and "question" in old_settings.fail_on
    names = sorted(set(old.retrievers) & set(new.retrievers))
    found = since(old.fingerprint, new.fingerprint, set(names), held(old, new))
    moved = moved_questions(old, today, new_settings.split if new_settings is not None else None)
    scored = _segmented(_unlabelled(exams(old, new, today, found, moved), today), old_settings, new_settings)
    if scored.cut is not None:  # a chunker change: the questions asked alike with the same gold spans are no edits
        found = replace(found, questions=scored.cut.questions(found.questions))
    said = list(notes)
    used: set[str] = set()
    below: set[str] = set()
    rule: list[Replacement] = []
    for name in names:
        before, after = old.retrievers[name], new.retrievers[name]
        labels = sorted(set(before.metrics) & set(after.metrics), key=metric_order)
        if scored.base is None:
            down, up, gone = _stored(name, old, new, found, labels, question_gated)
        else:
            result = rescore(name, old, new, labels, scored, question_gated)
            used |= {m.exam for means in result.means.values() for m in means}
            down, up, gone = _scored(name, result, scored.min_questions)
            below |= set(result.moved_below)
            rule += [result.moved_rule[label] for label in sorted(result.moved_rule, key=metric_order)]
            if result.unscored:
                more = _stored(name, old, new, found, result.unscored, False)
                down, up = down + more[0], up + more[1]
            said += rescore_notes(name, new, result)
            down += _today(name, (old, new), labels, scored, today, old_settings, down)
        lowered, raised, lost = lowered + down, raised + up, lost + gone
        if not found.questions.changed:
            for tag in sorted(set(before.tags) & set(after.tags)):
                down, up = _values(before.tags[tag], after.tags[tag], name, tag)
                tags_lowered, tags_raised = tags_lowered + down, tags_raised + up
    said += exam_notes(old, new, scored, names, used)
    said += unchecked(names, today.rankings) if today is not None and scored.base is not None else []
    removed, added = _baseline_entries(old, new)
    loosened, tightened, gone_entries = _configured(old_settings, new_settings)
    removed += gone_entries
    move = moves(moved, below, rule, scored.base is not None and today is not None, today is not None,
                 (old_settings.split, new_settings.split) if old_settings and new_settings else None)
    loosened += [move] if isinstance(move, SettingChange) else []
    said += [move] if isinstance(move, str) else []
    return Changes(
        old_path=display(old.path), new_path=new_path, fingerprint=tuple(found.system()),
        yardstick=tuple(str(change) for change in found.yardstick), questions=tuple(found.questions.lines()),
        lowered=tuple(lowered), raised=tuple(raised), removed=_merge(removed), added=_merge(added),
        loosened=tuple(loosened), tightened=tuple(tightened), lost_hits=tuple(lost),
        tags_lowered=tuple(tags_lowered), tags_raised=tuple(tags_raised), notes=tuple(said),
        approved_digest=rankings, labels_digest=exam, rescored=tuple(which for which in (TODAY, BASE) if which in used),
    )


# The file `ragretrieval diff --json` writes and `pr-check` and `comment` read.

_LISTS = {
    "lowered": ValueChange, "raised": ValueChange, "removed": Entry, "added": Entry,
    "loosened": SettingChange, "tightened": SettingChange, "lost_hits": LostHit,
    "tags_lowered": ValueChange, "tags_raised": ValueChange,
}


def changes_document(changes: Changes) -> dict[str, Any]:
    doc: dict[str, Any] = {"kind": KIND, "version": VERSION, "lowers_the_bar": changes.lowers_the_bar}
    doc.update(asdict(changes))
    for key in ("lowered", "raised", "tags_lowered", "tags_raised"):  # a re-chunk's, a segment's, a side's fields only
        doc[key] = [{name: value for name, value in item.items() if name not in ("unit", "why", "segment", "side")
                     or value}
                    for item in doc[key]]
    return {key: value for key, value in doc.items()
            if (key not in DIGESTS or value) and (key != "language" or value != "both")}


def dumps_changes(changes: Changes) -> str:
    return json.dumps(changes_document(changes), ensure_ascii=False, sort_keys=True, indent=2) + "\n"


def read_changes(path: Path) -> Changes:
    fix = "write it with `ragretrieval diff --json PATH`"
    try:
        text = read_input(path).decode("utf-8")
    except Unreadable as exc:
        raise BaselineError(f"{display(path)}: {'file not found' if exc.missing else exc}; {fix}") from None
    except UnicodeDecodeError:
        raise BaselineError(f"{display(path)}: not UTF-8 text; {fix}") from None
    return parse_changes(path, text)


def parse_changes(path: Path, text: str) -> Changes:
    """A file written by `ragretrieval diff --json`; anything else is one line naming the file and JSON path."""
    fix = "write it with `ragretrieval diff OLD NEW --json PATH`"
    try:
        doc = Node(decode(text))
    except JSONProblem as exc:
        raise BaselineError(f"{display(path)}: not valid JSON ({exc}); {fix}") from None
    if not isinstance(doc.value, dict) or doc.value.get("kind") != KIND or doc.value.get("version") != VERSION:
        raise BaselineError(f"{display(path)}: not a baseline-changes file of version {VERSION}; {fix}")
    try:
        later = ("yardstick", "questions", "unreadable", "rescored")  # files written before these lack them
        doc.exactly("kind", "version", "lowers_the_bar", "old_path", "new_path", "fingerprint", "notes", *_LISTS,
                    optional=(*later, *DIGESTS, "language"))
        texts: dict[str, Any] = {key: tuple(item.text() for item in doc[key].items())
                                 for key in ("fingerprint", "notes", *later) if key in doc.mapping()}
        rankings, exam = (read_digest(doc[key]) if key in doc.mapping() else "" for key in DIGESTS)
        changes = Changes(
            old_path=doc["old_path"].text(), new_path=doc["new_path"].text(), **texts, approved_digest=rankings,
            labels_digest=exam, language=_language(doc),
            **{key: tuple(_entry(item, kind) for item in doc[key].items()) for key, kind in _LISTS.items()},
        )
        if doc["lowers_the_bar"].boolean() != changes.lowers_the_bar:
            raise doc["lowers_the_bar"].problem("disagrees with the changes the file lists")
    except ShapeProblem as exc:
        raise BaselineError(f"{display(path)}: malformed baseline-changes file: {exc}; {fix}") from None
    return changes


def _language(doc: Node) -> str:
    if "language" not in doc.mapping():
        return "both"
    found = doc["language"].text()
    if found not in REPORT_LANGUAGES:
        raise doc["language"].problem(f"expected one of {', '.join(map(repr, REPORT_LANGUAGES))}")
    return found


def read_digest(node: Node) -> str:
    """One of the digests an approval binds: 64 hex digits, as `baseline.exams` writes them."""
    text = node.text()
    if not DIGEST.fullmatch(text):
        raise node.problem(f"must be a digest of 64 lowercase hex digits, got {text[:70]!r}")
    return text


_LATER = ("scope", "exam", "unit", "why", "segment", "side")
"""Fields of a listed change that files written before them lack."""


def _entry(node: Node, kind: type) -> Any:
    """One listed change: exactly its record's fields (`_LATER` ones only files written before them lack),
    numbers finite, metric keys as every reader reads them, texts printable."""
    names = [f.name for f in fields(kind)]
    node.exactly(*(name for name in names if name not in _LATER), optional=tuple(n for n in _LATER if n in names))
    return kind(**{f.name: node[f.name].number() if f.type == "float" else
                   node[f.name].metric_key() if f.name == "metric" else node[f.name].text()
                   for f in fields(kind) if f.name in node.mapping()})
