"""What the baseline was recorded under, recorded with every baseline (the tutorial's pitfalls 3 and 4).

Two kinds of record. The yardstick (`k`, the metric definitions' version, the grading rules'
version) decides what a value means. Everything else describes the system under test and the
exam it sat: the tokenizer, each retriever's parameters (its sources' under `reads`), the
corpus chunk by chunk and the questions one by one, so that a change can be named, not only
noticed (`baseline.since` compares two records).

Digests are over canonical content, not file bytes: reordering lines or reformatting JSON does
not change a digest, changing a text, an id, a grade or a tag does.
"""
from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..config.settings import Config
from ..core.digest import SHORT, digest
from ..evalset.chunkers import Chunker, chunk_documents
from ..evalset.documents import Document, documents_digest, load_documents
from ..evalset.jsonl import GRADING_VERSION
from ..evalset.records import Chunk, Question, Span
from ..record.exam import exam_section, gold_digest, spans_of
from ..scoring.evaluate import chunk_spans
from ..scoring.metrics import METRICS_VERSION

ITEMIZE_LIMIT = 20_000
"""Above this many chunks the baseline records the corpus's digest and size only, not one digest per
chunk: each takes about 40 bytes of the indented file, so 20,000 are about 0.8 MB, the most a
reviewed file should carry."""
_digest = digest
"""The one digest (`core/digest.py`), by the name this module's callers know."""


def chunks_digest(chunks: Sequence[Chunk]) -> str:
    rows = [[c.id, c.text, c.doc, dict(c.metadata)] for c in sorted(chunks, key=lambda c: c.id)]
    return _digest(rows)


def evalset_digest(questions: Sequence[Question]) -> str:
    rows = [
        [q.id, q.query, dict(sorted(q.relevance.items())), sorted(q.tags), *([spans_of(q)] if q.spans else [])]
        for q in sorted(questions, key=lambda q: q.id)
    ]
    return _digest(rows)


def gold_ids(questions: Sequence[Question]) -> frozenset[str]:
    """Every chunk some question grades 1 or more (snippet matches included: they are graded 1)."""
    return frozenset(cid for question in questions for cid in question.relevant_ids)


def gold_texts(chunks: Sequence[Chunk], questions: Sequence[Question]) -> dict[str, str]:
    """Chunk id -> text of every gold chunk, in id order (the file's keys are sorted anyway)."""
    wanted = gold_ids(questions)
    return {chunk.id: chunk.text for chunk in sorted(chunks, key=lambda c: c.id) if chunk.id in wanted}


def chunk_record(chunk: Chunk) -> str:
    """One chunk's short digest: its text, document and metadata (the id is the key it is stored under)."""
    return _digest([chunk.text, chunk.doc, dict(chunk.metadata)], SHORT)


def corpus_record(chunks: Sequence[Chunk], limit: int = ITEMIZE_LIMIT) -> dict[str, Any]:
    """The corpus's digest and size and, up to `limit` chunks, each chunk's short digest."""
    found: dict[str, Any] = {"sha256": chunks_digest(chunks), "count": len(chunks)}
    if len(chunks) <= limit:
        found["digests"] = {chunk.id: chunk_record(chunk) for chunk in chunks}
    return found


def question_record(question: Question) -> dict[str, Any]:
    """What makes a question the same exam question: its query and graded gold (a short digest
    each), its tags (listed when they change, never a reason not to compare) and the chunks its
    `relevant_text` snippets matched. A question with relevant chunks keeps its grade-0 judgments
    apart, under `judged`: they move no metric but judged@k, so labels from a pool keep it comparable."""
    positive = {chunk_id: grade for chunk_id, grade in question.relevance.items() if grade > 0}
    found: dict[str, Any] = {
        "query": _digest(question.query, SHORT),
        "gold": gold_digest(question.relevance, spans_of(question)),
        "tags": sorted(question.tags),
    }
    rejected = sorted(chunk_id for chunk_id, grade in question.relevance.items() if grade == 0)
    if positive and rejected:
        found["judged"] = _digest(rejected, SHORT)
    if question.snippet_ids:
        found["snippets"] = sorted(question.snippet_ids)
    return found


def questions_record(questions: Sequence[Question], segments: Sequence[str] = ()) -> dict[str, Any]:
    """The eval set's digest, size and questions; `machine_labels` counts the judgments an LLM judge
    made (present only when there are any, so a set labelled by people records what it always did).
    `labels` and `spans` are the exam itself, each question's graded chunks (grade 0 included) and gold
    spans: the base's exam, which a later run scores both the approved and today's rankings under."""
    found: dict[str, Any] = {
        "sha256": evalset_digest(questions),
        "count": len(questions),
        "digests": {question.id: question_record(question) for question in questions},
        **exam_section(questions, segments),
    }
    machine = sum(len(question.machine_labels) for question in questions)
    if machine:
        found["machine_labels"] = machine
    return found


def yardstick(config: Config) -> dict[str, Any]:
    """What decides a value's meaning; a change here makes every recorded value incomparable. `ann_tie_epsilon`
    is recorded beside it (what `ann_recall` counted as ties, a diagnostic no recorded value depends on): its
    change is a setting loosened or tightened (review/changes.py), not a reason to stop comparing."""
    return {"k": config.k, "metrics_version": METRICS_VERSION, "grading_version": GRADING_VERSION,
            "ann_tie_epsilon": config.ann_tie_epsilon}


def fingerprint(
    config: Config, chunks: Sequence[Chunk], questions: Sequence[Question], setup: Mapping[str, Mapping[str, Any]],
    corpus: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """This run's fingerprint: the yardstick, the shared inputs and one entry per retriever set up.
    The corpus part also keeps the gold chunks' texts (`gold_texts`), the labels' provenance, which
    `labels.gold` reads back.

    `setup` is what each retriever's type adds (the embedder, the index), as the runner found it for
    the retrievers it ran and their sources (`Config.reading`): the others are not described, as
    describing a vector retriever embeds a chunk, which a run of `-k bm25` must not do;
    `corpus` the record the team's database computed for its table (database.team), which then
    stands for the chunks.
    """
    return {
        "yardstick": yardstick(config),
        "tokenizer": config.described_tokenizer(),
        "chunks": (dict(corpus) if corpus is not None
                   else {**corpus_record(chunks), "gold": gold_texts(chunks, questions), **chunking(config, chunks)}),
        "questions": questions_record(questions, config.segments),
        "retrievers": {spec.name: retriever_fingerprint(config, spec.name, setup)
                       for spec in config.retrievers if spec.name in setup},
    }


def chunking(config: Config, chunks: Sequence[Chunk] = ()) -> dict[str, Any]:
    """Documents mode: the chunker with its parameters, each named chunking's, the documents' digest
    (shared by all; read again here, so a merge of shards records what the session did) and the chunks'
    places (`PLACES`); nothing for a chunks file."""
    if config.documents is None or config.chunker is None:
        return {}
    documents = load_documents(config.documents)
    named = {"chunkings": {name: chunker.described() for name, chunker in config.chunkings.items()}}
    texts = {document.id: _digest(document.text, SHORT) for document in documents}
    places = {cid: [span.doc, span.start, span.end, texts.get(span.doc, "")]
              for cid, span in chunk_spans(chunks).items()}
    return {"chunker": config.chunker.described(),
            "documents": {"sha256": documents_digest(documents), "count": len(documents)},
            **(named if config.chunkings else {}), **({PLACES: places} if places else {})}


PLACES = "places"
"""Format 5, documents mode: chunk id -> [doc, start, end, the document's short digest], for every chunk of a
recorded or approved ranking (`placed`): where the bar's chunks were, so a later chunking can be judged
against them (the chunk-size issue)."""


def recorded_places(fingerprint: Mapping[str, Any]) -> dict[str, tuple[Span, str]]:
    """Chunk id -> (its recorded place, its document's short digest) as a fingerprint keeps them; entries of
    another shape are left out (the schema refuses them in a baseline)."""
    chunks = fingerprint.get("chunks")
    places = chunks.get(PLACES) if isinstance(chunks, Mapping) else None
    if not isinstance(places, Mapping):
        return {}
    found = {}
    for cid, place in places.items():
        if (isinstance(place, Sequence) and len(place) == 4 and isinstance(place[0], str)
                and all(isinstance(n, int) and not isinstance(n, bool) for n in place[1:3])
                and isinstance(place[3], str)):
            found[cid] = (Span(place[0], place[1], place[2]), place[3])
    return found


def recut(fingerprint: Mapping[str, Any], documents: Sequence[Document], root: Path) -> dict[str, Any] | None:
    """A fingerprint that keeps no places (format 4), given them by cutting its documents again with the chunker
    it records, when they are today's documents and it is a built-in one this version cuts alike (its
    description round-trips); None where the places cannot be had that way. A `python` chunker's code is gone."""
    chunks = fingerprint.get("chunks")
    if not isinstance(chunks, Mapping) or PLACES in chunks or not isinstance(chunks.get("chunker"), Mapping):
        return None
    recorded = dict(chunks["chunker"])
    if chunks.get("chunkings") or recorded.get("type") == "python" or chunks.get("documents", {}).get(
            "sha256") != documents_digest(documents):
        return None
    known = {name for name in Chunker.__dataclass_fields__ if name != "timeout"}
    try:
        chunker = Chunker(**{key: value for key, value in recorded.items() if key in known})
    except TypeError:
        return None
    if chunker.described() != recorded:
        return None
    texts = {document.id: _digest(document.text, SHORT) for document in documents}
    places = {cid: [span.doc, span.start, span.end, texts[span.doc]]
              for cid, span in chunk_spans(chunk_documents(documents, chunker, root)).items()}
    return {**fingerprint, "chunks": {**chunks, PLACES: places}}


def placed(fingerprint: Mapping[str, Any], ranked: Collection[str]) -> dict[str, Any]:
    """`fingerprint` with only the places of the chunks `ranked` (those a record's rankings hold)."""
    chunks = fingerprint.get("chunks")
    if not isinstance(chunks, Mapping) or not isinstance(chunks.get(PLACES), Mapping):
        return dict(fingerprint)
    kept = {cid: place for cid, place in chunks[PLACES].items() if cid in ranked}
    section = {key: value for key, value in chunks.items() if key != PLACES}
    return {**fingerprint, "chunks": {**section, **({PLACES: kept} if kept else {})}}


def retriever_fingerprint(config: Config, name: str, setup: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Own parameters, what the type adds (embedder, index) and, under `reads`, every source's."""
    spec = config.retriever(name)
    found = {**spec.fingerprint, **setup[name]}
    if spec.sources:
        found["reads"] = {source: retriever_fingerprint(config, source, setup) for source in spec.sources}
    return found
