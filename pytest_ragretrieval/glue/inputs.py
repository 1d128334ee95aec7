"""A config's inputs, loaded one way for every judge: the pytest run (`glue/session.py`), `ragretrieval merge`
(`cli/merge.py`) and the work tree's side of `ragretrieval diff --against` (`cli/sides.py`). The chunks (a
chunks file, documents cut by the chunker, or the team's table), the eval set read against them, and the
chunks' places; the same checks and so the same one-line errors wherever they are read."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..baseline.format import Baseline
from ..cache.store import Mode as CacheMode
from ..config.settings import Config
from ..core.errors import FixtureError
from ..evalset.corpus import budget_warnings, documents_corpus, recorded_digest
from ..evalset.jsonl import Unanchored, load_chunks, load_evalset
from ..evalset.records import Chunk, Question, Span
from ..files.paths import display
from ..labels.gold import recorded_digests, recorded_gold
from ..labels.relabel import anchoring_error, plan
from ..runner.resources import database_url
from ..scoring.evaluate import chunk_spans


@dataclass(frozen=True)
class Inputs:
    """What a config reads before anything runs."""

    chunks: tuple[Chunk, ...]
    questions: tuple[Question, ...]
    """Every question of the eval set, in its order (the `tune`/`gate` split comes after)."""
    places: Mapping[str, Span] | None = field(default=None, hash=False)
    """Each chunk's place in its document (documents mode; None: chunks that were not cut from documents)."""
    corpus: dict[str, Any] | None = field(default=None, hash=False)
    """The corpus's record as the team's database computed it (no chunks file)."""
    warnings: tuple[str, ...] = ()
    """About the inputs, known once loaded: a budget most chunks do not fit."""


def load_inputs(config: Config, baseline: Baseline | None, command: str, *, mode: CacheMode = "readwrite",
                team: bool = False, db_url: str | None = None, config_path: str | None = None) -> Inputs:
    """`config`'s chunks, eval set and places. `baseline` is the one the eval set is judged against: its
    documents' digest says whether the documents are unedited, its gold texts where a label's chunk went.
    With `team`, a config without a chunks file reads the team's table, on the server `db_url` (or the
    environment) names; else `command` is named as what reads a chunks file (`Config.chunks_file`).
    `config_path` is the `--rag-config` a re-anchoring proposal repeats."""
    if config.documents is not None and config.chunker is not None:
        chunks, questions = documents_corpus(
            config.documents, config.chunker, config.root, config.evalset, config.chunkings,
            recorded=recorded_digest(baseline.fingerprint if baseline else None), cache=config.cache_dir, mode=mode)
        read = {spec.chunking for spec in config.retrievers}
        named = {name: f"chunking {name!r}" if name else "the default chunking" for name in sorted(read)}
        warnings = budget_warnings((spec.budget for spec in config.shown if spec.budget), chunks, named)
        return Inputs(chunks, questions, chunk_spans(chunks), warnings=tuple(warnings))
    if config.chunks is None and team:
        from ..database.team import need_dsn, read_corpus

        assert config.team_corpus is not None
        dsn = need_dsn(database_url(db_url), f"{config.where}, without a chunks file,")
        chunks, corpus = read_corpus(dsn, config.team_corpus)
        return Inputs(chunks, load_evalset(config.evalset, chunks, config.team_corpus.describe()), corpus=corpus)
    loaded = load_chunks(config.chunks_file(command))
    try:
        return Inputs(loaded, load_evalset(config.evalset, loaded))
    except Unanchored as exc:
        raise reanchored(config, loaded, baseline, exc, config_path) from None


def reanchored(config: Config, chunks: tuple[Chunk, ...], baseline: Baseline | None, problem: Unanchored,
               config_path: str | None) -> FixtureError:
    """A label naming what the corpus no longer holds: where its text went (for an id, the text the baseline
    recorded), as a proposal."""
    recorded = recorded_gold(baseline)
    found = plan(config.evalset, chunks, recorded or {}, recorded_digests(baseline))
    why = (f"there is no baseline at {display(config.baseline)}" if baseline is None
           else f"{display(config.baseline)} records no gold texts (recorded before they were kept)")
    return anchoring_error(problem, found, recorded is not None, config_path, why)
