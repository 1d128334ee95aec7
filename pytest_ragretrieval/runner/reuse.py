"""Rankings reused from the cached run when every input of a retriever is unchanged.

A warm run whose inputs are all unchanged has nothing to recompute but the metrics: building an
index and searching 500 questions again gives the same rankings, byte for byte. So each
successful run of a retriever whose rankings are a function of its inputs (`REUSABLE`) is kept
under `<cache>/rankings/`, with the digest of everything that decides them (`key`): this
package's code, the Python and library versions, the corpus and the questions (ids and texts,
in order), the depth, the tokenizer, the embedder (its settings, and the source file of a
`python:` embedder, and for a retriever that reads vectors the embedding cache's content-named
files), the index, the database mode, and the retriever's own parameters, what its
type adds to its fingerprint and its input files' bytes, for it and every source it reads. Any
difference is a miss: the retriever runs, and its run replaces the entry.

An entry keeps each ranking as deep as any configured retriever reads it (a hybrid's or a rerank's
depth), so a retriever that runs (its own input changed, or its type is never reused) reads an
unchanged source from its entry (`source`) instead of building it: a change of the fusion alone
builds no index and starts no database.

Latency is not measured on a reused run: its per-question latencies are those the cached run
measured, and the run says so (a note in the reports, `reused` in `--rag-json`, one terminal
line). A retriever with `max_latency_ms` is never reused, so no latency item is judged on an
earlier run's numbers; `--rag-no-reuse` or `reuse_rankings = false` runs every retriever.
The folder holds a `.gitignore` of `*`: a committed cache never stands in for CI's own run.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import platform
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import msgspec

from ..config.settings import Config
from ..core.errors import RagError
from ..evalset.records import Chunk, Question
from ..files.jsontext import JSONProblem, loads
from ..files.paths import write_atomic
from ..scoring.evaluate import Run, score
from ..scoring.metrics import MetricSpec
from .execute import checked_ranking

VERSION = 2
"""Bumped when what an entry holds, or what its key covers, changes (2: `depth`, the rankings kept as deep
as a consumer reads them)."""
REUSABLE = frozenset({"vector", "bm25", "hybrid", "run"})
"""Types whose rankings follow from the key's inputs alone; a user's code, a service, a model or the
team's table may change behind them (`python`, `rerank`, `table`, `sql`), so they always run."""
LIBRARIES = ("numpy", "jieba", "rjieba", "PyStemmer", "psycopg", "pgvector", "pgserver", "msgspec")
"""Libraries whose version may change a ranking (tokens, float arithmetic, the database)."""


@cache
def code_digest() -> str:
    """This package's source, file by file: any edit to the plugin is a miss."""
    root = Path(__file__).resolve().parent.parent
    found = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        found.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return found.hexdigest()


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _file_digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _embedder_source(config: Config) -> str | None:
    """The digest of a `python:module:function` embedder's source file (None for the built-in ones)."""
    if not config.embedding.startswith("python:"):
        return None
    module = config.embedding.split(":")[1]
    local = config.root / (module.replace(".", "/") + ".py")
    if local.is_file():
        return _file_digest(local)
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    return _file_digest(Path(spec.origin)) if spec is not None and spec.origin else None


def reusable(config: Config, name: str, *, source: bool = False) -> bool:
    """Whether `name` and every source it reads are of a reusable type (vector on an exact index only),
    and no latency item asks for its latency to be measured (a source's latency is its reader's)."""
    spec = config.retriever(name)
    if spec.type not in REUSABLE or (spec.type == "vector" and config.index.kind != "exact"):
        return False
    if spec.max_latency_ms is not None and not source:
        return False
    return all(reusable(config, read, source=True) for read in spec.sources)


def measured(config: Config, name: str) -> bool:
    """Whether a latency item counts `name`'s latency: its own, or that of a retriever reading it. Its
    cached rankings then never stand in for a source (their latency is as measured then)."""
    return any(spec.max_latency_ms is not None and name in config.reading([spec.name]) for spec in config.retrievers)


def _retriever(config: Config, name: str, setup: Mapping[str, Mapping[str, Any]] | None) -> dict[str, Any]:
    spec = config.retriever(name)
    files_of = getattr(spec.module, "inputs", None)
    files: Mapping[str, Path] = files_of(spec.params, config.root) if files_of is not None else {}
    return {
        "type": spec.type, "params": dict(spec.params), "setup": None if setup is None else dict(setup.get(name, {})),
        "inputs": {key: _file_digest(path) for key, path in sorted(files.items())},
        "reads": {source: _retriever(config, source, setup) for source in spec.sources},
    }


def shared(config: Config, chunks: Sequence[Chunk], questions: Sequence[Question], database: str) -> dict[str, Any]:
    """What decides every retriever's rankings alike, computed once per run; `database` the mode the
    run resolved and the server it names (its password masked)."""
    return {
        "version": VERSION,
        "code": code_digest(),
        "python": platform.python_version(),
        "libraries": {library: _version(library) for library in LIBRARIES},
        "chunks": _digest([[c.id, c.text, c.doc, dict(c.metadata)] for c in chunks]),
        "questions": _digest([[q.id, q.query] for q in questions]),
        "depth": config.depth,
        "tokenizer": config.tokenizer,
        "embedder": [config.embedding, config.embedding_id, config.embedding_base_url, config.query_prompt,
                     config.passage_prompt, config.query_input_type, config.passage_input_type,
                     _embedder_source(config)],
        "index": config.index.fingerprint,
        "db": config.db,
        "database": database,
    }


def key(
    config: Config, name: str, common: Mapping[str, Any], setup: Mapping[str, Mapping[str, Any]] | None,
    vectors: Sequence[str] = (),
) -> str:
    """The digest of everything that decides `name`'s rankings: `common` and the retriever's own inputs;
    with `setup` None, all but what the types add to the fingerprint (checked first: it embeds nothing).
    `vectors` (the embedding cache's files, `vector_files`) counts only for a retriever that reads vectors."""
    found = {**common, "retriever": _retriever(config, name, setup)}
    if setup is not None and reads_vectors(config, name):
        found["vectors"] = list(vectors)
    return _digest(found)


def reads_vectors(config: Config, name: str) -> bool:
    """Whether `name`, or a source it reads, searches the corpus's vectors."""
    spec = config.retriever(name)
    return spec.type == "vector" or any(reads_vectors(config, source) for source in spec.sources)


def vector_files(folder: Path) -> list[str]:
    """The embedding cache's files under `folder`, by path: packs are named by the digest of their bytes,
    so vectors that differ for the same texts and model (computed on another CPU, committed by a
    colleague, edited) are a different input, and the vector search runs again."""
    root = folder / "embeddings"
    if not root.is_dir():
        return []
    return sorted(path.relative_to(root).as_posix() for path in root.rglob("*") if path.is_file())


def _digest(value: Any) -> str:
    """SHA-256 of canonical JSON (keys sorted); msgspec, as the largest value is the whole corpus."""
    return hashlib.sha256(_ENCODER.encode(value)).hexdigest()


_ENCODER = msgspec.json.Encoder(order="sorted", enc_hook=str)


def entry_path(folder: Path, name: str) -> Path:
    return folder / "rankings" / f"{hashlib.sha256(name.encode()).hexdigest()[:16]}.json"


def _entry(path: Path, name: str, inputs: str | None, wanted: Callable[[], str | None]) -> dict[str, Any] | None:
    """The cached entry of `name` when it holds `inputs` and then `wanted()` (the full key, asked only then)."""
    try:
        entry = loads(path.read_bytes())
    except (OSError, JSONProblem):
        return None
    if not isinstance(entry, dict) or entry.get("name") != name or inputs is None or entry.get("inputs") != inputs:
        return None
    if entry.get("key") != wanted():
        return None
    return entry


def read(
    path: Path, name: str, inputs: str | None, wanted: Callable[[], str | None], questions: Sequence[Question],
    specs: Sequence[MetricSpec], depth: int, known: Collection[str],
) -> Run | None:
    """The cached run of `name` when it holds `inputs` and then `wanted()` (the full key, asked only
    then), scored again; None on any miss (a missing, older, damaged or other-key entry, or rankings
    this eval set cannot take: the retriever runs)."""
    entry = _entry(path, name, inputs, wanted)
    if entry is None:
        return None
    try:
        rankings = {q.id: checked_ranking(name, q, entry["rankings"][q.id], depth, known) for q in questions}
        latencies = {q.id: float(entry["latency_ms"][q.id]) for q in questions}
        diagnostics = {str(k): float(v) for k, v in entry["diagnostics"].items()}
        notes = tuple(str(note) for note in entry["notes"])
    except (RagError, LookupError, TypeError, ValueError, AttributeError):
        return None
    return Run(result=score(name, questions, rankings, specs, latencies), diagnostics=diagnostics, notes=notes)


@dataclass(frozen=True)
class Source:
    """A source's cached rankings, as deep as its entry holds them, and their latencies, by question id."""

    depth: int
    rankings: Mapping[str, tuple[str, ...]] = field(hash=False)
    latency_ms: Mapping[str, float] = field(hash=False)


def source(
    path: Path, name: str, inputs: str | None, wanted: Callable[[], str | None], questions: Sequence[Question],
    depth: int, known: Collection[str],
) -> Source | None:
    """`name`'s cached rankings for a retriever that reads it (a fusion, a reranker), when its entry holds
    the key and every question's ranking at `depth` at least (the deepest any consumer reads it); None
    on any miss: the source is built and runs as it would without a cache."""
    entry = _entry(path, name, inputs, wanted)
    if entry is None:
        return None
    try:
        held = int(entry["depth"])
        if held < depth:
            return None
        rankings = {q.id: checked_ranking(name, q, entry["rankings"][q.id], held, known) for q in questions}
        latencies = {q.id: float(entry["latency_ms"][q.id]) for q in questions}
    except (RagError, LookupError, TypeError, ValueError):
        return None
    return Source(held, rankings, latencies)


def write(path: Path, inputs: str, wanted: str, name: str, run: Run, depth: int,
          rankings: Mapping[str, Sequence[str]]) -> None:
    """Keep a clean run's rankings and latencies under its keys; one file per retriever, replaced.
    `rankings` (by question id) are as deep as any consumer of `name` reads them (`depth`, from the
    session's store, `Workbench.stored`): a fusion-only change then reruns the fusion alone (`source`)."""
    if run.result is None or run.error is not None or run.skipped is not None:
        return
    entry = {
        "format": VERSION, "name": name, "inputs": inputs, "key": wanted, "depth": depth,
        "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "rankings": {qid: list(ranking) for qid, ranking in rankings.items()},
        "latency_ms": {q.id: q.latency_ms for q in run.result.questions},
        "diagnostics": dict(run.diagnostics), "notes": list(run.notes),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    ignore = path.parent / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# rankings of local runs: never committed, so CI runs its retrievers\n*\n",
                          encoding="utf-8")
    write_atomic(path, json.dumps(entry, ensure_ascii=False, sort_keys=True))
