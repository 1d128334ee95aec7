"""Explain a miss: for a question and a retriever, the tokens its bm25 retrievers saw (the retriever's own
tokenizer and user dictionary, and the same without the dictionary), the terms the query shares with each
gold chunk, the gold chunks' ranks in every ranking the retriever reads and a hybrid's fused scores
against the k-th's.

Rankings are computed here where that needs no database, model or service: a bm25 retriever over the
chunks file (the whole ranking, with its scores), a run file read, a hybrid fused from sources known that
way. Any other ranking (vector, rerank, python, table, sql) is the one a results file recorded, known as
deep as it was recorded. Nothing here runs a retriever that the gate would need anything else for.
Tokens come from the token cache where the run left them (read only: nothing is written), so they are
the ones its bm25 matched on; a text the cache lacks is cut here.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..cache.store import Cache
from ..config.settings import Config
from ..evalset.records import Chunk, Question
from ..files.paths import absolute, display
from ..record.explain import Explanation, Fusion, GoldTokens, Ranks, Tokens
from ..retrievers.bm25 import BM25Retriever, tokenizer_for
from ..retrievers.corpus_tokens import cached_tokens, tokenizer_id
from ..retrievers.hybrid import fuse
from ..retrievers.run import read_run
from ..retrievers.tokens import tokenizer_key


@dataclass(frozen=True)
class Recorded:
    """The rankings a run left (a `--rag-json` results file, the baseline, the live run's record):
    retriever -> question id -> ranking, and where they come from."""

    origin: str
    rankings: Mapping[str, Mapping[str, tuple[str, ...]]] = field(hash=False)

    def depth(self, name: str) -> int:
        """How deep the file keeps `name`'s rankings: the longest of them. A ranking shorter than that and
        than the config's depth is whole: the retriever returned no more."""
        return max((len(ranking) for ranking in self.rankings.get(name, {}).values()), default=0)


@dataclass(frozen=True)
class _Ranking:
    ids: tuple[str, ...]
    whole: bool
    origin: str
    scores: Mapping[str, float] | None = None


class Explainer:
    """Explanations over one corpus and config; bm25 indexes and run files are built or read once each.
    `local` False reads every ranking from `recorded` (the live run's HTML report: no index is built)."""

    def __init__(self, config: Config, chunks: Sequence[Chunk], questions: Sequence[Question],
                 recorded: Recorded | None, local: bool = True) -> None:
        self.config = config
        self.chunks = {chunk.id: chunk for chunk in chunks}
        self.ordered = tuple(chunks)
        self.question_ids = {question.id for question in questions}
        self.recorded = recorded
        self.local = local
        self._cache = Cache(config.cache_dir, "readonly")
        self._bm25: dict[str, BM25Retriever] = {}
        self._runs: dict[str, Mapping[str, list[str]]] = {}

    def explain(self, question: Question, name: str) -> Explanation:
        """`question` under the configured retriever `name` (KeyError for an unknown name)."""
        spec = self.config.retriever(name)
        gold = tuple(sorted(((cid, grade) for cid, grade in question.relevance.items() if grade >= 1),
                            key=lambda item: (-item[1], item[0])))
        wanted = [cid for cid, _ in gold]
        notes: list[str] = []
        computed: dict[str, _Ranking] = {}
        self._ranking(name, question, computed, notes)
        rankings = {reader: computed[reader] for reader in self._reading(name)}
        ranks = tuple(self._ranks(reader, rankings[reader], wanted) for reader in rankings)
        fusion = self._fusion(name, rankings, wanted) if spec.type == "hybrid" else None
        tokens = tuple(self._tokens(reader, question, wanted) for reader in rankings
                       if self.config.retriever(reader).type == "bm25")
        return Explanation(question.id, question.query, name, spec.type, self.config.k, gold, ranks, fusion, tokens,
                           tuple(notes))

    def _reading(self, name: str) -> list[str]:
        """`name`, then every retriever it reads, depth first, each once."""
        found: list[str] = []
        wanted = [name]
        while wanted:
            reader = wanted.pop(0)
            if reader not in found:
                found.append(reader)
                wanted[:0] = self.config.retriever(reader).sources
        return found

    def _ranking(self, name: str, question: Question, known: dict[str, _Ranking], notes: list[str]) -> _Ranking:
        """`name`'s ranking of `question`, its sources' first (kept in `known`)."""
        if name in known:
            return known[name]
        spec = self.config.retriever(name)
        for source in spec.sources:
            self._ranking(source, question, known, notes)
        known[name] = self._chosen(name, question, known, notes)
        return known[name]

    def _chosen(self, name: str, question: Question, known: Mapping[str, _Ranking], notes: list[str]) -> _Ranking:
        """Computed here where that can be done, else the recorded one."""
        spec = self.config.retriever(name)
        if spec.chunking:
            notes.append(f"{name} reads the chunking {spec.chunking!r}, whose chunk ids are not the gold's: "
                         "its ranks are those of the recorded ranking")
        local = self.local and not spec.chunking
        computed = self._computed(name, spec.type, spec.params, question, known) if local else None
        recorded = self.recorded.rankings.get(name, {}).get(question.id) if self.recorded is not None else None
        if computed is not None:
            if recorded is not None and self.recorded is not None and computed.ids[:len(recorded)] != recorded:
                notes.append(f"{name}: the ranking computed here differs from the one {self.recorded.origin} "
                             "recorded: an input changed since it was written; rerun the gate for fresh results")
            return computed
        if recorded is None or self.recorded is None:
            where = f"{self.recorded.origin} holds none" if self.recorded is not None else "no results file was read"
            notes.append(f"{name}: no ranking known ({where}); pass the results of a run that included it "
                         "(pytest --rag-eval --rag-json RESULTS.json)")
            return _Ranking((), False, "no ranking known")
        asked = max(self.config.depth, self.recorded.depth(name))
        return _Ranking(recorded, len(recorded) < asked, self.recorded.origin)

    def _computed(self, name: str, kind: str, params: Mapping[str, Any], question: Question,
                  known: Mapping[str, _Ranking]) -> _Ranking | None:
        if kind == "bm25":
            found = self._index(params, tokenizer_for(params, self.config.tokenizer, self.config.root)).scores(
                question.query)
            return _Ranking(tuple(cid for cid, _ in found), True, "computed here", dict(found))
        if kind == "run":
            path = absolute(self.config.root / params["path"])
            if name not in self._runs:
                self._runs[name] = read_run(path, params["format"], params.get("order"), self.question_ids,
                                            set(self.chunks))
            return _Ranking(tuple(self._runs[name].get(question.id, ())), True, display(path))
        if kind == "hybrid":
            sources = [known[source] for source in params["sources"]]
            if all(source.whole for source in sources):
                depth = int(params["depth"])
                fused = fuse([source.ids[:depth] for source in sources], int(params["rrf_k"]), params.get("weights"))
                return _Ranking(tuple(fused), True, "fused here from its sources")
        return None

    def _index(self, params: Mapping[str, Any], key: str) -> BM25Retriever:
        """A bm25 retriever of `params` over the chunks, tokenized by `key` (its own, or without its dictionary)."""
        own = (params["k1"], params["b"], params["epsilon"], params["min_score"])
        cached = repr((key, own))
        if cached not in self._bm25:
            ordered = sorted(self.ordered, key=lambda chunk: chunk.id)
            vocabulary, rows = self._rows(key, [chunk.text for chunk in ordered])
            self._bm25[cached] = BM25Retriever(ordered, lambda text: list(self._cut(key, [text])[0]), *own,
                                               tokens=(vocabulary, rows))
        return self._bm25[cached]

    def _rows(self, key: str, texts: Sequence[str]) -> tuple[list[str], list[Any]]:
        """(vocabulary, token ids per text) through the token cache, read only: the tokens the run cut, and
        texts it did not cut (or a run without a cache) cut here, nothing written."""
        namespace = self._cache.namespace("tokens", tokenizer_id(key), dtype="<i4")
        return cached_tokens(texts, key, namespace, self.config.workers)

    def _cut(self, key: str, texts: Sequence[str]) -> list[tuple[str, ...]]:
        """Each text's tokens by the tokenizer of `key`, as `_rows` finds them."""
        vocabulary, rows = self._rows(key, texts)
        return [tuple(vocabulary[i] for i in row.tolist()) for row in rows]

    def _ranks(self, name: str, ranking: _Ranking, wanted: Sequence[str]) -> Ranks:
        position = {cid: rank for rank, cid in enumerate(ranking.ids, start=1)}
        scores = ranking.scores or {}
        k = self.config.k
        kth = (ranking.ids[k - 1], scores[ranking.ids[k - 1]]) if scores and len(ranking.ids) >= k else None
        return Ranks(name, self.config.retriever(name).type, ranking.origin, len(ranking.ids), ranking.whole,
                     {cid: position.get(cid) for cid in wanted},
                     {cid: scores[cid] for cid in wanted if cid in scores}, kth)

    def _fusion(self, name: str, rankings: Mapping[str, _Ranking], wanted: Sequence[str]) -> Fusion:
        params = self.config.retriever(name).params
        sources, depth, rrf_k = list(params["sources"]), int(params["depth"]), int(params["rrf_k"])
        weights = tuple(float(w) for w in params.get("weights") or [1.0] * len(sources))
        places = [{cid: rank for rank, cid in enumerate(rankings[source].ids[:depth], start=1)} for source in sources]

        def score(cid: str) -> float:
            return sum(weight / (rrf_k + place[cid]) for weight, place in zip(weights, places, strict=True)
                       if cid in place)

        own = rankings[name].ids
        k = self.config.k
        kth = (own[k - 1], score(own[k - 1])) if len(own) >= k else None
        bounds = tuple(source for source in sources
                       if not rankings[source].whole and len(rankings[source].ids) < depth)
        return Fusion(rrf_k, depth, tuple(sources), weights, {cid: score(cid) for cid in wanted}, kth, bounds)

    def _tokens(self, name: str, question: Question, wanted: Sequence[str]) -> Tokens:
        params = self.config.retriever(name).params
        tokenizer_name = params.get("tokenizer", self.config.tokenizer)
        texts = [question.query, *(self.chunks[cid].text if cid in self.chunks else "" for cid in wanted)]
        query, *golds = self._cut(tokenizer_for(params, self.config.tokenizer, self.config.root), texts)
        label = tokenizer_name
        plain_query: tuple[str, ...] | None = None
        plains: list[tuple[str, ...] | None] = [None] * len(golds)
        plain_ranks: dict[str, int | None] | None = None
        if "user_dict" in params:
            label += f", user dictionary {params['user_dict']}"
            plain_query, *plain_golds = self._cut(tokenizer_key(tokenizer_name), texts)
            plains = list(plain_golds)
            if self.local and not self.config.retriever(name).chunking:
                ranked = [cid for cid, _ in self._index(params, tokenizer_key(tokenizer_name)).scores(question.query)]
                plain_ranks = {cid: ranked.index(cid) + 1 if cid in ranked else None for cid in wanted}
        gold = tuple(GoldTokens(cid, tokens, shared(query, tokens), plain,
                                shared(plain_query, plain) if plain_query is not None and plain is not None else None)
                     for cid, tokens, plain in zip(wanted, golds, plains, strict=True))
        return Tokens(name, label, query, gold, plain_query, plain_ranks)


def shared(query: Sequence[str], tokens: Sequence[str]) -> tuple[str, ...]:
    """The query's distinct tokens that `tokens` holds, in query order: the terms bm25 can match on."""
    present = set(tokens)
    return tuple(dict.fromkeys(token for token in query if token in present))


def recorded_rankings(origin: str, retrievers: Mapping[str, Any]) -> Recorded:
    """The rankings of a file's or a run record's retrievers (`Baseline.retrievers`, `Record.retrievers`:
    each entry's `questions[qid].ranking`)."""
    return Recorded(origin, {name: {qid: tuple(entry.ranking) for qid, entry in recorded.questions.items()}
                             for name, recorded in retrievers.items()})


def missed(config: Config, chunks: Sequence[Chunk], questions: Sequence[Question],
           recorded: Recorded) -> dict[str, dict[str, Explanation]]:
    """Each answerable question that a retriever missed (no gold chunk in its top k), explained from the
    recorded rankings alone (no index is built; tokens from the cache): the HTML's per-question view.
    Retrievers of another chunking than the default are left out: their ids are not the gold's."""
    explainer = Explainer(config, chunks, questions, recorded, local=False)
    names = [spec.name for spec in config.retrievers if spec.name in recorded.rankings and not spec.chunking]
    found: dict[str, dict[str, Explanation]] = {}
    for question in questions:
        gold = [cid for cid, grade in question.relevance.items() if grade >= 1]
        for name in names:
            ranking = recorded.rankings[name].get(question.id)
            if gold and ranking is not None and not set(gold) & set(ranking[:config.k]):
                found.setdefault(question.id, {})[name] = explainer.explain(question, name)
    return found
