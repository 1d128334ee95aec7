"""The run record's types: what one gate run found, as the `--rag-json` results and (a part of it) the
baseline hold it. Frozen msgspec Structs, enums where a value is one of a few words, no `Any`: the
codec (`codec.py`) validates a file against them in one step, and `ragretrieval schema` prints their
JSON Schema. A field that a file holds only sometimes is `UNSET` when absent, so writing a record
gives back the same keys (`tags: {}` is written, an absent `bar` is not)."""
from __future__ import annotations

import enum
from typing import Annotated

from msgspec import UNSET, Meta, Struct, UnsetType

FORMAT_VERSION = 5
"""5: the exam and the bar's places, designed once for what the kept exam must carry: the fingerprint keeps
each question's cluster and side where the eval set names them (`fingerprint.questions.clusters`,
`.sides`, `record/exam.py`) and, in documents mode, the places of every chunk a recorded or approved
ranking holds (`fingerprint.chunks.places`: chunk id -> [doc, start, end, the document's short digest]).
A format-4 (or later) file without its kept labels is damaged; a format-4 file reads as format 5 without
the places and memberships it could not know. 4: the bar is the approved rankings: each entry may hold
`approved`, the rankings the team last approved where they differ from the recorded ones, and the
fingerprint keeps each question's labels
(`fingerprint.questions.labels`, `.spans`), the base's exam; a value `bar` is only one kept from a
format-3 file. 3: each entry may hold a `bar`, the per-question values the team last approved where they differ
from the recorded ones. 2: the fingerprint splits the yardstick from the system under test and
itemizes the corpus and the questions (`fingerprint`). Files of formats 1 and 2 are still read, their
bar equal to their recorded values (format 1's fingerprint through `upgrade.fingerprint_1`)."""
READABLE = (1, 2, 3, 4, FORMAT_VERSION)
BUDGETS = 4
"""The first format whose metric keys may be budgets of characters (`char_recall@2000c`): an older file
holding one is damaged."""

Count = Annotated[int, Meta(ge=0, lt=2**31)]
"""A number of questions, items or wins: what a run can count."""
ChunkId = Annotated[str, Meta(min_length=1)]
Values = dict[str, float]
"""Metric label (`ndcg@5`) -> value; the codec checks each label and each value's range."""
JSONValue = Annotated[object, Meta(extra_json_schema={"description": "any JSON value"})]
JSONObject = dict[str, JSONValue]
"""A JSON object whose shape belongs to someone else: a retriever's fingerprint is what its type says
(`validate.check_fingerprint` checks the sections readers rely on)."""


class Adjustment(enum.StrEnum):
    """How the p-values of the gated items were adjusted together."""

    MAXT = "maxt"
    HOLM = "holm"
    NONE = "none"


class Method(enum.StrEnum):
    """The paired two-sided test behind a p-value."""

    RANDOMIZATION = "randomization"
    BOOTSTRAP = "bootstrap"


class Language(enum.StrEnum):
    """The reports' language: Chinese then English, or English alone."""

    BOTH = "both"
    EN = "en"


class Status(enum.StrEnum):
    """What an item of the gate reports."""

    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"


class Finding(enum.StrEnum):
    """What a metric item's evidence says (docs/verdicts.md, "Three outcomes"): a drop the gate's rule
    fails; a change shown not to hurt by more than the margin; a pass the data cannot tell from a drop of
    the margin; today's rankings the approved ones."""

    REGRESSION = "regression"
    NON_INFERIOR = "non-inferior"
    INCONCLUSIVE = "inconclusive"
    UNCHANGED = "unchanged"


class Verdict(Struct, frozen=True):
    """One item's verdict: its status and the lines pytest shows for it (a skip's reason first). The
    pytest-xdist controller, which judges, hands them to its workers, which only report them."""

    status: Status
    lines: tuple[str, ...]
    properties: tuple[tuple[str, str], ...] = ()
    """What `--junitxml` records for the item (`rag_outcome`, `rag_exam`, `rag_delta`, `rag_p`)."""


class Comparison(Struct, frozen=True):
    """One retriever x metric against the baseline, over the comparable questions both runs scored.

    `baseline` and `value` are the means over that common set (the recorded means when it is
    each side's whole set); `value_all` is today's mean over all its questions when that differs.
    In significance mode `p_value` is the p that decides (adjusted by `adjustment` over `family`
    items when `family` > 0) and `p_unadjusted` the test's own; `mde` is the smallest drop a paired
    two-sided 5% test detects with 80% power over these questions, from the baseline's per-question
    spread. `whole`: both runs scored exactly these questions (nothing added, removed or edited).
    """

    baseline: float | None
    value: float
    delta: float | None
    p_value: float | None = None
    ci95: tuple[float, float] | None = None
    p_unadjusted: float | None = None
    family: Count = 0
    questions: Count = 0
    whole: bool = True
    value_all: float | None = None
    mde: float | None = None
    adjustment: Adjustment | None = None
    """MAXT or HOLM for a member of the family, else None."""
    last_update: float | None = None
    """Where the approved rankings differ from those of the last update: the last update's mean over the
    same questions under the same exam (a drop it already held is older than this change)."""
    lower: float | None = None
    """The one-sided (1 - alpha) lower bound of the mean difference: the bootstrap's alpha-quantile."""
    margin: float | None = None
    """The drop the item is shown not to exceed when `lower` is at or above -margin (`margin`, else the tolerance)."""
    needed: Count | None = None
    """The questions that would show the item non-inferior at `margin` with 80% power at the observed
    mean (a rise counted as 0) and spread of its per-question differences (`scoring/margin.py`)."""
    clusters: Count | UnsetType = UNSET
    """Where some cluster holds two of its questions: the clusters it was judged over (whole clusters
    flipped and drawn); absent where each question is its own."""
    needed_clusters: Count | None | UnsetType = UNSET
    """Beside `clusters`: the clusters that would show it non-inferior at `margin` with 80% power at the
    observed between-cluster spread (`scoring/margin.py`, `clusters_needed`)."""


class PairComparison(Struct, frozen=True):
    """Retriever `a` against retriever `b` on one metric, over the questions both scored (`a - b`)."""

    a: str
    b: str
    metric: str
    delta: float
    wins: Count
    ties: Count
    losses: Count
    p_value: float | None = None
    ci95: tuple[float, float] | None = None

    @property
    def questions(self) -> int:
        return self.wins + self.ties + self.losses

    def significant(self, alpha: float) -> bool:
        return self.p_value is not None and self.p_value < alpha


class NoAnswer(Struct, frozen=True, forbid_unknown_fields=True):
    """The no-answer counts: questions without gold, those answered with nothing, and answerable
    questions answered with nothing (files of 0.1.0 lack `answerable_empty`)."""

    questions: Count | UnsetType = UNSET
    empty: Count | UnsetType = UNSET
    answerable_empty: Count | UnsetType = UNSET


class Question(Struct, frozen=True):
    """One question's ranking (best first, as deep as k and the cutoffs need) and its values."""

    ranking: tuple[ChunkId, ...] = ()
    metrics: Values = {}


class Latency(Struct, frozen=True):
    """Per-question latency in ms, nearest rank."""

    p50: float
    p95: float


class Counterpart(Struct, frozen=True):
    """What the baseline recorded for a retriever, as far as the reports compare it with this run: its
    per-tag means when both scored the same questions, its rankings and values on the comparable ones."""

    tags: dict[str, Values] = {}
    questions: dict[str, Question] = {}


class Retriever(Struct, frozen=True):
    """One retriever's entry. The baseline holds the reproducible part (through `bar`); `--rag-json`
    adds latency, diagnostics, the comparison with the baseline, what changed for it, the answerable
    questions it answered with nothing, its run's notes and its baseline counterpart (`recorded`)."""

    metrics: Values
    tags: dict[str, Values] = {}
    no_answer: NoAnswer | UnsetType = UNSET
    questions: dict[str, Question] = {}
    approved: dict[str, tuple[ChunkId, ...]] | UnsetType = UNSET
    """The bar: the rankings the team last approved, where they differ from the recorded ones (question id
    -> ranking). Every run scores them under today's exam and the base's; no stored value is read as one."""
    bar: dict[str, Values] | UnsetType = UNSET
    """A value bar kept from a format-3 file (metric label -> question id -> value) until an update raises
    it by more than the tolerance under both exams; format 4 writes no other."""
    latency_ms: Latency | UnsetType = UNSET
    loads_ms: Values | UnsetType = UNSET
    """One-time loads (a tokenizer's dictionary, a model) done before the first question, by what was loaded,
    in ms: reported apart, never in `latency_ms`; absent when nothing was loaded (a warm run)."""
    diagnostics: Values | UnsetType = UNSET
    comparison: dict[str, Comparison] | UnsetType = UNSET
    comparison_base: dict[str, Comparison] | UnsetType = UNSET
    """Where the labels changed since the baseline: the comparison under the base's exam (the labels the
    baseline was recorded under); `comparison` is under today's."""
    segments: dict[str, dict[str, Comparison]] | UnsetType = UNSET
    """With `segments` configured: each segment value's comparison (`KEY:VALUE` -> metric label -> comparison),
    its p adjusted in the value's own family (`p_value` null where fewer than `min_questions` questions make it
    shown, not judged); under today's exam."""
    segments_base: dict[str, dict[str, Comparison]] | UnsetType = UNSET
    """`segments` under the base's exam, where the labels changed since the baseline."""
    changes: tuple[str, ...] | UnsetType = UNSET
    wrongly_empty: tuple[str, ...] | UnsetType = UNSET
    """Answerable questions it answered with nothing, by id (as many as the run lists)."""
    notes: tuple[str, ...] | UnsetType = UNSET
    recorded: Counterpart | UnsetType = UNSET


class Failure(Struct, frozen=True):
    """A failed item of the gate: its node id, what it checked, its one summary line and details."""

    item: str
    retriever: str
    metric: str
    summary: str
    details: tuple[str, ...] = ()


class ItemOutcome(Struct, frozen=True):
    """A judged metric item: its node id, what the evidence says, under which exam (the one that decided:
    `today` or `base`), its delta and p there (docs/verdicts.md, "Three outcomes")."""

    item: str
    retriever: str
    metric: str
    outcome: Finding
    exam: str
    delta: float | None = None
    p_value: float | None = None
    passed: bool = True
    """Whether the item passed: an inconclusive one fails only under `inconclusive = "fail"`."""
    needed: Count | None = None
    """The questions that would show it non-inferior at its margin with 80% power (`Comparison.needed`)."""
    needed_clusters: Count | None | UnsetType = UNSET
    """Where clusters are defined, the clusters that would (`Comparison.needed_clusters`); else absent."""


class SinceBaseline(Struct, frozen=True):
    """What changed since the baseline: the yardstick (then nothing is comparable), the system under
    test, the questions, and the header lines that say so."""

    comparable: bool = True
    yardstick: tuple[str, ...] = ()
    changes: tuple[str, ...] = ()
    questions: tuple[str, ...] = ()
    lines: tuple[str, ...] = ()


class LabelToReview(Struct, frozen=True):
    """A gold chunk whose text was edited since the baseline, and the questions it is gold of."""

    chunk: str
    questions: tuple[str, ...]


class Significance(Struct, frozen=True):
    """Significance mode: the test, alpha, and how many items' p-values were adjusted together, how."""

    method: Method
    alpha: float
    family: Count = 0
    adjustment: Adjustment = Adjustment.HOLM
    """Results written before max-T do not say, and meant Holm."""


class Settings(Struct, frozen=True):
    """What the reports say about how the run was judged: the retrievers in the configured order, the
    metrics shown and those gated, alpha, the smallest eval set trusted, the test comparing
    configurations, and the baseline's path."""

    retrievers: tuple[str, ...]
    shown: tuple[str, ...]
    gated: tuple[str, ...]
    alpha: float
    min_questions: Count
    pair_method: Method
    baseline: str
    language: Language = Language.BOTH
    """`report_language`; results written before it held none are reported in both languages."""


class TuneSplit(Struct, frozen=True):
    """What the run measured on the `tune` questions, apart from the gate's."""

    questions: tuple[str, ...]
    values: dict[str, dict[str, float]]
    """Retriever -> metric label -> its mean over the tune questions."""


class QuestionsReused(Struct, frozen=True):
    """A retriever run for part of the eval set: its other inputs unchanged, the rankings of the questions
    whose text is unchanged came from its cached run (`reused`), the rest were searched (`searched`)."""

    reused: int
    searched: int


class Record(Struct, frozen=True):
    """A results or baseline file. The baseline is the first six fields (its `retrievers` without the
    run's additions); `--rag-json` results add the rest: the gate's failures (so `ragretrieval comment`
    says what failed without judging again), comparisons between configurations, what changed since
    the baseline, the labels to review, in significance mode how p-values were adjusted, and what the
    reports say beside the results (retrievers that failed, notes, settings, whether the baseline
    compares). The gate produces it; every report is a view of it (`report/view.py`)."""

    format_version: int
    k: Annotated[int, Meta(ge=1)]
    fingerprint: JSONObject
    retrievers: dict[str, Retriever]
    plugin_version: str | UnsetType = UNSET
    unavailable: dict[str, str] | UnsetType = UNSET
    """Retrievers that could not run where the file was written, and why."""
    failures: tuple[Failure, ...] | UnsetType = UNSET
    comparisons: tuple[PairComparison, ...] | UnsetType = UNSET
    since_baseline: SinceBaseline | UnsetType = UNSET
    labels_to_review: tuple[LabelToReview, ...] | UnsetType = UNSET
    significance: Significance | UnsetType = UNSET
    phases: dict[str, float] | UnsetType = UNSET
    """Seconds per phase of the run that wrote the results."""
    reused: tuple[str, ...] | UnsetType = UNSET
    """Retrievers whose rankings (and latency) came from their cached run, every input unchanged."""
    reused_questions: dict[str, QuestionsReused] | UnsetType = UNSET
    """Retrievers run for the questions added or edited alone, the others' rankings from their cached run."""
    errors: dict[str, str] | UnsetType = UNSET
    """Retrievers that failed in this run, and the error."""
    comparable: bool | UnsetType = UNSET
    """Whether the run was compared with a baseline of its yardstick."""
    notes: tuple[str, ...] | UnsetType = UNSET
    """The judge's warnings every report repeats (a small eval set, drops a test cannot see)."""
    pair_notes: tuple[str, ...] | UnsetType = UNSET
    """What kept configured pairs from being compared."""
    settings: Settings | UnsetType = UNSET
    outcomes: tuple[ItemOutcome, ...] | UnsetType = UNSET
    """Each judged metric item's outcome, exam, delta and p, in the items' order."""
    tune: TuneSplit | UnsetType = UNSET
    """The `tune` questions (`[split]`, `side`): scored apart, never judged, never in the baseline."""
