"""The judge across a chunker change (the Verdicts page, "A chunker change"): which change, read once, and the
questions each item is compared on (`bar/places.py` decides both from the fingerprints and places)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from ..bar.exam import Scorer
from ..bar.places import Edit, Rechunk
from ..bar.places import rechunk as cut_between
from ..baseline.exams import KeptExam
from ..baseline.fingerprint import PLACES, recut
from ..baseline.format import Baseline, Recorded
from ..baseline.since import Since
from ..config.settings import Config
from ..core.errors import BaselineError
from ..evalset.documents import Document, load_documents
from ..files.paths import display
from ..scoring.metrics import MetricSpec
from .report import chunker_changed

ACROSS = ("char_recall", "answer_hit")
"""The span metrics every chunker change is judged on: how much of the answer the top k hold, and whether any."""


class Judging(Protocol):
    """What of the judge (`judge.Judge`) these read."""

    config: Config
    baseline: Baseline | None
    kept: KeptExam | None
    fingerprint: Mapping[str, Any]
    scorer: Scorer
    _rechunk: tuple[Rechunk | None] | None
    edits: Mapping[str, Edit]

    def since(self) -> Since | None: ...

    def recorded(self, name: str) -> Recorded | None: ...


def rechunk(judge: Judging) -> Rechunk | None:
    """The chunker change since the baseline, computed once: the approved places read from the base revision's
    file in a pull request's CI (`kept`), else from the baseline's; None without one."""
    if judge._rechunk is None:
        found, source = judge.since(), judge.kept.fingerprint if judge.kept is not None else None
        assert found is not None and judge.baseline is not None
        judge._rechunk = (cut_between(found, source or judge.baseline.fingerprint, judge.fingerprint,
                                      judge.scorer.places, judge.edits),)
    return judge._rechunk[0]


def comparable_of(judge: Judging, name: str, label: str) -> frozenset[str]:
    """The questions `name`'s `label` is compared on: those both sides share (`Since`), but across a chunker
    change (`Rechunk.on`)."""
    found, cut, entry = judge.since(), rechunk(judge), judge.recorded(name)
    assert found is not None
    if cut is None:
        return found.questions.comparable
    spans = any(spec.label == label and spec.metric.spans for spec in judge.config.shown)
    return cut.on(spans, entry.approved_rankings() if entry is not None else {}, judge.config.k)


def leaving_across(judge: Judging, entry: Recorded, comparable: frozenset[str], label: str,
                   ) -> tuple[set[str], dict[str, float]]:
    """The questions that leave `entry`'s bar of `label` (those not compared, but across a chunker change those
    asked alike, which stay), and of them the ones whose approved place an edit lost, at the values approved
    on the text as it was (their places are not today's text): they leave as edited."""
    cut = rechunk(judge)
    mapped = cut.mapped(entry.approved_rankings(), judge.config.k) if cut is not None else frozenset()
    gone = set(entry.questions) - comparable - mapped
    lost = {qid: value for qid, value in entry.bar_values(label).items()
            if cut is not None and qid in gone and qid in cut.asked}
    return gone, lost


def rechunked(judge: Judging, found: Since) -> Since | None:
    """`found` as the header says it across a chunker change (`Rechunk.since`), None without one."""
    cut = rechunk(judge)
    if cut is None:
        return None
    approved = {spec.name: entry.approved_rankings() for spec in judge.config.retrievers
                if (entry := judge.recorded(spec.name)) is not None}
    return cut.since(found, approved, judge.config.k)


def across(config: Config) -> tuple[MetricSpec, ...]:
    """What a chunker change is always judged on beside the listed metrics: `char_recall@k` and `answer_hit@k`
    at each k a listed metric gates (budgets and abstention aside), those `metrics` does not list."""
    listed = {spec.label for spec in config.metrics}
    cutoffs = sorted({spec.k for spec in config.metrics if not spec.budget and not spec.on_no_answer})
    found = (MetricSpec.parse(f"{name}@{k}", config.k) for k in cutoffs for name in ACROSS)
    return tuple(spec for spec in found if spec.label not in listed)


def prepared(config: Config, baseline: Baseline | None) -> tuple[Config, Baseline | None]:
    """The config and baseline a session (or `ragretrieval merge`) judges with: across a chunker change, with
    `across`'s items and the baseline's places (`with_places`); as they are otherwise."""
    if baseline is None or config.documents is None or not chunker_changed(config, baseline):
        return config, baseline
    return replace(config, across=across(config)), with_places(baseline, load_documents(config.documents), config.root)


def with_places(baseline: Baseline, documents: Sequence[Document], root: Path) -> Baseline:
    """A baseline to judge a chunker change against: its places, or a format-4 file's taken by re-cutting its
    unchanged documents with the built-in chunker it records (`recut`); refused in one line where its chunker
    was a `python` one, whose code then is gone."""
    chunks = baseline.fingerprint.get("chunks", {})
    if not isinstance(chunks, Mapping) or PLACES in chunks:
        return baseline
    found = recut(baseline.fingerprint, documents, root)
    if found is not None:
        return replace(baseline, fingerprint=found)
    if chunks.get("chunker", {}).get("type") == "python":
        raise BaselineError(
            f"{display(baseline.path)} keeps no places of its chunks (format 4) and they were cut by a `python` "
            "chunker, whose old code is gone, so the chunker change cannot be judged against it; re-record it "
            "with `pytest --rag-update-baseline --rag-allow-regression` and merge with the approval label")
    return baseline
