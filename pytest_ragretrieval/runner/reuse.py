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

A retriever of a type whose ranking of a question is a function of that question alone (`PER_QUESTION`:
a vector search, BM25, whose IDF is the corpus's, and a fusion of such sources, question by question)
is reused question by question when every input but the eval set is unchanged (`partial`: the entry's
`partial` key, everything above but the questions): the rankings of the questions whose id and text
(and tags) are unchanged come from the entry, and only the added or edited questions are searched. A
`run` retriever is not (its notes name the questions its file lacks, over the whole set).

A vector retriever on an exact index whose every input but the corpus, the eval set and the embedding
cache's files is unchanged (`narrowed`: the entry's side file, `*.vectors.json`, with the digest of each
chunk's and each question's vector) searches from its cached rankings after a corpus edit: a question
whose cached ranking holds no changed or removed chunk is ranked among it and the changed chunks
(`retrievers/candidates.py`), the others in full; the rankings are those of a full search, byte for byte.

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
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from ..config.settings import Config
from ..core.errors import RagError
from ..evalset.records import Chunk, Question, Span
from ..files.jsonshape import Node, ShapeProblem
from ..files.jsontext import JSONProblem, loads
from ..files.paths import Unreadable, write_atomic
from ..record.run import MAX_DEPTH, RetrieverRun, decode, document, read_bytes, scored
from ..scoring.evaluate import Run
from ..scoring.metrics import MetricSpec
from .execute import checked_ranking

if TYPE_CHECKING:
    from ..retrievers.candidates import Earlier

VERSION = 4
"""Bumped when what an entry holds, or what its key covers, changes (2: `depth`, the rankings kept as deep
as a consumer reads them; 3: the run written by the one run codec, record/run.py; 4: the keys without the
questions and each question's digest, for reuse question by question)."""
REUSABLE = frozenset({"vector", "bm25", "hybrid", "run"})
"""Types whose rankings follow from the key's inputs alone; a user's code, a service, a model or the
team's table may change behind them (`python`, `rerank`, `table`, `sql`), so they always run."""
PER_QUESTION = frozenset({"vector", "bm25", "hybrid"})
"""Reusable types whose ranking of one question depends on no other question (nor do their diagnostics and
notes, on an exact index): a run of the added or edited questions alone completes the cached run."""
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


def per_question(config: Config, name: str) -> bool:
    """Whether `name` and every source it reads may be reused question by question (`PER_QUESTION`)."""
    spec = config.retriever(name)
    return spec.type in PER_QUESTION and all(per_question(config, read) for read in spec.sources)


def asked_digest(question: Question) -> str:
    """What a retriever sees of one question (id, text and tags), as a digest kept in the entry."""
    return _digest([question.id, question.query, list(question.tags)])


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


def shared(
    config: Config, chunks: Sequence[Chunk], questions: Sequence[Question] | None, database: str,
) -> dict[str, Any]:
    """What decides every retriever's rankings alike, computed once per run; `database` the mode the
    run resolved and the server it names (its password masked); `questions` None leaves them out (the
    `partial` key, for reuse question by question); the `narrowed` key leaves out the chunks too."""
    found = {
        "version": VERSION,
        "code": code_digest(),
        "python": platform.python_version(),
        "libraries": {library: _version(library) for library in LIBRARIES},
        "chunks": _digest([[c.id, c.text, c.doc, dict(c.metadata)] for c in chunks]),
        "questions": _digest([[q.id, q.query] for q in questions or ()]),
        "depth": config.depth,
        "tokenizer": config.tokenizer,
        "embedder": [config.embedding, config.embedding_id, config.embedding_base_url, config.query_prompt,
                     config.passage_prompt, config.query_input_type, config.passage_input_type,
                     _embedder_source(config)],
        "index": config.index.fingerprint,
        "db": config.db,
        "database": database,
    }
    if questions is None:
        del found["questions"]
    return found


def key(
    config: Config, name: str, common: Mapping[str, Any], setup: Mapping[str, Mapping[str, Any]] | None,
    vectors: Sequence[str] | None = (),
) -> str:
    """The digest of everything that decides `name`'s rankings: `common` and the retriever's own inputs;
    with `setup` None, all but what the types add to the fingerprint (checked first: it embeds nothing).
    `vectors` (the embedding cache's files, `vector_files`) counts only for a retriever that reads vectors;
    None leaves them out (the `narrowed` key: the vectors' own digests stand in for them)."""
    found = {**common, "retriever": _retriever(config, name, setup)}
    if setup is not None and vectors is not None and reads_vectors(config, name):
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


def _entry(path: Path, name: str, inputs: str | None, wanted: Callable[[], str | None],
           questions: Sequence[Question]) -> RetrieverRun | None:
    """The cached run of `name` when its entry holds `inputs` and then `wanted()` (the full key, asked only
    then) and a ranking for each of `questions`; None on any miss: a missing, older, damaged or
    oversized entry, or one of another key (the codec's limits: record/run.py)."""
    try:
        root = Node(loads(read_bytes(path)))
        if root.mapping().get("format") != VERSION or root["name"].value != name or inputs is None:
            return None
        if root["inputs"].value != inputs or root["key"].value != wanted():
            return None
        ran = decode(root["run"], root["depth"].integer(1, MAX_DEPTH), root["key"].text())
    except (Unreadable, JSONProblem, ShapeProblem):
        return None
    return ran if all(q.id in ran.rankings for q in questions) else None


def read(
    path: Path, name: str, inputs: str | None, wanted: Callable[[], str | None], questions: Sequence[Question],
    specs: Sequence[MetricSpec], depth: int, known: Collection[str], spans: Mapping[str, Span] | None = None,
) -> Run | None:
    """The cached run of `name` when it holds `inputs` and then `wanted()` (the full key, asked only
    then), scored again; None on any miss (a missing, older, damaged or other-key entry, or rankings
    this eval set cannot take: the retriever runs)."""
    ran = _entry(path, name, inputs, wanted, questions)
    if ran is None:
        return None
    try:
        rankings = {q.id: checked_ranking(name, q, ran.rankings[q.id], depth, known) for q in questions}
    except RagError:
        return None
    return scored(name, msgspec.structs.replace(ran, depth=depth, rankings=rankings), questions, specs, spans)


def source(
    path: Path, name: str, inputs: str | None, wanted: Callable[[], str | None], questions: Sequence[Question],
    depth: int, known: Collection[str],
) -> RetrieverRun | None:
    """`name`'s cached run for a retriever that reads it (a fusion, a reranker), when its entry holds the
    key and every question's ranking at `depth` at least (the deepest any consumer reads it), as deep as
    the entry holds them; None on any miss: the source is built and runs as it would without a cache."""
    ran = _entry(path, name, inputs, wanted, questions)
    if ran is None or ran.depth < depth:
        return None
    try:
        rankings = {q.id: checked_ranking(name, q, ran.rankings[q.id], ran.depth, known) for q in questions}
    except RagError:
        return None
    return msgspec.structs.replace(ran, rankings=rankings)


def partial(
    path: Path, name: str, inputs: str | None, wanted: Callable[[], str | None], questions: Sequence[Question],
    depth: int, known: Collection[str],
) -> RetrieverRun | None:
    """The rankings (and latency) of those of `questions` whose id, text and tags are unchanged since
    `name`'s cached run, when its entry's keys without the questions are `inputs` and then `wanted()` and
    it holds them at `depth` at least; None when it holds none of them, or on any miss."""
    try:
        root = Node(loads(read_bytes(path)))
        if root.mapping().get("format") != VERSION or root["name"].value != name or inputs is None:
            return None
        if root["partial_inputs"].value != inputs or root["partial"].value != wanted():
            return None
        asked = root["asked"].mapping()
        ran = decode(root["run"], root["depth"].integer(1, MAX_DEPTH), root["key"].text())
    except (Unreadable, JSONProblem, ShapeProblem):
        return None
    same = [q for q in questions if q.id in ran.rankings and asked.get(q.id) == asked_digest(q)]
    if not same or ran.depth < depth:
        return None
    try:
        rankings = {q.id: checked_ranking(name, q, ran.rankings[q.id], ran.depth, known) for q in same}
    except RagError:
        return None
    return msgspec.structs.replace(
        ran, rankings=rankings, latency_ms={q.id: ran.latency_ms[q.id] for q in same if q.id in ran.latency_ms})


def write(path: Path, inputs: str, wanted: str, name: str, run: Run, depth: int,
          rankings: Mapping[str, Sequence[str]], partial: tuple[str, str] | None = None,
          questions: Sequence[Question] = ()) -> None:
    """Keep a clean run's rankings and latencies under its keys; one file per retriever, replaced.
    `rankings` (by question id) are as deep as any consumer of `name` reads them (`depth`, from the
    session's store, `Workbench.stored`): a fusion-only change then reruns the fusion alone (`source`).
    `partial`: the keys without the questions, with `questions`' digests, for reuse question by question."""
    if run.result is None or run.error is not None or run.skipped is not None:
        return
    ran = RetrieverRun(depth, {qid: tuple(ranking) for qid, ranking in rankings.items()},
                       {q.id: q.latency_ms for q in run.result.questions}, run.diagnostics, run.notes, wanted)
    entry = {
        "format": VERSION, "name": name, "inputs": inputs, "key": wanted, "depth": depth,
        "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "run": document(ran),
    }
    if partial is not None:
        entry.update(partial_inputs=partial[0], partial=partial[1], asked={q.id: asked_digest(q) for q in questions})
    path.parent.mkdir(parents=True, exist_ok=True)
    vectors_path(path).unlink(missing_ok=True)  # it described the run this one replaces
    ignore = path.parent / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# rankings of local runs: never committed, so CI runs its retrievers\n*\n",
                          encoding="utf-8")
    write_atomic(path, json.dumps(entry, ensure_ascii=False, sort_keys=True))


def vectors_path(path: Path) -> Path:
    """The side file of the entry at `path`: its vectors' digests (`narrowed`), read only after a corpus edit."""
    return path.with_suffix(".vectors.json")


def keep_vectors(path: Path, inputs: str, wanted: str, chunks: Mapping[str, str], questions: Mapping[str, str]) -> None:
    """Keep, beside the entry at `path` (written under the key `wanted`), the digests of the vectors its run
    searched with: each chunk's and each question's, by id, under the key without the corpus, the questions
    and the embedding cache's files (`inputs`)."""
    write_atomic(vectors_path(path), json.dumps({"format": VERSION, "inputs": inputs, "key": wanted,
                                                  "chunks": chunks, "questions": questions}, sort_keys=True))


def _digests(node: Node) -> dict[str, str]:
    found = node.mapping()
    if not all(isinstance(value, str) for value in found.values()):
        raise node.problem("must map ids to digests")
    return found


def narrowed(path: Path, name: str, inputs: str | None, depth: int) -> Earlier | None:
    """The cached rankings of `name` by the digest of each question's vector, and its chunks' digests,
    when the side file holds `inputs` and the entry's rankings are `depth` deep; None on any miss."""
    from ..retrievers.candidates import Earlier

    if inputs is None:
        return None
    try:
        side = Node(loads(read_bytes(vectors_path(path))))
        if side.mapping().get("format") != VERSION or side["inputs"].value != inputs:
            return None
        chunks, questions = _digests(side["chunks"]), _digests(side["questions"])
        root = Node(loads(read_bytes(path)))
        if root.mapping().get("format") != VERSION or root["name"].value != name:
            return None
        if root["key"].value != side["key"].value:
            return None
        ran = decode(root["run"], root["depth"].integer(1, MAX_DEPTH), root["key"].text())
    except (Unreadable, JSONProblem, ShapeProblem):
        return None
    if ran.depth != depth:
        return None
    rankings = {questions[qid]: ranking for qid, ranking in ran.rankings.items() if qid in questions}
    return Earlier(depth, rankings, chunks)
