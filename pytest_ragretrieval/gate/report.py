"""What the reports show beside the run record: the run's descriptions (embedder, database, rerankers),
the run header and the notes every report repeats (a small eval set, too few comparable questions). The
record itself is `gate/record.py`'s; `report/view.py` makes the reports' input."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from ..bar.clusters import Clustering, floor, floor_text
from ..baseline.exams import EXAM_NAMES, TODAY
from ..baseline.fingerprint import gold_texts, questions_record
from ..baseline.format import Baseline
from ..baseline.since import QuestionChanges, chunker_changes, question_changes
from ..baseline.verify import reproduced
from ..config.settings import Config
from ..evalset.records import Chunk, Question
from ..files.paths import display
from ..labels.gold import edited_gold, recorded_gold, review_line
from ..record.report import Described
from ..retrievers.tokens import mostly_cjk
from ..scoring.evaluate import Run


def described(config: Config, runs: Mapping[str, Run], embedder: str, database: str) -> Described:
    """The run's descriptions beside its record: the embedder, the database, and the configured rerankers
    (those whose retriever could not run here named apart)."""
    found = [(spec.name, model) for spec in config.retrievers
             if (model := spec.module.details(spec.params).get("reranker")) is not None]
    skipped = [model for name, model in found if name in runs and runs[name].skipped is not None]
    return Described(embedder, database, tuple(model for _, model in found), tuple(skipped))


def _reads_the_tokenizer(config: Config) -> bool:
    """Whether a configured retriever tokenizes the corpus with the config's `tokenizer` (bm25 without its own)."""
    return any(hasattr(spec.module, "corpus_tokenizers") and "tokenizer" not in spec.params
               for spec in config.retrievers)


def tolerance_clause(config: Config) -> str:
    """`it exceeds the tolerance (0.02) and `, per metric where they differ, for the header's line on the
    test: a drop within the tolerance passes whatever its p. Nothing when every tolerance is 0."""
    tolerances = {spec.label: config.tolerance.for_metric(spec) for spec in config.metrics}
    if not any(tolerances.values()):
        return ""
    if len(set(tolerances.values())) == 1:
        shown = f"{next(iter(tolerances.values())):g}"
    else:
        shown = ", ".join(f"{label} {value:g}" for label, value in tolerances.items())
    return f"it exceeds the tolerance ({shown}) and "


def header_lines(config: Config, chunks: Sequence[Chunk], questions: Sequence[Question], baseline: Baseline | None,
                 update: bool) -> list[str]:
    """The run header: what was loaded, the baseline, and the warnings every report repeats."""
    answerable = sum(1 for q in questions if q.answerable)
    from_table = f" (the team's {config.team_corpus.describe()})" if config.team_corpus is not None else ""
    if config.chunkings:
        from_table = f" in {len(config.chunkings) + 1} chunkings (default, {', '.join(config.chunkings)})"
    lines = [
        f"rag: config {config.where}",
        f"rag: {len(chunks)} chunks{from_table}, {len(questions)} questions "
        f"({answerable} answerable, {len(questions) - answerable} no-answer), "
        f"k={config.k}, metrics {', '.join(s.label for s in config.metrics)}",
    ]
    if baseline is None:
        lines.append(f"rag: no baseline yet at {display(config.baseline)}")
    else:
        lines.append(f"rag: baseline {display(config.baseline)}")
    empty = sum(1 for chunk in chunks if not chunk.text.strip())
    if empty:
        team = config.team_corpus
        where = (f"the team's {team.describe()}" if team is not None
                 else f"the chunks of {display(config.documents)}" if config.documents is not None
                 else display(config.chunks_file("the header")))
        lines.append(
            f"rag: warning: {empty} chunk{'s' if empty != 1 else ''} in {where} "
            f"{'have' if empty != 1 else 'has'} an empty text; ranked and scored like any other"
        )
    if baseline is None and not config.tokenizer_set and _reads_the_tokenizer(config) and \
            not mostly_cjk([chunk.text for chunk in chunks]):
        lines.append('rag: note: `tokenizer` is unset, so BM25 cuts this mostly non-CJK corpus with jieba (the Chinese '
                     'tokenizer): set tokenizer = "english" in the config for English text')
    if update:
        lines.append("rag: recording a new baseline (--rag-update-baseline)")
    if config.significance != "none":
        lines.append(f"rag: a drop fails only when {tolerance_clause(config)}a paired {config.significance} test "
                     f"gives p < {config.alpha:g}")
    lines += cluster_lines(config, questions)
    notes = small_set_notes(config, questions)
    if baseline is not None:
        notes += comparable_notes(config, questions, baseline_questions(baseline, config, questions))
        review = review_line(edited_gold(recorded_gold(baseline), gold_texts(chunks, questions), questions))
        notes += [review] if review and not chunker_changed(config, baseline) else []
    return lines + [f"rag: warning: {note}" for note in notes]


def cluster_lines(config: Config, questions: Sequence[Question]) -> list[str]:
    """Once, where questions share clusters (`bar/clusters.py`): how many clusters the answerable questions
    fall in, where they came from, and the smallest p they allow; in significance mode, when that is not
    below alpha, that every item is judged by the tolerance alone. Nothing where each question is its own."""
    clustering = Clustering.of(questions, EXAM_NAMES[TODAY])
    ids = [question.id for question in questions if question.answerable]
    if not clustering.clustered(ids):
        return []
    count = clustering.count(ids)
    line = (f"rag: clusters: the {len(ids)} answerable questions fall in {clustering.described(ids)}; tests flip "
            f"and resample whole clusters, so no p falls below {floor_text(count)}")
    if config.significance != "none" and floor(count) >= config.alpha:
        line += (f", not below alpha {config.alpha:g}: no item can reach it, so a drop beyond the tolerance fails "
                 'by the tolerance alone (as significance = "none")')
    return [line]


def chunker_changed(config: Config, baseline: Baseline) -> bool:
    """Whether the chunker changed since the baseline (documents mode on both sides): every gold chunk then
    moves with the chunks, and the gold spans are what the verdicts read (`bar/places.py`)."""
    if config.chunker is None:
        return False
    named = {"chunkings": {name: c.described() for name, c in config.chunkings.items()}} if config.chunkings else {}
    return bool(chunker_changes(baseline.fingerprint, {"chunks": {"chunker": config.chunker.described(), **named}}))


def small_set_notes(config: Config, questions: Sequence[Question]) -> list[str]:
    """Warnings every report repeats: today, an eval set too small for its verdicts."""
    answerable = sum(1 for q in questions if q.answerable)
    if answerable >= config.min_questions:
        return []
    return [
        f"the eval set has {answerable} answerable questions, fewer than min_questions = "
        f"{config.min_questions}: a single question can move a mean by up to {1 / answerable:.2f}, "
        "too little data for a verdict to mean much"
    ]


def baseline_questions(baseline: Baseline, config: Config, questions: Sequence[Question]) -> QuestionChanges:
    """Which of today's questions the baseline can be compared on; known before anything runs. A
    baseline that does not itemize its questions (format 1) is compared on those whose recorded values
    today's gold reproduces."""
    recorded = baseline.fingerprint.get("questions", {})
    today = questions_record(questions)
    if "digests" in recorded or recorded.get("sha256") == today["sha256"]:
        return question_changes(recorded, today, None)
    found = question_changes(recorded, today, None, reproduced(baseline, config.k, questions),
                             "on those whose recorded values today's graded gold reproduces")
    held = {qid for entry in baseline.retrievers.values() for qid in entry.questions}
    ids = {question.id for question in questions}
    edited = tuple((qid, "its recorded values do not follow from today's graded gold")
                   for qid in sorted(held & ids - found.comparable))
    return replace(found, added=tuple(sorted(ids - held)), removed=tuple(sorted(held - ids)), edited=edited)


def comparable_notes(config: Config, questions: Sequence[Question], changes: QuestionChanges | None) -> list[str]:
    """When the questions changed: too few comparable answerable questions for a verdict, as for a small set."""
    if changes is None or not changes.changed:
        return []
    shared = sum(1 for q in questions if q.answerable and q.id in changes.comparable)
    if shared >= config.min_questions:
        return []
    return [
        f"only {shared} answerable questions are comparable with the baseline, fewer than min_questions = "
        f"{config.min_questions}: too little data for a verdict to mean much"
    ]


def lowest_ann_recall(name: str, config: Config, runs: Mapping[str, Run]) -> float | None:
    """The lowest `ann_recall@k` measured for `name` and the retrievers it reads (the config refuses
    cycles); None where none was measured: a drop the index lost is named as such."""
    sources = {spec.name: spec.sources for spec in config.retrievers}
    names, found = [name], list[float]()
    while names:
        current = names.pop()
        run = runs.get(current)
        if run is not None:
            found += [value for label, value in run.diagnostics.items() if label.startswith("ann_recall@")]
        names += sources.get(current, ())
    return min(found) if found else None
